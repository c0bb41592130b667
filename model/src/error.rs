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
        /// The file that was opened.
        path: PathBuf,
        /// What the operating system reported.
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
        /// The field being read (e.g. `"metadata value"`, `"data section"`).
        what: &'static str,
        /// Byte offset in the file where the field starts.
        offset: usize,
        /// Bytes the field needs, as announced by the file.
        needed: u64,
        /// Bytes left in the file from `offset` on.
        available: usize,
    },
    /// A header field holds an impossible value.
    #[error("GGUF corrupt at byte {offset}: {reason}")]
    Corrupt {
        /// Byte offset in the file of the offending field.
        offset: usize,
        /// What is wrong with it, in words.
        reason: String,
    },
    /// A metadata key the caller needs is absent.
    #[error("metadata key `{0}` is missing")]
    MissingKey(String),
    /// A metadata key holds a value of another type (or out of range).
    #[error("metadata key `{key}`: expected {expected}, found {found}")]
    WrongType {
        /// The metadata key that was asked for.
        key: String,
        /// What the caller needed (e.g. `"an integer fitting u32"`).
        expected: &'static str,
        /// The value actually stored, described by type and, for numbers,
        /// value (e.g. `"i32 -1"`, `"array of 3 string"`).
        found: String,
    },
    /// A tensor the caller needs is absent.
    #[error("tensor `{0}` is missing")]
    MissingTensor(String),
    /// A tensor's ggml type is not one `TensorKind` supports; the message
    /// names it (e.g. `16 (IQ2_XXS)`) and lists those that are.
    #[error(
        "tensor `{name}`: unsupported ggml type {ggml_type} ({}) (supported: 0 F32, 1 F16, \
         2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1, 8 Q8_0, 10 Q2_K, 11 Q3_K, 12 Q4_K, 13 Q5_K, \
         14 Q6_K, 30 BF16)",
        crate::quant::ggml_type_name(*.ggml_type).unwrap_or("unknown to ggml")
    )]
    UnsupportedTensorType {
        /// The tensor's name in the file.
        name: String,
        /// Its ggml type id as stored (e.g. 16 for IQ2_XXS).
        ggml_type: u32,
    },
    /// `QTensor::quantize` was asked for a kind this crate only decodes
    /// (the K-quants).
    #[error("no quantizer for {0}: this crate only decodes it")]
    NoQuantizer(crate::TensorKind),
    /// A tensor's dimensions do not fit its use.
    #[error("tensor `{name}`: dims {found:?}, expected {expected:?}")]
    TensorShape {
        /// The tensor's name in the file.
        name: String,
        /// Dimensions the model config calls for, in GGUF order
        /// (`ne[0]`, the contiguous row length, first).
        expected: Vec<u64>,
        /// Dimensions stored in the file, in the same order.
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
    TokenOutOfRange {
        /// The token id given.
        id: u32,
        /// Number of tokens in the vocabulary; valid ids are `0..vocab`.
        vocab: usize,
    },
    /// A position at or beyond the model's context length.
    #[error("position {pos} is beyond the context length {context_len}")]
    ContextOverflow {
        /// The zero-based position asked for (for a prompt, its last token's).
        pos: usize,
        /// The model's context length in tokens; valid positions are
        /// `0..context_len`.
        context_len: usize,
    },
    /// A caller-supplied argument is unusable (empty prompt, wrong length).
    #[error("invalid input: {0}")]
    Input(String),
    /// The attention implementation (e.g. the storage device) failed.
    #[error("attention failed at layer {layer}: {source}")]
    Attention {
        /// Zero-based index of the transformer layer whose attention failed.
        layer: usize,
        /// The error the attention implementation returned, or a description
        /// of a wrong-sized output.
        #[source]
        source: AttentionFailure,
    },
}
