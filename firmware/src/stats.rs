//! Counters the core keeps, and the statistics log page built from them.

use crate::device::Device;
use crate::hal::{Clock, Engine, HostInterface, Nand};
use proto::StatsLog;

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
}

/// The log page as of now.
pub(crate) fn snapshot<B>(dev: &Device<B>) -> StatsLog
where
    B: HostInterface + Nand + Engine + Clock,
{
    let c = &dev.state.counters;
    let f = dev.state.ftl.stats();
    let t = dev.board.breakdown();
    StatsLog {
        commands: c.commands,
        errors: c.errors,
        flash_pages_read: c.pages_read,
        flash_pages_skipped: c.pages_skipped,
        flash_pages_programmed: c.pages_programmed,
        partial_pages_written: f.partial_pages_written,
        pages_superseded: f.pages_superseded,
        blocks_erased: f.blocks_erased,
        channel_bus_bytes: c.bus_bytes,
        engine_bytes: c.engine_bytes,
        elements_filtered: c.elements_filtered,
        dram_tail_bytes: c.dram_tail_bytes,
        pcie_bytes_in: c.pcie_in,
        pcie_bytes_out: c.pcie_out,
        tokens_appended: c.tokens_appended,
        decodes: c.decodes,
        open_sequences: dev.state.sequences.open_count() as u64,
        free_blocks: f.free_blocks,
        bad_blocks: f.bad_blocks,
        virtual_ns_total: t.total,
        virtual_ns_flash_busy: t.flash_busy,
        virtual_ns_bus_busy: t.bus_busy,
        virtual_ns_engine_busy: t.engine_busy,
        virtual_ns_dma_busy: t.dma_busy,
        ..StatsLog::default()
    }
}
