//! The `Ftl` object and its public API: configuration, stream life cycle,
//! appends, the op queue hand-off and the read-side lookups.
//!
//! The work is split by concern: writer.rs (page writes and appends),
//! budget.rs (append planning: DRAM budget and capacity), reclaim.rs
//! (erasing dead blocks), bad_blocks.rs (failures, relocation).

use alloc::vec::Vec;

use crate::address::{BlockAddr, Ppa};
use crate::allocator::{BlockTable, MAX_STREAM_ID};
use crate::error::FtlError;
use crate::geometry::Geometry;
use crate::op::FlashOp;
use crate::op_queue::OpQueue;
use crate::spans::{DimSpan, GroupSpans, RunSpans};
use crate::stats::{Counters, FtlStats};
use crate::stream::{Kind, StreamId, StreamShape};
use crate::stream_state::StreamState;

/// Most stream slots an FTL may be configured with (the slot table is
/// allocated up front).
pub const MAX_STREAMS: u32 = 1 << 20;

/// Start-up configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtlConfig {
    /// Shape of the NAND array; must pass `Geometry::validate`.
    pub geometry: Geometry,
    /// Bytes of device DRAM the group buffers may hold (2 B per element).
    pub dram_budget: u64,
    /// Stream slots (1..=`MAX_STREAMS`).
    pub max_streams: u32,
    /// Factory bad blocks: never allocated.
    pub bad_blocks: Vec<BlockAddr>,
}

/// Flash translation layer for the KV cache. See the crate docs.
#[derive(Debug)]
pub struct Ftl {
    pub(crate) geo: Geometry,
    pub(crate) budget: u64,
    pub(crate) blocks: BlockTable,
    pub(crate) streams: Vec<Option<StreamState>>,
    pub(crate) ops: OpQueue,
    /// Dead blocks whose erase waits for merge references to clear.
    pub(crate) deferred: Vec<usize>,
    /// Blocks whose erase is queued (not yet drained).
    pub(crate) erasing_queued: Vec<usize>,
    /// Blocks whose erase went out with the last batch (unconfirmed).
    pub(crate) erasing_drained: Vec<usize>,
    pub(crate) dram_used: u64,
    pub(crate) counters: Counters,
    pub(crate) gc: crate::gc::GcConfig,
}

impl Ftl {
    /// An FTL over an erased array: every block free except the factory bad
    /// ones, no stream open. Fails on an invalid geometry, a stream-slot
    /// count out of range or a bad block outside the geometry.
    pub fn new(cfg: FtlConfig) -> Result<Ftl, FtlError> {
        cfg.geometry.validate()?;
        if cfg.max_streams == 0 || cfg.max_streams > MAX_STREAMS.min(MAX_STREAM_ID) {
            return Err(FtlError::InvalidConfig);
        }
        let blocks = BlockTable::new(cfg.geometry, &cfg.bad_blocks)?;
        let mut streams = Vec::new();
        streams.resize_with(cfg.max_streams as usize, || None);
        Ok(Ftl {
            geo: cfg.geometry,
            budget: cfg.dram_budget,
            blocks,
            streams,
            ops: OpQueue::default(),
            deferred: Vec::new(),
            erasing_queued: Vec::new(),
            erasing_drained: Vec::new(),
            dram_used: 0,
            counters: Counters::default(),
            gc: crate::gc::GcConfig::for_geometry(&cfg.geometry),
        })
    }

    /// Every free block may hold data of an earlier life (a boot after
    /// power loss): each is erased when it is first opened, the erase
    /// queued ahead of its first program, instead of all at boot.
    pub fn assume_unerased(&mut self) {
        self.blocks.mark_unerased();
    }

    /// A page of `die`'s open block for `owner`; opening an unerased block
    /// queues its erase first.
    pub(crate) fn take_page(
        &mut self,
        die: u32,
        owner: crate::stream::StreamId,
    ) -> Result<Ppa, FtlError> {
        let ppa = self
            .blocks
            .allocate(die, owner, self.counters.pages_programmed)?;
        if ppa.page == 0
            && let Some(i) = self.blocks.index(ppa.block())
            && self.blocks.take_unerased(i)
        {
            self.ops.push_erase(ppa.block());
            self.counters.blocks_erased += 1;
        }
        Ok(ppa)
    }

    /// The geometry it was configured with.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Opens a stream in the lowest free slot.
    pub fn open_stream(&mut self, shape: StreamShape) -> Result<StreamId, FtlError> {
        shape.validate()?;
        let tpp = self.geo.tokens_per_page(shape.head_dim);
        let tpd = self.geo.tokens_per_dim_page(shape.dim_group);
        if tpp == 0 || tpd == 0 {
            return Err(FtlError::InvalidShape);
        }
        let slot = self
            .streams
            .iter()
            .position(Option::is_none)
            .ok_or(FtlError::TooManyStreams)?;
        self.streams[slot] = Some(StreamState::new(shape, tpp, tpd));
        Ok(StreamId(slot as u32))
    }

