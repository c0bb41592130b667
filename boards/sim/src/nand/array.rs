//! The NAND array's contents and rules: a sparse page store for the whole
//! geometry (only programmed pages take memory) plus each block's write
//! pointer, bad blocks and injected faults.
//!
//! Rules, enforced as [`NandError`]s: addresses inside the geometry, data of
//! exactly one page, program only erased pages, pages of a block in
//! increasing order (skipped pages stay unprogrammable until the erase).
//! Never-programmed pages read as 0xFF. Every block starts erased (model
//! choice: a factory-fresh device).

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use firmware::hal::NandStatus;
use ftl::{BlockAddr, Geometry, Ppa};

use crate::error::NandError;

/// A page as [`NandArray::read_shared`] hands it out (`None`: erased) and
/// how the read ends.
pub type SharedRead<'a> = (Option<&'a Arc<[u8]>>, NandStatus);

/// Pages and blocks of the flash.
#[derive(Debug)]
pub struct NandArray {
    geometry: Geometry,
    /// Shared, so that a read in flight can keep the page it read, without
    /// a copy, when a later erase of its block drops it here. Hashed with
    /// Fx, not SipHash: every page read looks its page up here, and the
    /// addresses come from the firmware, not from outside.
    pages: FxHashMap<Ppa, Arc<[u8]>>,
    /// Lowest programmable page of each block (absent = 0, erased).
    next_page: FxHashMap<BlockAddr, u32>,
    bad: FxHashSet<BlockAddr>,
    /// Grown bad blocks: programs and erases fail, pages already written
    /// still read back (the firmware must move them out).
    worn: FxHashSet<BlockAddr>,
    uncorrectable: FxHashSet<Ppa>,
    /// Successful erases per block, die by die (`Geometry::die_index`
    /// order): the wear the flash itself has seen.
    erases: Vec<u32>,
}

impl NandArray {
    /// Erased flash of `geometry` with `bad` factory bad blocks.
    pub fn new(geometry: Geometry, bad: &[BlockAddr]) -> Self {
        Self {
            geometry,
            pages: FxHashMap::default(),
            next_page: FxHashMap::default(),
            bad: bad.iter().copied().collect(),
            worn: FxHashSet::default(),
            uncorrectable: FxHashSet::default(),
            erases: vec![0; geometry.total_blocks() as usize],
        }
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Fails unless `ppa` is inside the geometry.
    pub fn check_page(&self, ppa: Ppa) -> Result<(), NandError> {
        if self.geometry.contains(ppa) {
            Ok(())
        } else {
            Err(NandError::OutOfRange(format!("{ppa:?}")))
        }
    }

    /// Fails unless `block` is inside the geometry.
    pub fn check_block(&self, block: BlockAddr) -> Result<(), NandError> {
        if self.geometry.contains_block(block) {
            Ok(())
        } else {
            Err(NandError::OutOfRange(format!("{block:?}")))
        }
    }

    /// The stored page (`None`: never programmed since the last erase,
    /// reads as 0xFF) and how the read ends.
    pub fn read(&self, ppa: Ppa) -> Result<(Option<&[u8]>, NandStatus), NandError> {
        let (page, status) = self.read_shared(ppa)?;
        Ok((page.map(|p| &p[..]), status))
    }

    /// [`Self::read`] with the page as a shared handle, which stays valid
    /// whatever happens to the array afterwards.
    pub fn read_shared(&self, ppa: Ppa) -> Result<SharedRead<'_>, NandError> {
        self.check_page(ppa)?;
        let status = if self.bad.contains(&ppa.block()) || self.uncorrectable.contains(&ppa) {
            NandStatus::Uncorrectable
        } else {
            NandStatus::Ok
        };
        Ok((self.pages.get(&ppa), status))
    }

    /// Programs `data` at `ppa`; a bad block fails the program (the page is
    /// used up all the same).
    pub fn program(&mut self, ppa: Ppa, data: &[u8]) -> Result<NandStatus, NandError> {
        self.check_page(ppa)?;
        let expected = self.geometry.page_size as usize;
        if data.len() != expected {
            return Err(NandError::DataLength {
                expected,
                actual: data.len(),
            });
        }
        let next = self.next_page.get(&ppa.block()).copied().unwrap_or(0);
        // A bad block fails every program with a status, whatever it
        // holds (an erase that failed leaves its old pages in place).
        if self.bad.contains(&ppa.block()) || self.worn.contains(&ppa.block()) {
            self.next_page.insert(ppa.block(), (ppa.page + 1).max(next));
            return Ok(NandStatus::ProgramFailed);
        }
        if self.pages.contains_key(&ppa) {
            return Err(NandError::NotErased(format!("{ppa:?}")));
        }
        if ppa.page < next {
            return Err(NandError::OutOfOrder {
                page: ppa.page,
                next,
            });
        }
        self.next_page.insert(ppa.block(), ppa.page + 1);
        self.pages.insert(ppa, data.into());
        Ok(NandStatus::Ok)
    }

    /// Erases `block` (a bad block fails the erase and keeps its contents).
    pub fn erase(&mut self, block: BlockAddr) -> Result<NandStatus, NandError> {
        self.check_block(block)?;
        if self.bad.contains(&block) || self.worn.contains(&block) {
            return Ok(NandStatus::EraseFailed);
        }
        if let Some(next) = self.next_page.remove(&block) {
            for page in 0..next {
                self.pages.remove(&block.page(page));
            }
        }
        self.uncorrectable.retain(|p| p.block() != block);
        let i = self.block_index(block);
        if let Some(n) = self.erases.get_mut(i) {
            *n += 1;
        }
        Ok(NandStatus::Ok)
    }

