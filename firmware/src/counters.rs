//! The running counters of the core; the statistics log page
//! ([`crate::stats`]) is built from them.

/// Running counters of the core (what the firmware itself can see).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub commands: u64,
    pub errors: u64,
    pub pages_read: u64,
    pub pages_skipped: u64,
    pub pages_programmed: u64,
    /// Bytes over the channel buses: kept bytes of reads, whole pages of
    /// programs and merge reads.
    pub bus_bytes: u64,
    /// Bytes the NAND controllers handed to the engine after filtering.
    pub engine_bytes: u64,
    /// Elements of valid page data the NFC filters dropped.
    pub elements_filtered: u64,
    /// Bytes the engine took from DRAM group buffers (tokens not yet in a
    /// full page).
    pub dram_tail_bytes: u64,
    pub pcie_in: u64,
    pub pcie_out: u64,
    pub tokens_appended: u64,
    pub decodes: u64,
    /// Page reads repeated after an ECC failure (read retry).
    pub read_retries: u64,
    /// Virtual ns from the start to the end of garbage collection's
    /// copies and erases (background and foreground).
    pub gc_ns: u64,
}
