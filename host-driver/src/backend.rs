//! [`AttentionBackend`]: where a model's decode attention runs, seen from
//! the model runner. Inputs and outputs are f32; KV is kept per
//! (sequence, layer) and grows by [`AttentionBackend::append`] or by the
//! new token of a [`DecodeStep`].
//!
//! | backend | computes |
//! | --- | --- |
//! | [`InStorage`] | on a [`crate::array::CsdArray`] (fp16 over the wire, integer engine) |
//! | [`HostDense`] | on the host: the f32 reference (the accuracy yardstick, every method) or the device's engine model |
//! | [`SsdOffload`] | on the host, with the KV cache on a plain NVMe drive (standard Read/Write) |

mod error;
pub mod flash;
mod gpu_staged;
mod host_dense;
mod in_storage;
pub mod lengths;
pub mod recovery;
mod rotation;
mod ssd_offload;

pub use error::BackendError;
pub use flash::{FlashCount, FlashLayout};
pub use gpu_staged::GpuStaged;
pub use host_dense::{Arithmetic, GuardStats, HostDense};
pub use in_storage::InStorage;
pub use recovery::Recovery;
pub use rotation::Rotation;
pub use ssd_offload::SsdOffload;

use attention::shape::Method;

use crate::measure::{Phase, PhaseCounters};

/// Shape of a model's attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelShape {
    /// Transformer layers.
    pub layers: usize,
    /// Query heads (a multiple of `kv_heads`).
    pub q_heads: usize,
    /// KV heads.
    pub kv_heads: usize,
    /// Head dimension.
    pub head_dim: usize,
}

impl From<&model::Config> for ModelShape {
    fn from(c: &model::Config) -> Self {
        Self {
            layers: c.n_layers,
            q_heads: c.n_heads,
            kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
        }
    }
}

impl ModelShape {
    /// Query heads per KV head.
    pub fn group(&self) -> usize {
        self.q_heads / self.kv_heads.max(1)
    }

    /// Checks that every count is positive and `q_heads` divides evenly.
    pub fn validate(&self) -> Result<(), BackendError> {
        if self.layers == 0 || self.kv_heads == 0 || self.head_dim == 0 || self.q_heads == 0 {
            return Err(BackendError::Shape(format!(
                "{self:?} has a zero dimension"
            )));
        }
        if !self.q_heads.is_multiple_of(self.kv_heads) {
            return Err(BackendError::Shape(format!(
                "{} query heads is not a multiple of {} KV heads",
                self.q_heads, self.kv_heads
            )));
        }
        Ok(())
    }
}

/// One decode of one layer of one sequence.
#[derive(Clone, Copy, Debug)]
pub struct DecodeStep<'a> {
    /// Sequence.
    pub seq: u32,
    /// Layer.
    pub layer: usize,
    /// Query `[q_heads][d]`.
    pub q: &'a [f32],
    /// The new token's K and V `[kv_heads][d]` each, appended before
    /// attending; `None` attends to the stored tokens only.
    pub kv_new: Option<(&'a [f32], &'a [f32])>,
    /// Attention method.
    pub method: Method,
}

/// A place to run decode attention.
pub trait AttentionBackend {
    /// Opens a sequence.
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError>;
    /// Appends tokens to one layer: `k`, `v` `[kv_heads][n][d]`.
    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError>;
    /// Runs a batch of decodes (all of it in flight at once where the
    /// backend can); outputs `[q_heads][d]` in batch order. At most one step
    /// per (sequence, layer) in a batch.
    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError>;
    /// Closes a sequence.
    fn close(&mut self, seq: u32) -> Result<(), BackendError>;
    /// A short name for tables.
    fn name(&self) -> &str;
    /// Fraction of dense's K/V elements the last decode step read, when the
    /// backend knows it better than the method's nominal budget (SparQ on
    /// grouped-query heads reads the union of its query heads' choices).
    fn last_read_fraction(&self) -> Option<f64> {
        None
    }
    /// The flash page reads and NAND-bus bytes of the last decode step
    /// (every KV head of its layer) beside dense's at the same context:
    /// measured by a drive, modelled by a host backend (see [`flash`]);
    /// `None` where the backend has no flash to count.
    fn last_flash(&self) -> Option<FlashCount> {
        None
    }
    /// Starts measuring the device work that follows; `None` for backends
    /// without a device.
    fn measure_begin(&mut self) -> Result<Option<Phase>, BackendError> {
        Ok(None)
    }
    /// Ends a measurement begun with [`Self::measure_begin`]: wall ms and the
    /// device counters.
    fn measure_end(&mut self, phase: Phase) -> Result<Option<(f64, PhaseCounters)>, BackendError> {
        let _ = phase;
        Ok(None)
    }
}

/// Rounds to the nearest fp16 and back: what a backend that stores fp16
/// actually sees.
pub fn round_f16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// fp16 bit patterns of `xs`.
pub fn to_f16_bits(xs: &[f32]) -> Vec<u16> {
    xs.iter()
        .map(|&x| half::f16::from_f32(x).to_bits())
        .collect()
}

#[cfg(test)]
mod flash_tests;
#[cfg(test)]
mod tests;
