//! A self-check of the FTL's bookkeeping, for tests and diagnostics: every
//! map entry names a distinct page that its block says belongs to that
//! stream, each block's valid count is what the maps point into it, and
//! the free pools, erase lists and DRAM accounting agree with the block
//! and stream tables. One pass over the maps and the block table
//! (O(pages)); it changes nothing.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::address::{BlockAddr, Ppa};
use crate::allocator::BlockState;
use crate::ftl::Ftl;
use crate::stream::StreamId;

/// The first inconsistency [`Ftl::audit`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditError {
    /// A map names a page outside the geometry.
    OutOfGeometry {
        /// The stream whose map holds it.
        stream: StreamId,
        /// The page.
        ppa: Ppa,
    },
    /// Two map entries (of one stream or of two) name the same page.
    OwnedTwice {
        /// The page.
        ppa: Ppa,
    },
    /// A map names a page of a block that holds no live data: free, being
    /// erased, lent or retired.
    UnusableBlock {
        /// The stream whose map holds it.
        stream: StreamId,
        /// The page.
        ppa: Ppa,
    },
    /// A map names a page its block records as another stream's, invalid
    /// or never programmed.
    OwnerMismatch {
        /// The stream whose map holds it.
        stream: StreamId,
        /// The page.
        ppa: Ppa,
    },
    /// A stream's maps or DRAM tails do not cover exactly its length.
    StreamLength {
        /// The stream.
        stream: StreamId,
    },
    /// A block's valid-page count differs from its owned pages or from
    /// the map entries pointing into it.
    ValidCount {
        /// The block.
        block: BlockAddr,
        /// Its valid-page counter.
        recorded: u32,
        /// Pages whose owner code names a stream.
        owned: u32,
        /// Map entries pointing into it.
        mapped: u32,
    },
    /// A free, erasing or lent block still carries pages, a write pointer
    /// or a merge reference (a program would read an erased page).
    DirtyFree {
        /// The block.
        block: BlockAddr,
    },
    /// A die has more than one open block.
    OpenBlocks {
        /// The die (channel-first numbering).
        die: u32,
    },
    /// A die's free-pool counter differs from its free blocks.
    FreeCount {
        /// The die (channel-first numbering).
        die: u32,
        /// The counter.
        recorded: u32,
        /// Blocks in the free state.
        counted: u32,
    },
    /// The bad-block counter differs from the retired blocks.
    BadCount {
        /// The counter.
        recorded: u64,
        /// Blocks in the bad state.
        counted: u64,
    },
    /// A block's erase is lost track of: erasing but in no erase list,
    /// listed but not erasing, or dead, unreferenced and never erased.
    EraseTracking {
        /// The block.
        block: BlockAddr,
    },
    /// A block parked for a deferred erase is not dead, has no merge
    /// reference or is missing from the parked list.
    DeferredTracking {
        /// The block.
        block: BlockAddr,
    },
    /// A block marked as holding old-life data is in use (its erase was
    /// skipped).
    UnerasedInUse {
        /// The block.
        block: BlockAddr,
    },
    /// The DRAM counter differs from what the streams' tails hold.
    DramAccounting {
        /// The counter.
        recorded: u64,
        /// Bytes of the tails.
        counted: u64,
    },
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditError::OutOfGeometry { stream, ppa } => {
                write!(f, "stream {} maps {ppa:?} outside the geometry", stream.0)
            }
            AuditError::OwnedTwice { ppa } => write!(f, "{ppa:?} is mapped twice"),
            AuditError::UnusableBlock { stream, ppa } => write!(
                f,
                "stream {} maps {ppa:?} in a free, erasing, lent or bad block",
                stream.0
            ),
            AuditError::OwnerMismatch { stream, ppa } => write!(
                f,
                "stream {} maps {ppa:?}, which its block does not give it",
                stream.0
            ),
            AuditError::StreamLength { stream } => write!(
                f,
                "stream {}: maps or DRAM tails disagree with its length",
                stream.0
            ),
            AuditError::ValidCount {
                block,
                recorded,
                owned,
                mapped,
            } => write!(
                f,
                "{block:?}: {recorded} valid pages recorded, {owned} owned, {mapped} mapped"
            ),
            AuditError::DirtyFree { block } => {
                write!(f, "{block:?} is free, erasing or lent but still holds data")
            }
            AuditError::OpenBlocks { die } => write!(f, "die {die} has several open blocks"),
            AuditError::FreeCount {
                die,
                recorded,
                counted,
            } => write!(
                f,
                "die {die}: {recorded} free blocks recorded, {counted} in the free state"
            ),
            AuditError::BadCount { recorded, counted } => write!(
                f,
                "{recorded} bad blocks recorded, {counted} in the bad state"
            ),
            AuditError::EraseTracking { block } => {
                write!(f, "{block:?}: erase bookkeeping inconsistent")
            }
            AuditError::DeferredTracking { block } => {
                write!(f, "{block:?}: deferred erase bookkeeping inconsistent")
            }
            AuditError::UnerasedInUse { block } => {
                write!(f, "{block:?} holds old-life data but is in use")
            }
            AuditError::DramAccounting { recorded, counted } => write!(
                f,
                "{recorded} DRAM bytes recorded, the tails hold {counted}"
            ),
        }
    }
}

