//! SmolLM2 (llama architecture) on the CPU from a GGUF file: the reader
//! (`gguf`), quantized kernels (`quant`), the byte-level BPE tokenizer
//! (`tokenizer`) and the forward pass with pluggable decode attention
//! (`llama`). Decode attention goes through the `Attention` trait so the
//! host driver can run it inside the storage device.
#![forbid(unsafe_code)]

mod error;
pub mod fetch;
pub mod gguf;
pub mod llama;
pub mod quant;
pub mod tokenizer;

#[cfg(test)]
mod test_support;

pub use error::ModelError;
pub use gguf::Gguf;
pub use llama::{Attention, AttentionFailure, Config, DenseCache, Logits, Model};
pub use quant::{QTensor, TensorKind};
pub use tokenizer::Tokenizer;