    /// Closes a stream: its DRAM tails are dropped, all its pages become
    /// invalid and fully invalid blocks are erased (queued).
    pub fn close_stream(&mut self, id: StreamId) -> Result<(), FtlError> {
        let st = self
            .streams
            .get_mut(id.0 as usize)
            .and_then(Option::take)
            .ok_or(FtlError::UnknownStream)?;
        self.dram_used = self
            .dram_used
            .saturating_sub(st.tok_bytes() + st.dim_bytes());
        for ppa in st.all_pages() {
            // The data is dead: its queued / just-drained program need not
            // read its merge source any more, so that source may be erased.
            if let Some((_, m)) = self.ops.pending_mut(ppa) {
                let m = m.take();
                self.release_ref(m);
            }
            let m = self.ops.clear_retained_merge(ppa);
            self.release_ref(m);
            self.invalidate_page(ppa);
        }
        Ok(())
    }

    pub(crate) fn stream(&self, id: StreamId) -> Result<&StreamState, FtlError> {
        self.streams
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(FtlError::UnknownStream)
    }

    pub(crate) fn stream_mut(&mut self, id: StreamId) -> Result<&mut StreamState, FtlError> {
        self.streams
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(FtlError::UnknownStream)
    }

    /// The shape stream `id` was opened with.
    pub fn shape(&self, id: StreamId) -> Result<StreamShape, FtlError> {
        Ok(self.stream(id)?.shape)
    }

    /// Tokens appended so far.
    pub fn len(&self, id: StreamId) -> Result<u32, FtlError> {
        Ok(self.stream(id)?.len)
    }

    /// Whether the stream holds no token.
    pub fn is_empty(&self, id: StreamId) -> Result<bool, FtlError> {
        Ok(self.len(id)? == 0)
    }

    /// T: tokens per token page of this stream.
    pub fn tokens_per_page(&self, id: StreamId) -> Result<u32, FtlError> {
        Ok(self.stream(id)?.tpp)
    }

    /// N: tokens per dim page of this stream.
    pub fn tokens_per_dim_page(&self, id: StreamId) -> Result<u32, FtlError> {
        Ok(self.stream(id)?.tpd)
    }

    /// Ops to execute, in queue order (each program's merge source is read
    /// before it is programmed). Failures of this batch must be reported
    /// (`program_failed` / `erase_failed`) before the next call: the FTL
    /// keeps this batch's page images until then to re-place failed pages.
    pub fn drain_ops(&mut self) -> Vec<FlashOp> {
        // The previous batch has been executed: its merge sources are free
        // to go, and so are dead blocks that were waiting on them.
        for m in self.ops.release_retained() {
            self.release_ref(Some(m));
        }
        for i in core::mem::take(&mut self.erasing_drained) {
            self.blocks.confirm_erased(i);
        }
        self.reclaim_deferred();
        self.erasing_drained = core::mem::take(&mut self.erasing_queued);
        self.ops.drain()
    }

    /// Ops queued and not yet drained.
    pub fn pending_ops(&self) -> usize {
        self.ops.live()
    }

    /// An open stream none of whose pages was lost.
    fn intact(&self, id: StreamId) -> Result<&StreamState, FtlError> {
        let st = self.stream(id)?;
        if st.damaged {
            return Err(FtlError::DataLost);
        }
        Ok(st)
    }

    /// The program of `ppa` could not be done: the page it was to copy or
    /// merge from failed every read. Its owner's data is lost; the stream
    /// is marked so that every later lookup of it fails
    /// ([`FtlError::DataLost`]) instead of serving the unwritten page.
    /// A page no open stream holds any more (closed since) loses nothing.
    pub fn page_lost(&mut self, ppa: Ppa) -> Result<(), FtlError> {
        if !self.geo.contains(ppa) {
            return Err(FtlError::InvalidAddress);
        }
        let Some(st) = self
            .blocks
            .owner(ppa)
            .and_then(|owner| self.stream_mut(owner).ok())
        else {
            return Ok(());
        };
        st.damaged = true;
        self.counters.pages_lost += 1;
        Ok(())
    }

