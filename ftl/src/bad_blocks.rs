//! Bad-block handling: factory bad blocks come from the config (never
//! allocated); a failed program or erase retires the block for good and
//! every valid page it holds is re-placed.
//!
//! Re-placing a page takes its image from wherever the FTL still has it:
//! * program still queued → the op is moved to a new page (same image and
//!   merge source);
//! * drained in the last batch (e.g. the page whose program failed) → a new
//!   program with the retained image and merge source;
//! * programmed earlier → a new program that copies the old page's tokens
//!   (the token- or dim-row layout of a superseding program: the firmware
//!   reads it from the retired block, whose other pages are still
//!   readable). Not the whole page: a flush of the same group may still be
//!   folded into the queued copy, and a whole-page copy would overwrite
//!   its rows.
//!
//! Contract: failures of a batch are reported before the next `drain_ops`.

use alloc::vec;

use crate::address::{BlockAddr, Ppa};
use crate::error::FtlError;
use crate::ftl::Ftl;
use crate::op::{Merge, MergeLayout};
use crate::placement::{dim_die, token_die};
use crate::stream::StreamId;
use crate::stream_state::Slot;

impl Ftl {
    /// A program failed: retire its block, re-place the page and every
    /// other valid page of the block, queuing new programs. Reporting a
    /// page of an already retired block is a no-op.
    pub fn program_failed(&mut self, ppa: Ppa) -> Result<(), FtlError> {
        if !self.geo.contains(ppa) {
            return Err(FtlError::InvalidAddress);
        }
        let i = self
            .blocks
            .index(ppa.block())
            .ok_or(FtlError::InvalidAddress)?;
        let res = if self.blocks.is_bad(i) {
            Ok(())
        } else {
            self.retire_block(i)
        };
        self.fold_failed_source(ppa);
        res
    }

    /// An erase failed: retire the block (it held no valid data when its
    /// erase was queued; anything placed in it since is re-placed).
    pub fn erase_failed(&mut self, block: BlockAddr) -> Result<(), FtlError> {
        let i = self.blocks.index(block).ok_or(FtlError::InvalidAddress)?;
        if self.blocks.is_bad(i) {
            return Ok(());
        }
        self.retire_block(i)
    }

    /// Marks block `i` bad and re-places its valid pages.
    fn retire_block(&mut self, i: usize) -> Result<(), FtlError> {
        let addr = self.blocks.addr(i);
        self.blocks.retire(i);
        // Queued programs of dead pages in this block are simply dropped.
        let blocks = &self.blocks;
        let dropped = self
            .ops
            .drop_programs_where(|p| p.block() == addr && blocks.owner(p).is_none());
        for m in dropped {
            self.release_ref(Some(m));
        }
        let mut res = Ok(());
        for (page, owner) in self.blocks.valid_pages(i) {
            match self.relocate(addr.page(page), owner) {
                Ok(true) => self.counters.pages_relocated += 1,
                Ok(false) => {}
                Err(e) => res = Err(e),
            }
        }
        res
    }

    /// Re-places valid page `ppa` of `owner` (out of a retired block, or
    /// a GC victim): true if a page was moved, false if it was not
    /// referenced any more (then just invalidated).
    pub(crate) fn relocate(&mut self, ppa: Ppa, owner: StreamId) -> Result<bool, FtlError> {
        let Some(slot) = self.stream(owner).ok().and_then(|s| s.find(ppa)) else {
            // Not referenced by its owner: nothing to keep.
            self.blocks.invalidate(ppa, self.counters.pages_programmed);
            return Ok(false);
        };
        let st = self.stream(owner)?;
        let die = match slot {
            Slot::Token(kind, g) => token_die(&self.geo, owner, kind, g),
            Slot::Dim { block, run } => {
                dim_die(&self.geo, owner, st.shape.dim_blocks(), block, run)
            }
        };
        // A fresh copy takes from the old page only the tokens it
        // holds (the layout a superseding program would use), so a
        // later flush of the same group or run into this still-queued
        // program keeps its rows: a whole-page copy would overwrite
        // them with the old page's empty ones.
        let layout = match slot {
            Slot::Token(_, g) => MergeLayout::TokenRows {
                tokens: if g < st.len / st.tpp {
                    st.tpp
                } else {
                    st.tok_persisted
                },
                row_bytes: 2 * u32::from(st.shape.head_dim),
            },
            Slot::Dim { run, .. } => MergeLayout::DimRows {
                rows: u32::from(st.shape.dim_group),
                stride: st.tpd,
                tokens: if run < st.len / st.tpd {
                    st.tpd
                } else {
                    st.dim_persisted
                },
            },
        };
        let new = self.allocate_near(die, owner)?;
        if let Some((data, merge)) = self.ops.take_pending(ppa) {
            // Moved as is: the merge reference moves with it.
            self.ops.push_program(new, data, merge);
        } else {
            let (data, merge) = match self.ops.retained(ppa) {
                Some(r) => (r.data.clone(), r.merge),
                None => (
                    vec![0u8; self.geo.page_size as usize],
                    Some(Merge { from: ppa, layout }),
                ),
            };
            self.queue_program(new, data, merge);
        }
        let st = self.stream_mut(owner)?;
        match slot {
            Slot::Token(kind, g) => st.map_mut(kind).set(g, new),
            Slot::Dim { block, run } => st.dim_map.set(block, run, new),
        }
        self.blocks.invalidate(ppa, self.counters.pages_programmed);
        Ok(true)
    }

    /// A page on `die` if it has room, else on the next die that has.
    fn allocate_near(&mut self, die: u32, owner: StreamId) -> Result<Ppa, FtlError> {
        let dies = self.geo.dies();
        for k in 0..dies {
            let d = (die + k) % dies;
            if self.blocks.available_pages(d) > 0 {
                return self.take_page(d, owner);
            }
        }
        Err(FtlError::NoSpace)
    }

    /// The failed page `ppa` was already superseded by a queued program
    /// that merges from it (the firmware appended before reporting): fold
    /// the retained image into that program so it no longer reads `ppa`.
    fn fold_failed_source(&mut self, ppa: Ppa) {
        if self.blocks.owner(ppa).is_some() {
            return;
        }
        let Some(r) = self.ops.retained(ppa).cloned() else {
            return;
        };
        for at in self.ops.merging_from(ppa) {
            let Some((data, merge)) = self.ops.program_at_mut(at) else {
                continue;
            };
            let Some(m) = *merge else { continue };
            let replaced = match r.merge {
                // The failed image was a whole-page copy of `q`: read the
                // same bytes from `q` instead.
                Some(Merge {
                    from: q,
                    layout: MergeLayout::Whole,
                }) => Some(Merge { from: q, ..m }),
                // Otherwise the retained image has the bytes the program
                // wanted from `ppa`, except what it merged in itself.
                other => {
                    m.apply(&r.data, data);
                    other
                }
            };
            *merge = replaced;
            self.add_ref(replaced);
            self.release_ref(Some(m));
        }
    }
}
