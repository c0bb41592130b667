//! The statistics log page, built from the core's counters, the FTL's
//! accounting and the board's clock.

use crate::hal::Clock;
use crate::state::State;
use proto::StatsLog;

/// The log page as of now.
pub(crate) fn snapshot(st: &State, clock: &impl Clock) -> StatsLog {
    let c = &st.counters;
    let f = st.ftl.stats();
    let t = clock.breakdown();
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
        open_sequences: st.sequences.open_count() as u64,
        free_blocks: f.free_blocks,
        bad_blocks: f.bad_blocks,
        virtual_ns_total: t.total,
        virtual_ns_flash_busy: t.flash_busy,
        virtual_ns_bus_busy: t.bus_busy,
        virtual_ns_engine_busy: t.engine_busy,
        virtual_ns_dma_busy: t.dma_busy,
        pages_relocated: f.pages_relocated,
        gc_blocks: f.gc_blocks,
        gc_pages_moved: f.gc_pages_moved,
        wear_moves: f.wear_moves,
        erase_count_min: u64::from(f.min_erase_count),
        erase_count_max: u64::from(f.max_erase_count),
        erase_count_total: f.total_erases,
        usable_blocks: f.usable_blocks,
        virtual_ns_gc: c.gc_ns,
        ..StatsLog::default()
    }
}
