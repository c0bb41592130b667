//! SmolLM2 (llama architecture), Qwen2/2.5, Qwen3 and Gemma 3 on the CPU
//! from a GGUF file. Decode attention goes through the [`Attention`] trait
//! so the host driver can run it inside the storage device.
//!
//! | module | owns |
//! | --- | --- |
//! | [`gguf`] | the GGUF file format: parsing, typed metadata access and a small writer |
//! | [`quant`] | quantized tensors (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K–Q6_K) and the matvec / matmul kernels that use them |
//! | [`tokenizer`] | the tokenizers of GGUF vocabularies: byte-level BPE (GPT-2 style) and SentencePiece BPE (Gemma) |
//! | [`llama`] | the llama family (`llama`, `qwen2`, `qwen3`, `gemma3`): config, weights, the forward pass and the [`Attention`] seam |
//! | [`fetch`] | obtaining the model file reproducibly, verified against pinned hashes |
//! | `error` | [`ModelError`]: every way loading or running the model can fail |
#![deny(unsafe_code)]

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
pub use llama::{Arch, Attention, AttentionFailure, Config, DenseCache, Logits, Model, RopeStyle};
pub use quant::{QTensor, TensorKind};
pub use tokenizer::Tokenizer;
