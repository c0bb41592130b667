//! Seeded, configurable NAND faults: transient uncorrectable reads (a read
//! fails ECC, a re-read may succeed), program and erase failures (the
//! block goes bad: a grown bad block), and a slow channel. Off by default.
//! The same seed and command stream give the same faults.

use attention::testdata::SplitMix64;

/// Fault rates (per million operations) and a slow channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NandFaults {
    /// Seed of the fault stream.
    pub seed: u64,
    /// Reads that fail ECC this time (transient), per million.
    pub read_ppm: u32,
    /// Programs that fail and make their block bad, per million.
    pub program_ppm: u32,
    /// Erases that fail and make their block bad, per million.
    pub erase_ppm: u32,
    /// A channel whose operations take `factor` times as long in every
    /// stage (tR, tRCBSY, bus transfer, tPROG, tBERS), so its bus and dies
    /// stay busy that much longer.
    pub slow_channel: Option<(u8, u32)>,
}

impl NandFaults {
    /// Whether any fault is configured.
    pub const fn any(&self) -> bool {
        self.read_ppm > 0
            || self.program_ppm > 0
            || self.erase_ppm > 0
            || self.slow_channel.is_some()
    }
}

/// Faults injected so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounters {
    /// Transient read failures injected.
    pub reads: u64,
    /// Program failures injected (blocks grown bad).
    pub programs: u64,
    /// Erase failures injected (blocks grown bad).
    pub erases: u64,
}

/// The fault stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultDice {
    pub cfg: NandFaults,
    dice: SplitMix64,
    pub counters: FaultCounters,
}

impl FaultDice {
    pub(crate) fn new(cfg: NandFaults) -> Self {
        Self {
            cfg,
            dice: SplitMix64::new(cfg.seed),
            counters: FaultCounters::default(),
        }
    }

    /// One roll at `ppm` per million.
    pub(crate) fn roll(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.dice.below(1_000_000) < u64::from(ppm)
    }

    /// The slow-down factor of `channel`.
    pub(crate) fn slowdown(&self, channel: u8) -> u64 {
        match self.cfg.slow_channel {
            Some((c, f)) if c == channel => u64::from(f.max(1)),
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolls_follow_the_rate_and_the_seed() {
        let cfg = NandFaults {
            seed: 7,
            read_ppm: 100_000,
            ..NandFaults::default()
        };
        let mut a = FaultDice::new(cfg);
        let mut b = FaultDice::new(cfg);
        let hits: usize = (0..100_000).filter(|_| a.roll(cfg.read_ppm)).count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
        let mut a = FaultDice::new(cfg);
        let same = (0..1000).all(|_| a.roll(50_000) == b.roll(50_000));
        assert!(same, "same seed, same faults");
        assert!(!FaultDice::new(NandFaults::default()).roll(0));
    }
}