    /// Where token group `group` of K or V is. Valid groups are
    /// `0..ceil(len / T)`. A flash span may name a page whose program is
    /// still queued (see `drain_ops`).
    pub fn token_group(
        &self,
        id: StreamId,
        kind: Kind,
        group: u32,
    ) -> Result<GroupSpans<'_>, FtlError> {
        let st = self.intact(id)?;
        if group >= st.len.div_ceil(st.tpp) {
            return Err(FtlError::OutOfRange);
        }
        let map = st.map(kind);
        if group < st.len / st.tpp {
            let ppa = map.get(group).ok_or(FtlError::OutOfRange)?;
            return Ok(GroupSpans {
                flash: Some((ppa, st.tpp)),
                dram: None,
            });
        }
        let flash = match st.tok_persisted {
            0 => None,
            p => Some((map.get(group).ok_or(FtlError::OutOfRange)?, p)),
        };
        let held = st.tok_held();
        let tail = match kind {
            Kind::K => &st.k_tail,
            Kind::V => &st.v_tail,
        };
        let dram = (held > 0).then_some((tail.as_slice(), st.tok_persisted, held));
        Ok(GroupSpans { flash, dram })
    }

    /// Where dim block `block`, run `run` of the dim copy of K is. Valid
    /// runs are `0..ceil(len / N)`, blocks `0..head_dim / m`.
    pub fn dim_run(&self, id: StreamId, block: u32, run: u32) -> Result<RunSpans<'_>, FtlError> {
        let st = self.intact(id)?;
        if block >= st.shape.dim_blocks() || run >= st.len.div_ceil(st.tpd) {
            return Err(FtlError::OutOfRange);
        }
        if run < st.len / st.tpd {
            let ppa = st.dim_map.get(block, run).ok_or(FtlError::OutOfRange)?;
            return Ok(RunSpans {
                flash: Some((ppa, st.tpd)),
                dram: None,
            });
        }
        let flash = match st.dim_persisted {
            0 => None,
            p => Some((st.dim_map.get(block, run).ok_or(FtlError::OutOfRange)?, p)),
        };
        let tail = &st.dim_tail;
        let held = st.dim_held();
        let at = block as usize * usize::from(st.shape.dim_group) * tail.stride();
        let dram = match tail.data().get(at..) {
            Some(d) if held > 0 => Some(DimSpan::new(d, tail.stride(), st.dim_persisted, held)),
            _ => None,
        };
        Ok(RunSpans { flash, dram })
    }

    /// A snapshot of the counters and of the block, DRAM and queue state.
    pub fn stats(&self) -> FtlStats {
        let (min_erase_count, max_erase_count) = self.blocks.erase_count_range();
        let (total_erases, usable_blocks) = self.blocks.erase_count_sum();
        let c = self.counters;
        FtlStats {
            pages_programmed: c.pages_programmed,
            partial_pages_written: c.partial_pages_written,
            pages_superseded: c.pages_superseded,
            pages_coalesced: c.pages_coalesced,
            pages_relocated: c.pages_relocated,
            blocks_erased: c.blocks_erased,
            gc_blocks: c.gc_blocks,
            gc_pages_moved: c.gc_pages_moved,
            wear_moves: c.wear_moves,
            pages_lost: c.pages_lost,
            total_erases,
            usable_blocks,
            free_blocks: self.blocks.free_blocks(),
            bad_blocks: self.blocks.bad_blocks(),
            valid_pages: self.blocks.valid_total(),
            dram_used: self.dram_used,
            dram_budget: self.budget,
            max_erase_count,
            min_erase_count,
            pending_ops: self.ops.live() as u64,
            open_streams: self.streams.iter().filter(|s| s.is_some()).count() as u32,
        }
    }

    /// Erases of `block` so far (0 outside the geometry).
    pub fn erase_count(&self, block: BlockAddr) -> u32 {
        self.blocks
            .index(block)
            .and_then(|i| self.blocks.info(i))
            .map_or(0, |b| b.erase_count)
    }

    /// Whether `block` is retired (factory bad or failed); false outside the
    /// geometry.
    pub fn is_bad(&self, block: BlockAddr) -> bool {
        self.blocks
            .index(block)
            .is_some_and(|i| self.blocks.is_bad(i))
    }

    /// Whether `block` is some die's open block.
    pub fn is_open_block(&self, block: BlockAddr) -> bool {
        self.blocks
            .index(block)
            .is_some_and(|i| self.blocks.is_open(i))
    }

    /// Whether `block` is erased and in the free pool.
    pub fn is_free_block(&self, block: BlockAddr) -> bool {
        self.blocks
            .index(block)
            .is_some_and(|i| self.blocks.is_free(i))
    }

    /// Stream owning the valid page `ppa`.
    pub fn page_owner(&self, ppa: Ppa) -> Option<StreamId> {
        self.blocks.owner(ppa)
    }

    /// Every flash page stream `id` references (token K, token V, dim).
    pub fn stream_pages(&self, id: StreamId) -> Result<Vec<Ppa>, FtlError> {
        Ok(self.stream(id)?.all_pages().collect())
    }

    /// Ids of the open streams.
    pub fn open_streams(&self) -> Vec<StreamId> {
        self.streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| StreamId(i as u32))
            .collect()
    }
}
