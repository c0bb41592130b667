//! Virtual time: the board's shared clock and the busy-until bookkeeping of
//! a modelled resource that serves in arrival order (the PCIe link, the
//! engine; the flash has its own event model, `nand::schedule`).
//!
//! Everything in this crate is discrete-event virtual time in nanoseconds;
//! nothing here reads the wall clock. An operation on a resource starts at
//! `max(earliest, free_at)` and keeps the resource until its end; the
//! resource sums its busy time for [`firmware::hal::TimeBreakdown`].

/// The board's virtual clock: nanoseconds since power-on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VirtualClock {
    now_ns: u64,
}

impl VirtualClock {
    /// A clock at time zero.
    pub const fn new() -> Self {
        Self { now_ns: 0 }
    }

    /// Current virtual time.
    pub const fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Moves time forward to `t` (never backwards).
    pub fn advance_to(&mut self, t: u64) {
        self.now_ns = self.now_ns.max(t);
    }
}

/// One modelled resource that serves one operation at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resource {
    free_at: u64,
    busy_ns: u64,
}

impl Resource {
    /// Reserves the resource for `duration` ns, starting no earlier than
    /// `earliest`; returns `(start, end)`.
    pub fn reserve(&mut self, earliest: u64, duration: u64) -> (u64, u64) {
        let start = earliest.max(self.free_at);
        let end = start + duration;
        self.free_at = end;
        self.busy_ns += duration;
        (start, end)
    }

    /// When the resource is next free.
    pub const fn free_at(&self) -> u64 {
        self.free_at
    }

    /// Sum of reserved durations.
    pub const fn busy_ns(&self) -> u64 {
        self.busy_ns
    }
}

/// `ceil(bytes · 1e9 / bytes_per_s)`: nanoseconds to move `bytes` at a rate.
pub fn transfer_ns(bytes: u64, bytes_per_s: u64) -> u64 {
    if bytes_per_s == 0 {
        return 0;
    }
    let ns = u128::from(bytes) * 1_000_000_000;
    ns.div_ceil(u128::from(bytes_per_s)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_serializes_and_counts_busy() {
        let mut r = Resource::default();
        assert_eq!(r.reserve(10, 5), (10, 15));
        assert_eq!(r.reserve(12, 5), (15, 20));
        assert_eq!(r.reserve(100, 1), (100, 101));
        assert_eq!(r.busy_ns(), 11);
        assert_eq!(r.free_at(), 101);
    }

    #[test]
    fn clock_never_goes_back() {
        let mut c = VirtualClock::new();
        c.advance_to(50);
        c.advance_to(20);
        assert_eq!(c.now_ns(), 50);
    }

    #[test]
    fn transfer_time_rounds_up() {
        assert_eq!(transfer_ns(1_400, 1_400_000_000), 1_000);
        assert_eq!(transfer_ns(1, 3_000_000_000), 1);
        assert_eq!(transfer_ns(5, 0), 0);
    }
}
