//! Token-indexed mapping of one stream's K (or V): token group `g` (tokens
//! `[g·T, (g+1)·T)`, row-major `[token][head_dim]` fp16 in one page) → the
//! page currently holding it. The last entry may be a partial page (the
//! group's first `persisted` tokens); the rest of that group is in DRAM.

use alloc::vec::Vec;

use crate::address::Ppa;

#[derive(Clone, Debug, Default)]
pub(crate) struct TokenMap {
    pages: Vec<Ppa>,
}

impl TokenMap {
    /// Page of group `g`, if any of it is in flash.
    pub fn get(&self, g: u32) -> Option<Ppa> {
        self.pages.get(g as usize).copied()
    }

    /// Points group `g` at `ppa`: replaces the entry or appends the next.
    pub fn set(&mut self, g: u32, ppa: Ppa) {
        let (g, len) = (g as usize, self.pages.len());
        // Groups are persisted in order; a gap cannot happen.
        if g < len {
            self.pages[g] = ppa;
        } else if g == len {
            self.pages.push(ppa);
        }
    }

    /// Group whose page is `ppa`, if this map holds it.
    pub fn find(&self, ppa: Ppa) -> Option<u32> {
        self.pages.iter().position(|&p| p == ppa).map(|g| g as u32)
    }

    pub fn pages(&self) -> &[Ppa] {
        &self.pages
    }
}
