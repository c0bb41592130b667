//! [`KvBackend`]: what [`crate::Drives`] and [`crate::SsdKv`] both do once
//! a sequence is open, so a binding writes each call once for both.

use host_driver::backend::ModelShape;

use crate::{BatchOutput, Drives, OffloadError, Step, Values};

/// A place whose sequences take KV appends and decode batches.
pub trait KvBackend: Send {
    /// The shape `seq` was opened with.
    fn shape_of(&self, seq: u32) -> Result<ModelShape, OffloadError>;
    /// Tokens stored in `layer` of `seq`.
    fn tokens(&self, seq: u32, layer: usize) -> Result<usize, OffloadError>;
    /// Appends `[kv_heads][n][d]` K and V; returns n.
    fn append_kv(
        &mut self,
        seq: u32,
        layer: usize,
        k: Values<'_>,
        v: Values<'_>,
    ) -> Result<usize, OffloadError>;
    /// Submits a batch; returns its handle.
    fn submit_batch(&mut self, steps: &[Step<'_>]) -> Result<u64, OffloadError>;
    /// Collects a batch.
    fn fetch_batch(&mut self, id: u64) -> Result<BatchOutput, OffloadError>;
    /// Closes `seq`.
    fn close(&mut self, seq: u32) -> Result<(), OffloadError>;
    /// Open sequences, in order.
    fn sequences(&self) -> Vec<u32>;
}

impl KvBackend for Drives {
    fn shape_of(&self, seq: u32) -> Result<ModelShape, OffloadError> {
        self.shape(seq)
    }
    fn tokens(&self, seq: u32, layer: usize) -> Result<usize, OffloadError> {
        self.len(seq, layer)
    }
    fn append_kv(
        &mut self,
        seq: u32,
        layer: usize,
        k: Values<'_>,
        v: Values<'_>,
    ) -> Result<usize, OffloadError> {
        self.append(seq, layer, k, v)
    }
    fn submit_batch(&mut self, steps: &[Step<'_>]) -> Result<u64, OffloadError> {
        self.submit(steps)
    }
    fn fetch_batch(&mut self, id: u64) -> Result<BatchOutput, OffloadError> {
        self.fetch(id)
    }
    fn close(&mut self, seq: u32) -> Result<(), OffloadError> {
        self.close_sequence(seq)
    }
    fn sequences(&self) -> Vec<u32> {
        Drives::sequences(self)
    }
}
