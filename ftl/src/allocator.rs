//! Block and page bookkeeping: per-block state, erase counts, valid-page
//! counts, per-page owners, the one open block per die and the choice of
//! the next block to open (lowest erase count, never a bad block).
//!
//! This is pure bookkeeping: it emits no flash operations (reclaim.rs and
//! bad_blocks.rs do, on top of it).

use alloc::vec;
use alloc::vec::Vec;

use crate::address::{BlockAddr, Ppa};
use crate::error::FtlError;
use crate::geometry::Geometry;
use crate::stream::StreamId;

/// Page owner code: never programmed since the last erase.
const PAGE_FREE: u32 = u32::MAX;
/// Page owner code: programmed, data no longer referenced.
const PAGE_INVALID: u32 = u32::MAX - 1;
/// Stream ids must stay below this so they never collide with the codes.
pub(crate) const MAX_STREAM_ID: u32 = u32::MAX - 2;

/// Life cycle of an erase block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockState {
    /// Erased, in the free pool of its die.
    Free,
    /// The die's open block: pages are handed out in increasing order.
    Open,
    /// Every page handed out; erasable once no page is valid.
    Full,
    /// Erase queued or executed but not yet confirmed (its failure may
    /// still be reported): not allocatable until the batch after it.
    Erasing,
    /// Retired: never allocated or erased again.
    Bad,
    /// Lent to another writer (the firmware's journal): neither free nor
    /// collectable; its erases are counted here.
    Lent,
}

#[derive(Clone, Debug)]
pub(crate) struct BlockInfo {
    pub erase_count: u32,
    pub state: BlockState,
    /// Next page to hand out (pages below it are allocated).
    pub write_ptr: u32,
    /// Pages currently valid.
    pub valid: u32,
    /// Queued or recently drained programs that merge from a page of this
    /// block: while nonzero the block must not be erased (reclaim.rs).
    pub merge_refs: u32,
    /// Dead but held back from erase by `merge_refs` (reclaim.rs).
    pub deferred: bool,
    /// When the block last changed (filled, or lost a valid page), on the
    /// FTL's program clock: the age cost-benefit garbage collection
    /// weighs (gc.rs).
    pub stamp: u64,
    /// Free, but its content after a power loss is unknown: it is erased
    /// when it is opened (ftl.rs `take_page`), not at boot.
    pub unerased: bool,
    /// Owner code per allocated page; allocated when the block is opened and
    /// dropped when it is erased, so only blocks in use cost page metadata.
    pages: Vec<u32>,
}

/// All blocks of the array plus the per-die open block and free counts.
#[derive(Debug)]
pub(crate) struct BlockTable {
    geo: Geometry,
    blocks: Vec<BlockInfo>,
    open: Vec<Option<u32>>,
    free: Vec<u32>,
    bad: u64,
    /// (min, max) erase count of the usable blocks, kept as erases and
    /// retirements happen: the wear-levelling check after every command
    /// reads it without a scan.
    range: (u32, u32),
}

impl BlockTable {
    /// Every block free except `bad` (already validated against `geo`).
    pub fn new(geo: Geometry, bad: &[BlockAddr]) -> Result<BlockTable, FtlError> {
        let n = usize::try_from(geo.total_blocks()).map_err(|_| FtlError::InvalidGeometry)?;
        let fresh = BlockInfo {
            erase_count: 0,
            state: BlockState::Free,
            write_ptr: 0,
            valid: 0,
            merge_refs: 0,
            deferred: false,
            stamp: 0,
            unerased: false,
            pages: Vec::new(),
        };
        let mut t = BlockTable {
            geo,
            blocks: vec![fresh; n],
            open: vec![None; geo.dies() as usize],
            free: vec![geo.blocks_per_die; geo.dies() as usize],
            bad: 0,
            range: (0, 0),
        };
        for &b in bad {
            let i = t.index(b).ok_or(FtlError::BadBlockOutOfRange)?;
            t.retire(i);
        }
        Ok(t)
    }

