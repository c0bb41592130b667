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
    pub gc_blocks: u64,
    pub gc_pages_moved: u64,
    pub wear_moves: u64,
    pub pages_lost: u64,
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
    /// Blocks garbage collection collected (wear-levelling moves included).
    pub gc_blocks: u64,
    /// Live pages garbage collection re-placed.
    pub gc_pages_moved: u64,
    /// Pages whose move or merge could not read its source (their
    /// streams refuse lookups).
    pub pages_lost: u64,
    /// Cold blocks collected for static wear levelling.
    pub wear_moves: u64,
    /// Erases of every usable block (their mean is this over
    /// `usable_blocks`).
    pub total_erases: u64,
    /// Blocks that are not bad.
    pub usable_blocks: u64,
    /// Erase ops queued.
    pub blocks_erased: u64,
    /// Erased blocks in the free pools of all dies (open blocks and blocks
    /// whose erase is not yet confirmed excluded).
    pub free_blocks: u64,
    /// Blocks retired for good: factory bad blocks plus blocks that failed
    /// a program or erase.
    pub bad_blocks: u64,
    /// Flash pages holding live data of some open stream.
    pub valid_pages: u64,
    /// Bytes of device DRAM the group buffers hold now (2 B per element).
    pub dram_used: u64,
    /// Bytes of device DRAM the group buffers may hold (`FtlConfig::dram_budget`).
    pub dram_budget: u64,
    /// Most erases of any block that is not bad (wear-levelling spread, with
    /// `min_erase_count`).
    pub max_erase_count: u32,
    /// Fewest erases of any block that is not bad.
    pub min_erase_count: u32,
    /// Flash ops queued and not yet drained.
    pub pending_ops: u64,
    /// Streams open now.
    pub open_streams: u32,
}

impl FtlStats {
    /// Pages programmed per page of host data (1 with no copying).
    pub fn write_amplification(&self) -> f64 {
        let host = self
            .pages_programmed
            .saturating_sub(self.gc_pages_moved + self.pages_relocated);
        if host == 0 {
            1.0
        } else {
            self.pages_programmed as f64 / host as f64
        }
    }

    /// Mean erase count of the usable blocks.
    pub fn mean_erase_count(&self) -> f64 {
        if self.usable_blocks == 0 {
            0.0
        } else {
            self.total_erases as f64 / self.usable_blocks as f64
        }
    }
}
