//! `ModelError`: every way loading or running the model can fail.
//!
//! Errors about the file say where (byte offset, key or tensor name) so a
//! corrupt or truncated GGUF is diagnosable from the message alone.

use std::path::PathBuf;

use crate::llama::AttentionFailure;

/// Why a model file could not be read or a forward pass could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The file could not be read from disk.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The first four bytes are not `GGUF`.
    #[error("not a GGUF file (magic {0:#010x}, expected 0x46554747 \"GGUF\")")]
    BadMagic(u32),
    /// A GGUF version this reader does not know.
    #[error("unsupported GGUF version {0} (supported: 2 and 3)")]
    UnsupportedVersion(u32),
    /// The file ends before a field it announces.
    #[error("GGUF truncated: {what} at byte {offset} needs {needed} bytes, only {available} left")]
    Truncated {
        what: &'static str,
        offset: usize,
        needed: u64,
        available: usize,
    },
    /// A header field holds an impossible value.
    #[error("GGUF corrupt at byte {offset}: {reason}")]
    Corrupt { offset: usize, reason: String },
    /// A metadata key the caller needs is absent.
    #[error("metadata key `{0}` is missing")]
    MissingKey(String),
    /// A metadata key holds a value of another type (or out of range).
    #[error("metadata key `{key}`: expected {expected}, found {found}")]
    WrongType {
        key: String,
        expected: &'static str,
        found: String,
    },
    /// A tensor the caller needs is absent.
    #[error("tensor `{0}` is missing")]
    MissingTensor(String),
    /// A tensor's ggml type is not one of F32, F16, Q4_1, Q8_0.
    #[error(
        "tensor `{name}`: unsupported ggml type {ggml_type} (supported: 0 F32, 1 F16, 3 Q4_1, 8 Q8_0)"
    )]
    UnsupportedTensorType { name: String, ggml_type: u32 },
    /// A tensor's dimensions do not fit its use.
    #[error("tensor `{name}`: dims {found:?}, expected {expected:?}")]
    TensorShape {
        name: String,
        expected: Vec<u64>,
        found: Vec<u64>,
    },
    /// Quantized data whose length does not match its kind and shape.
    #[error("tensor data: {0}")]
    TensorData(String),
    /// Metadata that does not describe a usable llama model.
    #[error("model config: {0}")]
    Config(String),
    /// Tokenizer metadata that cannot be used.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A token id outside the vocabulary.
    #[error("token id {id} out of range (vocabulary of {vocab})")]
    TokenOutOfRange { id: u32, vocab: usize },
    /// A position at or beyond the model's context length.
    #[error("position {pos} is beyond the context length {context_len}")]
    ContextOverflow { pos: usize, context_len: usize },
    /// A caller-supplied argument is unusable (empty prompt, wrong length).
    #[error("invalid input: {0}")]
    Input(String),
    /// The attention implementation (e.g. the storage device) failed.
    #[error("attention failed at layer {layer}: {source}")]
    Attention {
        layer: usize,
        #[source]
        source: AttentionFailure,
    },
}
