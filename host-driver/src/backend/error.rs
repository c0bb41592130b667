//! [`BackendError`]: a backend call that cannot be served.

use thiserror::Error;

use crate::csd::CsdError;

/// Why a backend call failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The device failed.
    #[error(transparent)]
    Device(#[from] CsdError),
    /// GPU memory failed.
    #[error("GPU: {0}")]
    Gpu(String),
    /// The reference rejected its inputs.
    #[error("attention: {0}")]
    Attention(#[from] attention::error::AttentionError),
    /// The sequence is not open.
    #[error("sequence {0} is not open")]
    UnknownSequence(u32),
    /// The sequence is already open.
    #[error("sequence {0} is already open")]
    SequenceExists(u32),
    /// Layer index out of range.
    #[error("layer {layer} out of range (sequence has {layers})")]
    Layer {
        /// The layer asked for.
        layer: usize,
        /// Layers of the sequence.
        layers: usize,
    },
    /// A buffer does not fit the shape.
    #[error("{what} has {actual} elements, expected {expected}")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// Elements expected.
        expected: usize,
        /// Elements given.
        actual: usize,
    },
    /// The same (sequence, layer) twice in one batch.
    #[error("sequence {seq} layer {layer} appears twice in one decode batch")]
    DuplicateStep {
        /// Sequence.
        seq: u32,
        /// Layer.
        layer: usize,
    },
    /// A decode on a layer that holds no token.
    #[error("sequence {seq} layer {layer} holds no token to attend to")]
    Empty {
        /// Sequence.
        seq: u32,
        /// Layer.
        layer: usize,
    },
    /// The model shape is invalid or does not fit the device.
    #[error("invalid shape: {0}")]
    Shape(String),
    /// The drive holding the KV cache (plain storage) failed or is full.
    #[error("KV store: {0}")]
    Storage(String),
}