impl core::error::Error for AuditError {}

impl Ftl {
    /// Checks the FTL's bookkeeping for consistency (see the module docs);
    /// the first inconsistency found is returned.
    pub fn audit(&self) -> Result<(), AuditError> {
        let mapped = self.audit_streams()?;
        self.audit_blocks(&mapped)
    }

    /// Every stream's maps and tails; returns the map entries per block.
    fn audit_streams(&self) -> Result<Vec<u32>, AuditError> {
        let mut all: Vec<Ppa> = Vec::new();
        let mut dram = 0u64;
        for (slot, st) in self.streams.iter().enumerate() {
            let Some(st) = st else { continue };
            let stream = StreamId(slot as u32);
            let hd = st.hd();
            let groups = (st.len / st.tpp + u32::from(st.tok_persisted > 0)) as usize;
            let runs = (st.len / st.tpd + u32::from(st.dim_persisted > 0)) as usize;
            let covered = st.k_map.pages().len() == groups
                && st.v_map.pages().len() == groups
                && st.dim_map.pages().len() == runs * st.shape.dim_blocks() as usize
                && st.tok_persisted <= st.len % st.tpp
                && st.dim_persisted <= st.len % st.tpd
                && st.k_tail.len() == st.tok_held() as usize * hd
                && st.v_tail.len() == st.tok_held() as usize * hd
                && st.dim_tail.held() == st.dim_held() as usize;
            if !covered {
                return Err(AuditError::StreamLength { stream });
            }
            dram += st.tok_bytes() + st.dim_bytes();
            for ppa in st.all_pages() {
                self.audit_page(stream, ppa)?;
                all.push(ppa);
            }
        }
        if dram != self.dram_used {
            return Err(AuditError::DramAccounting {
                recorded: self.dram_used,
                counted: dram,
            });
        }
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
            return Err(AuditError::OwnedTwice { ppa: w[0] });
        }
        let mut per_block = vec![0u32; self.geo.total_blocks() as usize];
        for ppa in all {
            if let Some(n) = self
                .blocks
                .index(ppa.block())
                .and_then(|i| per_block.get_mut(i))
            {
                *n += 1;
            }
        }
        Ok(per_block)
    }

    /// One map entry of `stream`: inside the geometry, in a block that
    /// holds data, given to `stream` by its block.
    fn audit_page(&self, stream: StreamId, ppa: Ppa) -> Result<(), AuditError> {
        let info = self
            .blocks
            .index(ppa.block())
            .filter(|_| self.geo.contains(ppa))
            .and_then(|i| self.blocks.info(i))
            .ok_or(AuditError::OutOfGeometry { stream, ppa })?;
        if !matches!(info.state, BlockState::Open | BlockState::Full) {
            return Err(AuditError::UnusableBlock { stream, ppa });
        }
        if ppa.page >= info.write_ptr || self.blocks.owner(ppa) != Some(stream) {
            return Err(AuditError::OwnerMismatch { stream, ppa });
        }
        Ok(())
    }

    /// Every block against the map counts, the pools and the erase lists.
    fn audit_blocks(&self, mapped: &[u32]) -> Result<(), AuditError> {
        let n = mapped.len();
        let flags = |list: &[usize]| {
            let mut f = vec![false; n];
            for &i in list {
                if let Some(x) = f.get_mut(i) {
                    *x = true;
                }
            }
            f
        };
        let mut erase_listed = flags(&self.erasing_queued);
        for (i, x) in flags(&self.erasing_drained).into_iter().enumerate() {
            erase_listed[i] |= x;
        }
        let parked = flags(&self.deferred);
        let bpd = self.geo.blocks_per_die as usize;
        let mut bad = 0u64;
        for die in 0..self.geo.dies() {
            let (mut free, mut open) = (0u32, 0u32);
            for i in die as usize * bpd..(die as usize + 1) * bpd {
                let Some(info) = self.blocks.info(i) else {
                    continue;
                };
                let block = self.blocks.addr(i);
                let owned = self.blocks.valid_pages(i).len() as u32;
                let m = mapped.get(i).copied().unwrap_or(0);
                if info.valid != m || owned != m {
                    return Err(AuditError::ValidCount {
                        block,
                        recorded: info.valid,
                        owned,
                        mapped: m,
                    });
                }
                let listed = erase_listed.get(i).copied().unwrap_or(false);
                let dead = info.state == BlockState::Full && info.valid == 0;
                let tracked = match info.state {
                    BlockState::Free => {
                        free += 1;
                        !listed
                    }
                    BlockState::Erasing => listed,
                    BlockState::Open => {
                        open += 1;
                        !listed
                    }
                    // A dead block is erased at once or parked.
                    BlockState::Full => !listed && (!dead || info.deferred),
                    // An erase that failed leaves a retired block listed.
                    BlockState::Bad => {
                        bad += 1;
                        true
                    }
                    // Lent to the journal: outside the FTL's erases.
                    BlockState::Lent => !listed,
                };
                if !tracked {
                    return Err(AuditError::EraseTracking { block });
                }
                if matches!(
                    info.state,
                    BlockState::Free | BlockState::Erasing | BlockState::Lent
                ) && (info.write_ptr != 0 || info.valid != 0 || info.merge_refs != 0)
                {
                    return Err(AuditError::DirtyFree { block });
                }
                let in_park = parked.get(i).copied().unwrap_or(false);
                if info.deferred && !(dead && info.merge_refs > 0 && in_park) {
                    return Err(AuditError::DeferredTracking { block });
                }
                if info.unerased && !matches!(info.state, BlockState::Free | BlockState::Bad) {
                    return Err(AuditError::UnerasedInUse { block });
                }
            }
            if open > 1 {
                return Err(AuditError::OpenBlocks { die });
            }
            let recorded = self.blocks.free_on(die);
            if recorded != free {
                return Err(AuditError::FreeCount {
                    die,
                    recorded,
                    counted: free,
                });
            }
        }
        if bad != self.blocks.bad_blocks() {
            return Err(AuditError::BadCount {
                recorded: self.blocks.bad_blocks(),
                counted: bad,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;

    use super::AuditError;
    use crate::allocator::BlockState;
    use crate::testnand::TestNand;
    use crate::{Ftl, FtlConfig, FtlError, Geometry, Ppa, StreamId, StreamShape};

    const GEO: Geometry = Geometry {
        channels: 2,
        ways: 1,
        blocks_per_die: 12,
        pages_per_block: 8,
        page_size: 4096,
    };

    fn ftl() -> Ftl {
        let mut f = Ftl::new(FtlConfig {
            geometry: GEO,
            // Small enough that tails are flushed as partial pages.
            dram_budget: 3000,
            max_streams: 16,
            bad_blocks: Vec::new(),
        })
        .unwrap();
        let mut g = f.gc_config();
        g.low_free = 10;
        g.critical_free = 1;
        f.set_gc(g).unwrap();
        f
    }

    /// Rounds of appends over up to four streams of two shapes, closes,
    /// background GC and drains, the audit run after every call.
    fn work(f: &mut Ftl, nand: &mut TestNand, rounds: u16) -> Vec<StreamId> {
        let mut ids: Vec<StreamId> = Vec::new();
        for round in 0..rounds {
            if ids.len() < 4 {
                let dim_group = if round % 2 == 0 { 4 } else { 8 };
                let shape = StreamShape {
                    head_dim: 64,
                    dim_group,
                };
                ids.push(f.open_stream(shape).unwrap());
                f.audit().unwrap();
            }
            for (j, &id) in ids.iter().enumerate() {
                let n = 1 + (usize::from(round) * 7 + j * 13) % 40;
                let k = vec![round; n * 64];
                let v = vec![!round; n * 64];
                match f.append(id, &k, &v) {
                    Ok(()) | Err(FtlError::NoSpace) => {}
                    Err(e) => panic!("append: {e}"),
                }
                f.audit().unwrap();
            }
            if round % 3 == 2 {
                f.close_stream(ids.remove(0)).unwrap();
                f.audit().unwrap();
            }
            f.gc_step().unwrap();
            f.audit().unwrap();
            nand.run(f).unwrap();
            f.audit().unwrap();
        }
        ids
    }

    #[test]
    fn a_busy_ftl_passes_at_every_step() {
        let mut f = ftl();
        let mut nand = TestNand::new(GEO);
        nand.fail_program.insert(Ppa {
            channel: 0,
            way: 0,
            block: 0,
            page: 3,
        });
        work(&mut f, &mut nand, 40);
        let s = f.stats();
        assert!(s.gc_blocks > 0 && s.pages_relocated > 0, "{s:?}");
        assert!(
            s.partial_pages_written > 0 && s.pages_superseded > 0,
            "{s:?}"
        );
        // The next life on the same flash: blocks erased as they open.
        let mut f = ftl();
        f.assume_unerased();
        f.audit().unwrap();
        work(&mut f, &mut nand, 20);
        assert!(f.stats().blocks_erased > 0);
    }

    /// A busy FTL, drained, with a stream holding a full K page.
    fn busy() -> (Ftl, StreamId, StreamId) {
        let mut f = ftl();
        let mut nand = TestNand::new(GEO);
        let ids = work(&mut f, &mut nand, 10);
        let full: Vec<StreamId> = ids
            .into_iter()
            .filter(|&id| f.len(id).unwrap() >= 32)
            .collect();
        assert!(full.len() >= 2);
        f.audit().unwrap();
        (f, full[0], full[1])
    }

    fn k_page(f: &Ftl, id: StreamId, g: u32) -> Ppa {
        f.stream(id).unwrap().k_map.get(g).unwrap()
    }

    #[test]
    fn catches_a_page_mapped_twice_by_one_stream() {
        let (mut f, a, _) = busy();
        let p = k_page(&f, a, 0);
        f.stream_mut(a).unwrap().v_map.set(0, p);
        assert_eq!(f.audit(), Err(AuditError::OwnedTwice { ppa: p }));
    }

    #[test]
    fn catches_a_page_mapped_by_two_streams() {
        let (mut f, a, b) = busy();
        let p = k_page(&f, a, 0);
        f.stream_mut(b).unwrap().k_map.set(0, p);
        assert_eq!(
            f.audit(),
            Err(AuditError::OwnerMismatch { stream: b, ppa: p })
        );
    }

    #[test]
    fn catches_a_page_in_a_free_block() {
        let (mut f, a, _) = busy();
        let i = (0..GEO.total_blocks() as usize)
            .find(|&i| f.blocks.is_free(i))
            .unwrap();
        let p = f.blocks.addr(i).page(0);
        f.stream_mut(a).unwrap().k_map.set(0, p);
        assert_eq!(
            f.audit(),
            Err(AuditError::UnusableBlock { stream: a, ppa: p })
        );
    }

    #[test]
    fn catches_counters_that_drift() {
        let (mut f, a, _) = busy();
        let p = k_page(&f, a, 0);
        let i = f.blocks.index(p.block()).unwrap();
        f.blocks.info_mut(i).unwrap().valid += 1;
        assert!(matches!(
            f.audit(),
            Err(AuditError::ValidCount { block, .. }) if block == p.block()
        ));

        let (mut f, _, _) = busy();
        f.dram_used += 2;
        assert!(matches!(f.audit(), Err(AuditError::DramAccounting { .. })));

        // A free block retired behind the pool counter's back.
        let (mut f, _, _) = busy();
        let i = (0..GEO.total_blocks() as usize)
            .find(|&i| f.blocks.is_free(i))
            .unwrap();
        f.blocks.info_mut(i).unwrap().state = BlockState::Bad;
        assert!(matches!(f.audit(), Err(AuditError::FreeCount { .. })));

        // A block marked as holding old-life data, opened without erase.
        let (mut f, a, _) = busy();
        let i = f.blocks.index(k_page(&f, a, 0).block()).unwrap();
        f.blocks.info_mut(i).unwrap().unerased = true;
        assert!(matches!(f.audit(), Err(AuditError::UnerasedInUse { .. })));
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let p = Ppa {
            channel: 1,
            way: 0,
            block: 5,
            page: 2,
        };
        let s = alloc::format!("{}", AuditError::OwnedTwice { ppa: p });
        assert!(s.contains("block: 5") && s.contains("twice"), "{s}");
    }
}