    /// Flat index of a block, `None` outside the geometry.
    pub fn index(&self, b: BlockAddr) -> Option<usize> {
        if !self.geo.contains_block(b) {
            return None;
        }
        let die = self.geo.die_index(b.channel, b.way) as usize;
        Some(die * self.geo.blocks_per_die as usize + b.block as usize)
    }

    /// Address of flat index `i`.
    pub fn addr(&self, i: usize) -> BlockAddr {
        let bpd = self.geo.blocks_per_die as usize;
        let (channel, way) = self.geo.die_at((i / bpd) as u64);
        BlockAddr {
            channel,
            way,
            block: (i % bpd) as u32,
        }
    }

    fn die_of(&self, i: usize) -> usize {
        i / self.geo.blocks_per_die as usize
    }

    pub fn info(&self, i: usize) -> Option<&BlockInfo> {
        self.blocks.get(i)
    }

    pub fn info_mut(&mut self, i: usize) -> Option<&mut BlockInfo> {
        self.blocks.get_mut(i)
    }

    /// Pages still allocatable on `die` without any erase.
    pub fn available_pages(&self, die: u32) -> u64 {
        let ppb = u64::from(self.geo.pages_per_block);
        let open = self
            .open
            .get(die as usize)
            .copied()
            .flatten()
            .map_or(0, |b| {
                let i = die as usize * self.geo.blocks_per_die as usize + b as usize;
                self.blocks
                    .get(i)
                    .map_or(0, |info| ppb - u64::from(info.write_ptr))
            });
        let free = self.free.get(die as usize).copied().unwrap_or(0);
        open + u64::from(free) * ppb
    }

    /// Hands out the next page of `die`'s open block (opening the free block
    /// with the lowest erase count when needed) and marks it valid for
    /// `owner`.
    pub fn allocate(&mut self, die: u32, owner: StreamId, now: u64) -> Result<Ppa, FtlError> {
        let d = die as usize;
        let bpd = self.geo.blocks_per_die as usize;
        let ppb = self.geo.pages_per_block;
        let blk = match self.open.get(d).copied().ok_or(FtlError::NoSpace)? {
            Some(b) => b as usize,
            None => {
                let b = self.pick_free(d).ok_or(FtlError::NoSpace)?;
                let i = d * bpd + b;
                let info = &mut self.blocks[i];
                info.state = BlockState::Open;
                info.write_ptr = 0;
                info.valid = 0;
                info.pages = vec![PAGE_FREE; ppb as usize];
                self.free[d] = self.free[d].saturating_sub(1);
                self.open[d] = Some(b as u32);
                b
            }
        };
        let i = d * bpd + blk;
        let info = &mut self.blocks[i];
        let page = info.write_ptr;
        if let Some(p) = info.pages.get_mut(page as usize) {
            *p = owner.0;
        }
        info.write_ptr += 1;
        info.valid += 1;
        if info.write_ptr >= ppb {
            info.state = BlockState::Full;
            info.stamp = now;
            self.open[d] = None;
        }
        Ok(self.addr(i).page(page))
    }

    /// Free block of die `d` with the lowest erase count (lowest index on a
    /// tie), as an index within the die. Wear levelling is just this choice.
    fn pick_free(&self, d: usize) -> Option<usize> {
        let bpd = self.geo.blocks_per_die as usize;
        let die = self.blocks.get(d * bpd..(d + 1) * bpd)?;
        die.iter()
            .enumerate()
            .filter(|(_, b)| b.state == BlockState::Free)
            .min_by_key(|(_, b)| b.erase_count)
            .map(|(i, _)| i)
    }

    /// Owner of a valid page.
    pub fn owner(&self, ppa: Ppa) -> Option<StreamId> {
        if !self.geo.contains(ppa) {
            return None;
        }
        let i = self.index(ppa.block())?;
        match self.blocks.get(i)?.pages.get(ppa.page as usize).copied()? {
            PAGE_FREE | PAGE_INVALID => None,
            s => Some(StreamId(s)),
        }
    }

