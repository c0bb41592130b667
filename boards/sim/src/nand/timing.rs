//! NAND timing: the parameters ([`NandTiming`]) and the per-die / per-channel
//! scheduler ([`NandTimer`]).
//!
//! Discrete-event rules (a die is one (channel, way) pair; its commands run
//! in the order they were queued, each channel has one shared bus):
//! - **read**: the die's array works for tR from `max(now, die free)`; the
//!   page then crosses the channel bus for `cmd_overhead + kept_bytes / bus
//!   rate` in the first idle bus gap after the array is done. The die stays
//!   held until its data register has been emptied (no cache read — model
//!   choice).
//! - **program**: the page crosses the bus (`cmd_overhead + page / bus
//!   rate`) once the die is free, then the die programs for tPROG.
//! - **erase**: the die is busy for tBERS (the command bytes are neglected).

use crate::clock::{Resource, Timeline, transfer_ns};

/// Timing parameters of the flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandTiming {
    /// Array read time tR in ns.
    pub t_read_ns: u64,
    /// Page program time tPROG in ns.
    pub t_prog_ns: u64,
    /// Block erase time tBERS in ns.
    pub t_erase_ns: u64,
    /// Bus rate of one channel in bytes/s. Default 1.4 GB/s: the per-channel
    /// bandwidth of InstInfer's emulated CSD (8 channels × 1.4 GB/s).
    pub bus_bytes_per_s: u64,
    /// Command/address cycles of one bus transfer in ns. Model choice: 200 ns.
    pub cmd_overhead_ns: u64,
    /// Commands one die's controller queue holds. Model choice: 2 — one in
    /// the array, one waiting, which keeps every die busy. This model books
    /// a read's bus slot when the read is queued (a real controller
    /// arbitrates the bus when the data is ready), so a deeper queue only
    /// fixes an earlier, gappier transfer order: measured with 40 heads of
    /// d = 128 on 8 channels × 8 ways (`instinfer bench paper --figure
    /// channels`), depth 16 gives 57% of the channels' bandwidth at 1024
    /// tokens, depth 2 gives 82%.
    pub queue_depth: usize,
}

impl NandTiming {
    /// Defaults for `page_size`:
    /// - 4 KiB pages: tR 36 µs, tPROG 185 µs (NVMeVirt's Samsung 970 PRO
    ///   model), tBERS 3.8 ms (MQSim default);
    /// - other sizes (16 KiB): tR 75 µs, tPROG 750 µs, tBERS 3.8 ms (MQSim's
    ///   MLC defaults).
    pub const fn for_page_size(page_size: u32) -> Self {
        let (t_read_ns, t_prog_ns) = if page_size <= 4096 {
            (36_000, 185_000)
        } else {
            (75_000, 750_000)
        };
        Self {
            t_read_ns,
            t_prog_ns,
            t_erase_ns: 3_800_000,
            bus_bytes_per_s: 1_400_000_000,
            cmd_overhead_ns: 200,
            queue_depth: 2,
        }
    }

    /// Bus time of one transfer of `bytes`.
    pub fn bus_ns(&self, bytes: usize) -> u64 {
        self.cmd_overhead_ns + transfer_ns(bytes as u64, self.bus_bytes_per_s)
    }
}

/// The dies and channel buses of the flash, in virtual time.
#[derive(Clone, Debug)]
pub struct NandTimer {
    timing: NandTiming,
    channels: usize,
    /// Indexed by `way * channels + channel` (`ftl::Geometry::die_index`).
    dies: Vec<Resource>,
    buses: Vec<Timeline>,
}

impl NandTimer {
    /// `channels × ways` idle dies.
    pub fn new(timing: NandTiming, channels: usize, ways: usize) -> Self {
        Self {
            timing,
            channels,
            dies: vec![Resource::default(); channels * ways],
            buses: vec![Timeline::default(); channels],
        }
    }

    /// The parameters.
    pub fn timing(&self) -> &NandTiming {
        &self.timing
    }

    /// Schedules a read handing `kept_bytes` over the bus; returns its end.
    pub fn read(&mut self, now: u64, channel: usize, way: usize, kept_bytes: usize) -> u64 {
        let t = self.timing;
        let die = &mut self.dies[way * self.channels + channel];
        let (_, array_done) = die.reserve(now, t.t_read_ns);
        let bus = &mut self.buses[channel];
        bus.prune(now);
        let (_, end) = bus.reserve(array_done, t.bus_ns(kept_bytes));
        die.hold_until(end);
        end
    }

