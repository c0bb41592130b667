//! Time as the board sees it.

/// Where a board's time went, in nanoseconds. On the simulated board these
/// are *virtual* (modelled) times; the busy figures are sums of resource
/// busy time and overlap each other, so they do not add up to `total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeBreakdown {
    /// Time since the board started.
    pub total: u64,
    /// Sum over dies of array busy time (tR, tPROG, tBERS).
    pub flash_busy: u64,
    /// Sum over channels of bus transfer time.
    pub bus_busy: u64,
    /// Engine busy time.
    pub engine_busy: u64,
    /// Host DMA (PCIe) busy time.
    pub dma_busy: u64,
}

/// A monotonic clock plus the board's own accounting of busy time.
pub trait Clock {
    /// Nanoseconds since the board started.
    fn now_ns(&self) -> u64;
    /// Busy-time accounting; boards without it report only `total`.
    fn breakdown(&self) -> TimeBreakdown {
        TimeBreakdown {
            total: self.now_ns(),
            ..TimeBreakdown::default()
        }
    }
}