    /// Owners of the valid pages of block `i`, with their page index.
    pub fn valid_pages(&self, i: usize) -> Vec<(u32, StreamId)> {
        let Some(info) = self.blocks.get(i) else {
            return Vec::new();
        };
        info.pages
            .iter()
            .enumerate()
            .filter(|&(_, &o)| o != PAGE_FREE && o != PAGE_INVALID)
            .map(|(p, &o)| (p as u32, StreamId(o)))
            .collect()
    }

    /// Marks a valid page invalid at time `now`. Returns the block index
    /// when that made a full block dead (no valid page left) so the caller
    /// can reclaim it.
    pub fn invalidate(&mut self, ppa: Ppa, now: u64) -> Option<usize> {
        let i = self.index(ppa.block())?;
        let info = self.blocks.get_mut(i)?;
        let slot = info.pages.get_mut(ppa.page as usize)?;
        if *slot == PAGE_FREE || *slot == PAGE_INVALID {
            return None;
        }
        *slot = PAGE_INVALID;
        info.stamp = now;
        info.valid = info.valid.saturating_sub(1);
        (info.valid == 0 && info.state == BlockState::Full).then_some(i)
    }

    /// Whether block `i` is full and holds no valid page.
    pub fn is_dead(&self, i: usize) -> bool {
        self.blocks
            .get(i)
            .is_some_and(|b| b.state == BlockState::Full && b.valid == 0)
    }

    /// Accounts an erase of dead block `i`: erase count + 1, page metadata
    /// dropped; the block joins the free pool at `confirm_erased`.
    pub fn erase(&mut self, i: usize) {
        self.count_erase(i);
        if let Some(info) = self.blocks.get_mut(i) {
            info.state = BlockState::Erasing;
            info.write_ptr = 0;
            info.valid = 0;
            info.deferred = false;
            info.pages = Vec::new();
        }
    }

    /// The erase of block `i` went through: back to the free pool.
    pub fn confirm_erased(&mut self, i: usize) {
        let d = self.die_of(i);
        if let Some(info) = self.blocks.get_mut(i)
            && info.state == BlockState::Erasing
        {
            info.state = BlockState::Free;
            if let Some(f) = self.free.get_mut(d) {
                *f += 1;
            }
        }
    }

    /// Retires block `i` for good (pages keep their owner codes so the
    /// caller can still find what to relocate).
    pub fn retire(&mut self, i: usize) {
        let d = self.die_of(i);
        let Some(info) = self.blocks.get_mut(i) else {
            return;
        };
        match info.state {
            BlockState::Bad => return,
            BlockState::Free => {
                if let Some(f) = self.free.get_mut(d) {
                    *f = f.saturating_sub(1);
                }
            }
            BlockState::Open => {
                if let Some(o) = self.open.get_mut(d) {
                    *o = None;
                }
            }
            BlockState::Full | BlockState::Erasing | BlockState::Lent => {}
        }
        info.state = BlockState::Bad;
        info.deferred = false;
        self.bad += 1;
        self.range = self.scan_range();
    }

    pub fn is_bad(&self, i: usize) -> bool {
        self.blocks
            .get(i)
            .is_some_and(|b| b.state == BlockState::Bad)
    }

    pub fn free_blocks(&self) -> u64 {
        self.free.iter().map(|&f| u64::from(f)).sum()
    }

    pub fn bad_blocks(&self) -> u64 {
        self.bad
    }

    /// Marks every free block as holding unknown data (erased when
    /// opened).
    pub fn mark_unerased(&mut self) {
        for b in &mut self.blocks {
            if b.state == BlockState::Free {
                b.unerased = true;
            }
        }
    }

    /// If block `i` was unerased: clears the mark and counts the erase
    /// its opening takes; true if so.
    pub fn take_unerased(&mut self, i: usize) -> bool {
        match self.blocks.get_mut(i) {
            Some(b) if b.unerased => {
                b.unerased = false;
                self.count_erase(i);
                true
            }
            _ => false,
        }
    }

    /// One more erase of block `i`, the erase-count range kept.
    fn count_erase(&mut self, i: usize) {
        let Some(b) = self.blocks.get_mut(i) else {
            return;
        };
        let old = b.erase_count;
        b.erase_count = old.saturating_add(1);
        self.range.1 = self.range.1.max(b.erase_count);
        if old == self.range.0 {
            self.range = self.scan_range();
        }
    }

