//! Counters and the statistics snapshot.

/// Running event counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub pages_programmed: u64,
    pub partial_pages_written: u64,
    pub pages_superseded: u64,
    pub pages_coalesced: u64,
    pub pages_relocated: u64,
    pub blocks_erased: u64,
}

/// A snapshot of FTL activity and state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlStats {
    /// Program ops queued (full, partial, superseding and relocation pages).
    pub pages_programmed: u64,
    /// Programs queued for a page not full of tokens (forced by the budget).
    pub partial_pages_written: u64,
    /// Flash pages replaced by a newer image of the same group / run (the
    /// new program merged the old page in).
    pub pages_superseded: u64,
    /// Flushes folded into a still-pending program of the same page instead
    /// of a new program.
    pub pages_coalesced: u64,
    /// Pages re-placed out of a retired block.
    pub pages_relocated: u64,
    /// Erase ops queued.
    pub blocks_erased: u64,
    pub free_blocks: u64,
    pub bad_blocks: u64,
    pub valid_pages: u64,
    pub dram_used: u64,
    pub dram_budget: u64,
    pub max_erase_count: u32,
    pub min_erase_count: u32,
    pub pending_ops: u64,
    pub open_streams: u32,
}
