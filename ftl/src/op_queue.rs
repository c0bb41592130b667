//! The queue of flash operations between the FTL and the firmware.
//!
//! * pending: ops not yet drained, in execution order. A pending program's
//!   image is still the FTL's to change: a later flush of the same group
//!   updates it in place instead of superseding it, and a retired block's
//!   pending programs are moved elsewhere. Removed entries leave a
//!   tombstone so indices stay stable until the next drain.
//! * retained: copies of the programs handed out by the last `drain`. The
//!   firmware reports program failures of a batch before draining again,
//!   and re-placing a failed page needs its image (the FTL keeps no other
//!   copy of the data). Dropped at the next drain.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::address::{BlockAddr, Ppa};
use crate::op::{FlashOp, Merge};

/// A drained program kept until the next drain.
#[derive(Clone, Debug)]
pub(crate) struct Retained {
    pub data: Vec<u8>,
    pub merge: Option<Merge>,
}

#[derive(Debug, Default)]
pub(crate) struct OpQueue {
    ops: Vec<Option<FlashOp>>,
    /// Pending program per target page (the latest one if a page was
    /// erased and reused within one batch).
    index: BTreeMap<Ppa, usize>,
    live: usize,
    retained: BTreeMap<Ppa, Retained>,
    /// Merge sources of retained programs displaced by a later program of
    /// the same page in one batch; released with the batch.
    orphans: Vec<Merge>,
}

impl OpQueue {
    pub fn push_program(&mut self, ppa: Ppa, data: Vec<u8>, merge_from: Option<Merge>) {
        self.index.insert(ppa, self.ops.len());
        self.ops.push(Some(FlashOp::Program {
            ppa,
            data,
            merge_from,
        }));
        self.live += 1;
    }

    pub fn push_erase(&mut self, block: BlockAddr) {
        self.ops.push(Some(FlashOp::Erase { block }));
        self.live += 1;
    }

    pub fn live(&self) -> usize {
        self.live
    }

    /// Whether `ppa`'s program is still pending.
    pub fn is_pending(&self, ppa: Ppa) -> bool {
        self.index.contains_key(&ppa)
    }

    /// The pending program at queue position `i`.
    pub fn program_at_mut(&mut self, i: usize) -> Option<(&mut Vec<u8>, &mut Option<Merge>)> {
        match self.ops.get_mut(i)? {
            Some(FlashOp::Program {
                data, merge_from, ..
            }) => Some((data, merge_from)),
            _ => None,
        }
    }

    /// The pending program of page `ppa`.
    pub fn pending_mut(&mut self, ppa: Ppa) -> Option<(&mut Vec<u8>, &mut Option<Merge>)> {
        let i = *self.index.get(&ppa)?;
        self.program_at_mut(i)
    }

    /// Removes `ppa`'s pending program, returning its image and merge.
    pub fn take_pending(&mut self, ppa: Ppa) -> Option<(Vec<u8>, Option<Merge>)> {
        let i = self.index.remove(&ppa)?;
        match self.ops.get_mut(i)?.take() {
            Some(FlashOp::Program {
                data, merge_from, ..
            }) => {
                self.live -= 1;
                Some((data, merge_from))
            }
            other => {
                // Not a program: put it back untouched.
                if let Some(slot) = self.ops.get_mut(i) {
                    *slot = other;
                }
                None
            }
        }
    }

    /// Removes every pending program whose target satisfies `drop`,
    /// returning their merge sources (so the caller can release them).
    pub fn drop_programs_where(&mut self, mut drop: impl FnMut(Ppa) -> bool) -> Vec<Merge> {
        let mut merges = Vec::new();
        for (i, slot) in self.ops.iter_mut().enumerate() {
            if let Some(FlashOp::Program {
                ppa, merge_from, ..
            }) = slot
                && drop(*ppa)
            {
                if self.index.get(ppa) == Some(&i) {
                    self.index.remove(ppa);
                }
                merges.extend(merge_from.take());
                *slot = None;
                self.live -= 1;
            }
        }
        merges
    }

    /// Queue positions of pending programs that merge from `from`.
    pub fn merging_from(&self, from: Ppa) -> Vec<usize> {
        self.ops
            .iter()
            .enumerate()
            .filter_map(|(i, op)| match op {
                Some(FlashOp::Program {
                    merge_from: Some(m),
                    ..
                }) if m.from == from => Some(i),
                _ => None,
            })
            .collect()
    }

    /// The image and merge of a program drained in the last batch.
    pub fn retained(&self, ppa: Ppa) -> Option<&Retained> {
        self.retained.get(&ppa)
    }

    /// Forgets the merge source of `ppa`'s retained program (its data is
    /// dead), returning it for release.
    pub fn clear_retained_merge(&mut self, ppa: Ppa) -> Option<Merge> {
        self.retained.get_mut(&ppa)?.merge.take()
    }

    /// Drops the retained copies of the previous batch, returning their
    /// merge sources (the firmware has executed that batch and reported
    /// its failures, so the sources are no longer needed).
    pub fn release_retained(&mut self) -> Vec<Merge> {
        let old = core::mem::take(&mut self.retained);
        let mut merges = core::mem::take(&mut self.orphans);
        merges.extend(old.into_values().filter_map(|r| r.merge));
        merges
    }

    /// Hands out the pending ops in order and retains copies of their
    /// programs (merge references move from pending to retained).
    pub fn drain(&mut self) -> Vec<FlashOp> {
        let ops: Vec<FlashOp> = core::mem::take(&mut self.ops)
            .into_iter()
            .flatten()
            .collect();
        self.index.clear();
        self.live = 0;
        for op in &ops {
            if let FlashOp::Program {
                ppa,
                data,
                merge_from,
            } = op
            {
                let prev = self.retained.insert(
                    *ppa,
                    Retained {
                        data: data.clone(),
                        merge: *merge_from,
                    },
                );
                // A page reused within one batch: the earlier program's
                // page was dead, so its merge source needs no protection.
                // (Its reference is released with the batch anyway.)
                if let Some(p) = prev {
                    self.orphans.extend(p.merge);
                }
            }
        }
        ops
    }
}
