//! Reclaiming dead blocks: a full block with no valid page is erased
//! (an `Erase` op is queued) and returns to its die's free pool with its
//! erase count incremented.
//!
//! A dead block may still be needed as a merge source: a queued program, or
//! one drained in the last batch whose failure might still be reported,
//! reads one of its (invalid) pages to rebuild a superseded partial page.
//! Such blocks carry `merge_refs > 0`; they are parked in `deferred` and
//! erased once the references clear (at the latest two drains later).
//!
//! An erased block rejoins the free pool only at the drain after the batch
//! that carried its erase: until then an erase failure may still be
//! reported, and programming a block whose erase failed would corrupt it.

use crate::address::Ppa;
use crate::ftl::Ftl;
use crate::op::Merge;

impl Ftl {
    /// Marks a valid page invalid and reclaims its block if it died.
    pub(crate) fn invalidate_page(&mut self, ppa: Ppa) {
        if let Some(i) = self.blocks.invalidate(ppa, self.counters.pages_programmed) {
            self.try_reclaim(i);
        }
    }

    /// Erases block `i` if it is dead and unreferenced; parks it otherwise.
    pub(crate) fn try_reclaim(&mut self, i: usize) {
        if !self.blocks.is_dead(i) {
            return;
        }
        let Some(info) = self.blocks.info_mut(i) else {
            return;
        };
        if info.merge_refs > 0 {
            if !info.deferred {
                info.deferred = true;
                self.deferred.push(i);
            }
            return;
        }
        let addr = self.blocks.addr(i);
        self.ops.push_erase(addr);
        self.blocks.erase(i);
        self.erasing_queued.push(i);
        self.counters.blocks_erased += 1;
    }

    /// Takes a merge reference on the source block of `m`.
    pub(crate) fn add_ref(&mut self, m: Option<Merge>) {
        let Some(m) = m else { return };
        if let Some(info) = self
            .blocks
            .index(m.from.block())
            .and_then(|i| self.blocks.info_mut(i))
        {
            info.merge_refs += 1;
        }
    }

    /// Drops a merge reference; a parked block whose last reference goes
    /// is erased now.
    pub(crate) fn release_ref(&mut self, m: Option<Merge>) {
        let Some(m) = m else { return };
        let Some(i) = self.blocks.index(m.from.block()) else {
            return;
        };
        if let Some(info) = self.blocks.info_mut(i) {
            info.merge_refs = info.merge_refs.saturating_sub(1);
            if info.merge_refs == 0 && info.deferred {
                info.deferred = false;
                self.try_reclaim(i);
            }
        }
    }

    /// Retries every parked block (stale entries are skipped).
    pub(crate) fn reclaim_deferred(&mut self) {
        let mut list = core::mem::take(&mut self.deferred);
        list.sort_unstable();
        list.dedup();
        for i in list {
            let parked = self.blocks.info_mut(i).is_some_and(|b| {
                let was = b.deferred;
                b.deferred = false;
                was
            });
            if parked {
                self.try_reclaim(i);
            }
        }
    }
}
