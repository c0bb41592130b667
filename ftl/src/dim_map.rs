//! Hidden-dim-indexed mapping of one stream's K copy: (dim block `b`, run
//! `t`) → page holding dims `[b·m, (b+1)·m)` of tokens `[t·N, (t+1)·N)`,
//! dim-major `[m][N]`. Stored run-major (`t·blocks + b`); all blocks of a
//! run are persisted together, so the last run may be partial for all.

use alloc::vec::Vec;

use crate::address::Ppa;

#[derive(Clone, Debug)]
pub(crate) struct DimMap {
    blocks: u32,
    pages: Vec<Ppa>,
}

impl DimMap {
    pub fn new(blocks: u32) -> DimMap {
        DimMap {
            blocks,
            pages: Vec::new(),
        }
    }

    fn slot(&self, block: u32, run: u32) -> usize {
        run as usize * self.blocks as usize + block as usize
    }

    pub fn get(&self, block: u32, run: u32) -> Option<Ppa> {
        if block >= self.blocks {
            return None;
        }
        self.pages.get(self.slot(block, run)).copied()
    }

    /// Points (block, run) at `ppa`; runs are filled in order, block by
    /// block, so the slot is either existing or the next one.
    pub fn set(&mut self, block: u32, run: u32, ppa: Ppa) {
        if block >= self.blocks {
            return;
        }
        let s = self.slot(block, run);
        let len = self.pages.len();
        if s < len {
            self.pages[s] = ppa;
        } else if s == len {
            self.pages.push(ppa);
        }
    }

    /// (block, run) of page `ppa`, if this map holds it.
    pub fn find(&self, ppa: Ppa) -> Option<(u32, u32)> {
        let b = self.blocks.max(1) as usize;
        self.pages
            .iter()
            .position(|&p| p == ppa)
            .map(|s| ((s % b) as u32, (s / b) as u32))
    }

    pub fn pages(&self) -> &[Ppa] {
        &self.pages
    }
}