    /// Successful erases of each block so far, die by die.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erases
    }

    fn block_index(&self, b: BlockAddr) -> usize {
        let g = &self.geometry;
        g.die_index(b.channel, b.way) as usize * g.blocks_per_die as usize + b.block as usize
    }

    /// Fault hook: reads of `ppa` fail ECC until its block is erased.
    pub fn inject_uncorrectable(&mut self, ppa: Ppa) {
        self.uncorrectable.insert(ppa);
    }

    /// Fault hook: reads of `ppa` succeed again (a fault that has passed).
    pub fn clear_uncorrectable(&mut self, ppa: Ppa) {
        self.uncorrectable.remove(&ppa);
    }

    /// Fault hook: `block` goes bad (grown bad block): programs and erases
    /// fail, reads are uncorrectable.
    pub fn inject_bad_block(&mut self, block: BlockAddr) {
        self.bad.insert(block);
    }

    /// Fault hook: `block` wears out (a grown bad block): its programs
    /// and erases fail from now on; what it holds still reads back.
    pub fn inject_worn_block(&mut self, block: BlockAddr) {
        self.worn.insert(block);
    }

    /// Pages holding data.
    pub fn programmed_pages(&self) -> usize {
        self.pages.len()
    }

    /// Addresses of the pages holding data (fault injection in tests).
    pub fn programmed(&self) -> Vec<Ppa> {
        self.pages.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry {
            channels: 2,
            ways: 2,
            blocks_per_die: 4,
            pages_per_block: 4,
            page_size: 4096,
        }
    }

    fn ppa(block: u32, page: u32) -> Ppa {
        Ppa {
            channel: 1,
            way: 0,
            block,
            page,
        }
    }

    #[test]
    fn program_order_rules() {
        let mut a = NandArray::new(geo(), &[]);
        let page = vec![1u8; 4096];
        assert_eq!(a.program(ppa(0, 0), &page), Ok(NandStatus::Ok));
        assert!(matches!(
            a.program(ppa(0, 0), &page),
            Err(NandError::NotErased(_))
        ));
        // Skipping forward is allowed, going back is not.
        assert_eq!(a.program(ppa(0, 2), &page), Ok(NandStatus::Ok));
        assert_eq!(
            a.program(ppa(0, 1), &page),
            Err(NandError::OutOfOrder { page: 1, next: 3 })
        );
        assert_eq!(
            a.program(ppa(0, 3), &page[..100]),
            Err(NandError::DataLength {
                expected: 4096,
                actual: 100
            })
        );
        assert!(matches!(
            a.program(ppa(0, 4), &page),
            Err(NandError::OutOfRange(_))
        ));
        let far = Ppa {
            channel: 2,
            way: 0,
            block: 0,
            page: 0,
        };
        assert!(matches!(
            a.program(far, &page),
            Err(NandError::OutOfRange(_))
        ));
        assert_eq!(a.programmed_pages(), 2);
    }

    #[test]
    fn erase_resets_the_block_and_unwritten_pages_read_ff() {
        let mut a = NandArray::new(geo(), &[]);
        let page = vec![7u8; 4096];
        a.program(ppa(1, 0), &page).unwrap();
        assert_eq!(
            a.read(ppa(1, 0)).unwrap(),
            (Some(&page[..]), NandStatus::Ok)
        );
        assert_eq!(a.read(ppa(1, 1)).unwrap(), (None, NandStatus::Ok));
        assert_eq!(a.erase(ppa(1, 0).block()), Ok(NandStatus::Ok));
        assert_eq!(a.read(ppa(1, 0)).unwrap().0, None);
        assert_eq!(a.program(ppa(1, 0), &page), Ok(NandStatus::Ok));
        let b = ppa(1, 0).block();
        let i = geo().die_index(b.channel, b.way) as usize * geo().blocks_per_die as usize
            + b.block as usize;
        assert_eq!(a.erase_counts()[i], 1, "the erase counted on its block");
        assert_eq!(a.erase_counts().iter().sum::<u32>(), 1);
        let bad_block = BlockAddr {
            channel: 0,
            way: 2,
            block: 0,
        };
        assert!(matches!(a.erase(bad_block), Err(NandError::OutOfRange(_))));
    }

    #[test]
    fn faults() {
        let bad = ppa(2, 0).block();
        let mut a = NandArray::new(geo(), &[bad]);
        let page = vec![0u8; 4096];
        assert_eq!(a.program(ppa(2, 0), &page), Ok(NandStatus::ProgramFailed));
        assert_eq!(a.erase(bad), Ok(NandStatus::EraseFailed));
        assert_eq!(a.read(ppa(2, 0)).unwrap().1, NandStatus::Uncorrectable);
        a.program(ppa(3, 0), &page).unwrap();
        a.inject_uncorrectable(ppa(3, 0));
        assert_eq!(a.read(ppa(3, 0)).unwrap().1, NandStatus::Uncorrectable);
        a.erase(ppa(3, 0).block()).unwrap();
        assert_eq!(a.read(ppa(3, 0)).unwrap().1, NandStatus::Ok);
        a.inject_bad_block(ppa(3, 0).block());
        assert_eq!(a.program(ppa(3, 0), &page), Ok(NandStatus::ProgramFailed));
        // A block gone bad with its pages in place (its erase failed):
        // a program on it fails with a status, not as a controller error.
        let held = ppa(1, 1);
        a.program(held, &[1u8; 4096]).unwrap();
        a.inject_worn_block(held.block());
        assert_eq!(a.erase(held.block()), Ok(NandStatus::EraseFailed));
        assert_eq!(a.program(held, &page), Ok(NandStatus::ProgramFailed));
        assert_eq!(a.read(held).unwrap().0.map(|p| p[0]), Some(1));
    }
}
