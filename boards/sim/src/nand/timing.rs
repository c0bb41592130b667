//! NAND timing parameters ([`NandTiming`]) with their sources; the
//! schedule that applies them is [`super::schedule`].

use crate::clock::transfer_ns;

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
    /// Cache read (ONFI READ CACHE, 31h / 00h-31h): the array reads the next
    /// page while the previous one waits in the cache register for, or
    /// crosses, the bus. Default on: ONFI MLC NAND has it, e.g. Micron's
    /// MT29F64G08CBAA (ONFI 2.2, MLC, tR 75 µs) lists "Read cache
    /// sequential, Read cache random" in its advanced command set.
    pub cache_read: bool,
    /// Data register → cache register move of a cache read (tRCBSY) in ns;
    /// the array is free once it ends. Default 3 µs: tRCBSY (`tDCBSYR1`,
    /// "cache busy in page read cache mode") of Micron's NAND Verilog model
    /// of its 4 Gb parts, where it is a maximum; using it for both page
    /// sizes is a model choice.
    pub t_cache_ns: u64,
    /// Commands one die's controller queue holds (the NFC's command queue
    /// per die). Default 8, a model choice from the depth sweep
    /// (`instinfer bench nand`, docs/nand-model.md): two commands per die
    /// already give the best time there (the array reads the next page
    /// while the previous one waits for the bus), and no depth up to 32
    /// changes it, because the model charges nothing for the firmware's
    /// own work between a completion and the next submission; 8 leaves
    /// room for that latency on a real controller.
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
            cache_read: true,
            t_cache_ns: 3_000,
            queue_depth: 8,
        }
    }

    /// Bus time of one transfer of `bytes`.
    pub fn bus_ns(&self, bytes: usize) -> u64 {
        self.cmd_overhead_ns + transfer_ns(bytes as u64, self.bus_bytes_per_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(t16.cache_read && t4.cache_read);
        assert_eq!((t16.t_cache_ns, t16.queue_depth), (3_000, 8));
        // 4 KiB over a 1.4 GB/s bus: 2.926 µs + 0.2 µs.
        assert_eq!(t4.bus_ns(4096), 200 + 2_926);
    }
}
