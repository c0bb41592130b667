//! Per-stream metadata: shape, length, token and dim maps, DRAM tails and
//! how much of the current group / run is already persisted.
//!
//! Sized at open except the maps, which grow one entry per page written
//! (bounded by flash capacity); tails are bounded by the DRAM budget.

use alloc::vec::Vec;

use crate::address::Ppa;
use crate::dim_map::DimMap;
use crate::group_buffer::DimTail;
use crate::stream::{Kind, StreamShape};
use crate::token_map::TokenMap;

/// Which page of a stream a physical page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Token(Kind, u32),
    Dim { block: u32, run: u32 },
}

#[derive(Clone, Debug)]
pub(crate) struct StreamState {
    pub shape: StreamShape,
    /// T: tokens per token page.
    pub tpp: u32,
    /// N: tokens per dim page.
    pub tpd: u32,
    pub len: u32,
    pub k_map: TokenMap,
    pub v_map: TokenMap,
    pub dim_map: DimMap,
    /// Tokens of the current group already in flash (K and V alike: their
    /// tails are always flushed together).
    pub tok_persisted: u32,
    pub k_tail: Vec<u16>,
    pub v_tail: Vec<u16>,
    /// Tokens of the current run already in flash (all dim blocks alike).
    pub dim_persisted: u32,
    pub dim_tail: DimTail,
    /// A page of the stream was lost (its move or merge could not read
    /// its source): lookups fail with `FtlError::DataLost`.
    pub damaged: bool,
}

impl StreamState {
    pub fn new(shape: StreamShape, tpp: u32, tpd: u32) -> StreamState {
        StreamState {
            shape,
            tpp,
            tpd,
            len: 0,
            k_map: TokenMap::default(),
            v_map: TokenMap::default(),
            dim_map: DimMap::new(shape.dim_blocks()),
            tok_persisted: 0,
            k_tail: Vec::new(),
            v_tail: Vec::new(),
            dim_persisted: 0,
            dim_tail: DimTail::default(),
            damaged: false,
        }
    }

    pub fn hd(&self) -> usize {
        usize::from(self.shape.head_dim)
    }

    /// Tokens of the current group held in DRAM.
    pub fn tok_held(&self) -> u32 {
        (self.len % self.tpp).saturating_sub(self.tok_persisted)
    }

    /// Tokens of the current run held in DRAM.
    pub fn dim_held(&self) -> u32 {
        (self.len % self.tpd).saturating_sub(self.dim_persisted)
    }

    /// DRAM bytes of the K + V tails.
    pub fn tok_bytes(&self) -> u64 {
        tok_bytes(self.shape, self.tok_held())
    }

    /// DRAM bytes of the dim tail.
    pub fn dim_bytes(&self) -> u64 {
        dim_bytes(self.shape, self.dim_held())
    }

    pub fn map(&self, kind: Kind) -> &TokenMap {
        match kind {
            Kind::K => &self.k_map,
            Kind::V => &self.v_map,
        }
    }

    pub fn map_mut(&mut self, kind: Kind) -> &mut TokenMap {
        match kind {
            Kind::K => &mut self.k_map,
            Kind::V => &mut self.v_map,
        }
    }

    /// Which of this stream's pages `ppa` is.
    pub fn find(&self, ppa: Ppa) -> Option<Slot> {
        if let Some(g) = self.k_map.find(ppa) {
            return Some(Slot::Token(Kind::K, g));
        }
        if let Some(g) = self.v_map.find(ppa) {
            return Some(Slot::Token(Kind::V, g));
        }
        self.dim_map
            .find(ppa)
            .map(|(block, run)| Slot::Dim { block, run })
    }

    /// Every flash page this stream references.
    pub fn all_pages(&self) -> impl Iterator<Item = Ppa> + '_ {
        self.k_map
            .pages()
            .iter()
            .chain(self.v_map.pages())
            .chain(self.dim_map.pages())
            .copied()
    }
}

/// DRAM bytes of `held` tokens in the K + V tails.
pub(crate) fn tok_bytes(shape: StreamShape, held: u32) -> u64 {
    4 * u64::from(shape.head_dim) * u64::from(held)
}

/// DRAM bytes of `held` tokens in the dim tail.
pub(crate) fn dim_bytes(shape: StreamShape, held: u32) -> u64 {
    2 * u64::from(shape.head_dim) * u64::from(held)
}