    /// Lends the least-erased free block of the die with the most free
    /// blocks (lowest index on ties) and counts the erase its borrower
    /// gives it first.
    pub fn lend(&mut self) -> Option<usize> {
        let d = (0..self.free.len()).rev().max_by_key(|&d| self.free[d])?;
        if self.free[d] == 0 {
            return None;
        }
        let i = d * self.geo.blocks_per_die as usize + self.pick_free(d)?;
        self.take_free(i);
        self.count_erase(i);
        Some(i)
    }

    /// Lends free block `i` as it is (its content kept); false unless it
    /// was free.
    pub fn hold(&mut self, i: usize) -> bool {
        if !self.is_free(i) {
            return false;
        }
        self.take_free(i);
        true
    }

    fn take_free(&mut self, i: usize) {
        let d = self.die_of(i);
        if let Some(info) = self.blocks.get_mut(i) {
            info.state = BlockState::Lent;
            info.unerased = false;
            if let Some(f) = self.free.get_mut(d) {
                *f = f.saturating_sub(1);
            }
        }
    }

    /// A lent block comes back to the free pool, its content unknown
    /// (erased when opened); false unless it was lent.
    pub fn give_back(&mut self, i: usize) -> bool {
        let d = self.die_of(i);
        match self.blocks.get_mut(i) {
            Some(info) if info.state == BlockState::Lent => {
                info.state = BlockState::Free;
                info.unerased = true;
                if let Some(f) = self.free.get_mut(d) {
                    *f += 1;
                }
                true
            }
            _ => false,
        }
    }

    /// Whether block `i` is lent.
    pub fn is_lent(&self, i: usize) -> bool {
        self.blocks
            .get(i)
            .is_some_and(|b| b.state == BlockState::Lent)
    }

    /// Blocks in the table.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Raises the erase counts to `counts` (kept from an earlier life;
    /// entries past the table ignored), the range recomputed once.
    pub fn raise_erase_counts(&mut self, counts: impl Iterator<Item = (usize, u32)>) {
        for (i, c) in counts {
            if let Some(b) = self.blocks.get_mut(i) {
                b.erase_count = b.erase_count.max(c);
            }
        }
        self.range = self.scan_range();
    }

    /// Free blocks of die `d`.
    pub fn free_on(&self, d: u32) -> u32 {
        self.free.get(d as usize).copied().unwrap_or(0)
    }

    /// Sum of erase counts and number of blocks that are not bad.
    pub fn erase_count_sum(&self) -> (u64, u64) {
        self.blocks
            .iter()
            .filter(|b| b.state != BlockState::Bad)
            .fold((0, 0), |(s, n), b| (s + u64::from(b.erase_count), n + 1))
    }

    /// Full blocks (not bad, not open, not being erased) with their index.
    pub fn full_blocks(&self) -> impl Iterator<Item = (usize, &BlockInfo)> + '_ {
        self.blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.state == BlockState::Full)
    }

    /// (min, max) erase count over blocks that are not bad.
    pub fn erase_count_range(&self) -> (u32, u32) {
        self.range
    }

    fn scan_range(&self) -> (u32, u32) {
        let mut it = self
            .blocks
            .iter()
            .filter(|b| b.state != BlockState::Bad)
            .map(|b| b.erase_count);
        let first = it.next().unwrap_or(0);
        it.fold((first, first), |(lo, hi), c| (lo.min(c), hi.max(c)))
    }

    /// Valid pages over the whole array.
    pub fn valid_total(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.valid)).sum()
    }

    /// Whether block `i` is some die's open block.
    pub fn is_open(&self, i: usize) -> bool {
        self.blocks
            .get(i)
            .is_some_and(|b| b.state == BlockState::Open)
    }

    pub fn is_free(&self, i: usize) -> bool {
        self.blocks
            .get(i)
            .is_some_and(|b| b.state == BlockState::Free)
    }
}
