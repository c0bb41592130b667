//! The sequence table: which requests are open, their shape, where each
//! (layer, KV head) stream lives in the FTL, and their pending results.
//!
//! The table has a fixed number of slots (from [`crate::DeviceConfig`]);
//! a sequence's per-layer state is sized once at open.

use crate::pages::PageIndex;
use alloc::vec;
use alloc::vec::Vec;
use ftl::StreamId;
use proto::{DecodeReport, SeqShape, Status};

/// A finished decode waiting for its fetch.
#[derive(Clone, Debug)]
pub(crate) struct DecodeResult {
    /// `[q_heads][d]` engine outputs (fixed point, 14 fractional bits).
    pub out: Vec<i32>,
    /// What the step cost.
    pub report: DecodeReport,
}

/// One open sequence.
#[derive(Debug)]
pub(crate) struct Sequence {
    /// Host-chosen id.
    pub id: u32,
    /// Shape as opened.
    pub shape: SeqShape,
    /// `streams[layer * kv_heads + head]`.
    pub streams: Vec<StreamId>,
    /// Tokens stored per layer.
    pub len: Vec<u32>,
    /// Running sum of the values (fixed point) per stream and dim, for v̄:
    /// `vsum[(layer * kv_heads + head) * d + i]`.
    pub vsum: Vec<i64>,
    /// A layer whose heads disagree in length after a failed append: it
    /// refuses further work until the sequence is closed.
    pub broken: Vec<bool>,
    /// Pending decode result per layer.
    pub results: Vec<Option<DecodeResult>>,
    /// The PAGES index per stream (same order as `streams`).
    pub pages: Vec<PageIndex>,
}

impl Sequence {
    /// A sequence whose token pages hold `page_tokens` tokens.
    pub fn new(id: u32, shape: SeqShape, streams: Vec<StreamId>, page_tokens: usize) -> Self {
        let layers = usize::from(shape.layers);
        let heads = usize::from(shape.kv_heads);
        let d = usize::from(shape.head_dim);
        let sink = usize::from(shape.placement.sink);
        let bits = u32::from(shape.placement.sketch_bits);
        Self {
            pages: (0..layers * heads)
                .map(|_| PageIndex::new(page_tokens, d, sink, bits))
                .collect(),
            id,
            shape,
            streams,
            len: vec![0; layers],
            vsum: vec![0; layers * heads * usize::from(shape.head_dim)],
            broken: vec![false; layers],
            results: vec![None; layers],
        }
    }

    pub fn kv_heads(&self) -> usize {
        usize::from(self.shape.kv_heads)
    }

    pub fn group(&self) -> usize {
        usize::from(self.shape.group)
    }

    pub fn q_heads(&self) -> usize {
        self.kv_heads() * self.group()
    }

    pub fn d(&self) -> usize {
        usize::from(self.shape.head_dim)
    }

    /// Checks `layer` exists and is usable.
    pub fn layer(&self, layer: u16) -> Result<usize, Status> {
        let l = usize::from(layer);
        if l >= self.len.len() {
            return Err(Status::INVALID_FIELD);
        }
        if self.broken[l] {
            return Err(Status::INTERNAL_ERROR);
        }
        Ok(l)
    }

    pub fn stream(&self, layer: usize, head: usize) -> StreamId {
        self.streams[layer * self.kv_heads() + head]
    }

    /// The PAGES index of stream (layer, head).
    pub fn page_index(&self, layer: usize, head: usize) -> &PageIndex {
        &self.pages[layer * self.kv_heads() + head]
    }

    pub fn page_index_mut(&mut self, layer: usize, head: usize) -> &mut PageIndex {
        let h = self.kv_heads();
        &mut self.pages[layer * h + head]
    }

    pub fn vsum_mut(&mut self, layer: usize, head: usize) -> &mut [i64] {
        let d = self.d();
        let at = (layer * self.kv_heads() + head) * d;
        &mut self.vsum[at..at + d]
    }

    pub fn vsum(&self, layer: usize, head: usize) -> &[i64] {
        let d = self.d();
        let at = (layer * self.kv_heads() + head) * d;
        &self.vsum[at..at + d]
    }
}

/// Fixed-size table of open sequences.
#[derive(Debug)]
pub(crate) struct SequenceTable {
    slots: Vec<Option<Sequence>>,
}

impl SequenceTable {
    pub fn new(max: u32) -> Self {
        let mut slots = Vec::new();
        slots.resize_with(max as usize, || None);
        Self { slots }
    }

    pub fn open_count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    pub fn find(&self, id: u32) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.id == id))
    }

    pub fn get(&self, id: u32) -> Result<&Sequence, Status> {
        self.find(id)
            .and_then(|i| self.slots[i].as_ref())
            .ok_or(Status::SEQ_NOT_OPEN)
    }

    pub fn get_mut(&mut self, id: u32) -> Result<&mut Sequence, Status> {
        match self.find(id) {
            Some(i) => self.slots[i].as_mut().ok_or(Status::SEQ_NOT_OPEN),
            None => Err(Status::SEQ_NOT_OPEN),
        }
    }

    /// A free slot index, or `SEQ_TABLE_FULL`.
    pub fn free_slot(&self) -> Result<usize, Status> {
        self.slots
            .iter()
            .position(Option::is_none)
            .ok_or(Status::SEQ_TABLE_FULL)
    }

    pub fn insert(&mut self, slot: usize, seq: Sequence) {
        self.slots[slot] = Some(seq);
    }

    /// Ids of the open sequences.
    pub fn ids(&self) -> Vec<u32> {
        self.slots.iter().flatten().map(|s| s.id).collect()
    }

    pub fn remove(&mut self, id: u32) -> Option<Sequence> {
        let i = self.find(id)?;
        self.slots[i].take()
    }
}