    /// Schedules a program of `page_bytes`; returns its end.
    pub fn program(&mut self, now: u64, channel: usize, way: usize, page_bytes: usize) -> u64 {
        let t = self.timing;
        let die = &mut self.dies[way * self.channels + channel];
        let bus = &mut self.buses[channel];
        bus.prune(now);
        let (_, sent) = bus.reserve(now.max(die.free_at()), t.bus_ns(page_bytes));
        die.reserve(sent, t.t_prog_ns).1
    }

    /// Schedules a block erase; returns its end.
    pub fn erase(&mut self, now: u64, channel: usize, way: usize) -> u64 {
        self.dies[way * self.channels + channel]
            .reserve(now, self.timing.t_erase_ns)
            .1
    }

    /// Sum over dies of array busy time.
    pub fn array_busy_ns(&self) -> u64 {
        self.dies.iter().map(Resource::busy_ns).sum()
    }

    /// Sum over channels of bus busy time.
    pub fn bus_busy_ns(&self) -> u64 {
        self.buses.iter().map(Timeline::busy_ns).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer() -> NandTimer {
        NandTimer::new(NandTiming::for_page_size(4096), 8, 4)
    }

    #[test]
    fn defaults_follow_the_sources() {
        let t4 = NandTiming::for_page_size(4096);
        assert_eq!(
            (t4.t_read_ns, t4.t_prog_ns, t4.t_erase_ns),
            (36_000, 185_000, 3_800_000)
        );
        let t16 = NandTiming::for_page_size(16384);
        assert_eq!(
            (t16.t_read_ns, t16.t_prog_ns, t16.t_erase_ns),
            (75_000, 750_000, 3_800_000)
        );
        // 4 KiB over a 1.4 GB/s bus: 2.926 µs + 0.2 µs.
        assert_eq!(t4.bus_ns(4096), 200 + 2_926);
    }

    #[test]
    fn different_channels_overlap_same_die_serializes() {
        let t = NandTiming::for_page_size(4096);
        let one = t.t_read_ns + t.bus_ns(4096);
        let mut a = timer();
        assert_eq!(a.read(0, 0, 0, 4096), one);
        assert_eq!(
            a.read(0, 1, 0, 4096),
            one,
            "another channel runs in parallel"
        );
        let mut b = timer();
        b.read(0, 0, 0, 4096);
        assert_eq!(b.read(0, 0, 0, 4096), 2 * one, "same die serializes");
    }

    #[test]
    fn same_channel_other_die_shares_only_the_bus() {
        let t = NandTiming::for_page_size(4096);
        let mut a = timer();
        let first = a.read(0, 0, 0, 4096);
        let second = a.read(0, 0, 1, 4096);
        assert_eq!(second, first + t.bus_ns(4096));
    }

    #[test]
    fn bus_backfills_behind_a_slow_die() {
        let t = NandTiming::for_page_size(4096);
        let mut a = timer();
        a.erase(0, 0, 0);
        let late = a.read(0, 0, 0, 4096);
        assert!(late > t.t_erase_ns);
        // Way 1 of the same channel is not held up by way 0's erase.
        assert_eq!(a.read(0, 0, 1, 4096), t.t_read_ns + t.bus_ns(4096));
    }

    #[test]
    fn bus_is_charged_per_kept_byte() {
        let t = NandTiming::for_page_size(4096);
        let mut a = timer();
        assert_eq!(a.read(0, 0, 0, 512), t.t_read_ns + t.bus_ns(512));
        assert_eq!(a.bus_busy_ns(), t.bus_ns(512));
        assert_eq!(a.array_busy_ns(), t.t_read_ns);
    }

    #[test]
    fn program_and_erase_occupy_the_die() {
        let t = NandTiming::for_page_size(16384);
        let mut a = NandTimer::new(t, 2, 1);
        let p = a.program(0, 0, 0, 16384);
        assert_eq!(p, t.bus_ns(16384) + t.t_prog_ns);
        let e = a.erase(0, 0, 0);
        assert_eq!(e, p + t.t_erase_ns);
        assert_eq!(a.array_busy_ns(), t.t_prog_ns + t.t_erase_ns);
    }
}
