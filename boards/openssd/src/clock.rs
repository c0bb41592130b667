//! The board clock: a free-running hardware counter turned into
//! nanoseconds since start-up.

use firmware::hal::Clock;

/// A free-running counter.
pub trait Ticks {
    /// The counter now.
    fn ticks(&mut self) -> u64;
    /// Its frequency in Hz (nonzero).
    fn hz(&self) -> u64;
}

/// `ticks` of a `hz` counter in nanoseconds (saturating).
pub const fn ticks_to_ns(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    let ns = ticks as u128 * 1_000_000_000 / hz as u128;
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// [`Clock`] over a [`Ticks`] counter, zero at construction.
///
/// `Clock::now_ns` takes `&self` while reading an MMIO counter takes
/// `&mut`, so the counter sits in a `RefCell`.
#[derive(Debug)]
pub struct TickClock<T> {
    counter: core::cell::RefCell<T>,
    start: u64,
    hz: u64,
}

impl<T: Ticks> TickClock<T> {
    /// Starts the clock on `counter`.
    pub fn new(mut counter: T) -> Self {
        let start = counter.ticks();
        let hz = counter.hz().max(1);
        Self {
            counter: core::cell::RefCell::new(counter),
            start,
            hz,
        }
    }
}

impl<T: Ticks> Clock for TickClock<T> {
    fn now_ns(&self) -> u64 {
        let now = self.counter.borrow_mut().ticks();
        ticks_to_ns(now.wrapping_sub(self.start), self.hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Stepping(u64);
    impl Ticks for Stepping {
        fn ticks(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(1_000);
            self.0
        }
        fn hz(&self) -> u64 {
            33_333_000
        }
    }

    #[test]
    fn ticks_convert_without_overflow() {
        assert_eq!(ticks_to_ns(33_333_000, 33_333_000), 1_000_000_000);
        assert_eq!(ticks_to_ns(1, 333_333_333), 3);
        assert_eq!(ticks_to_ns(u64::MAX, 1), u64::MAX);
        assert_eq!(ticks_to_ns(5, 0), 0);
    }

    #[test]
    fn the_clock_counts_from_its_start() {
        let c = TickClock::new(Stepping(u64::MAX - 500));
        // 1000 ticks after start (wrapping) at 33.333 MHz.
        assert_eq!(c.now_ns(), 30_000);
        assert_eq!(c.now_ns(), 60_000);
    }
}
