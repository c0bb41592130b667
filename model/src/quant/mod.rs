//! Quantized tensors and the kernels that use them without expanding them:
//! ggml's block formats (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and
//! the K-quants Q2_K–Q6_K), `QTensor`, threaded matvec and batched matmul.
//!
//! Each format has one file saying its block layout, which is exactly
//! ggml's (`ggml-common.h`, `dequantize_row_*` in `ggml-quants.c`); decoding
//! gives the same f32 bits as gguf-py's `gguf.quants.dequantize` (tested).
//! The kernels are scalar Rust.

mod float;
mod kind;
mod kquant;
mod matmul;
mod matvec;
mod parallel;
mod q2_k;
mod q3_k;
mod q4_0;
mod q4_1;
mod q4_k;
mod q5_0;
mod q5_1;
mod q5_k;
mod q6_k;
mod q8_0;
mod tensor;

#[cfg(test)]
mod tests;

pub use float::dot_f32;
pub use kind::{TensorKind, ggml_type_name};
pub use parallel::{MAX_THREADS, default_threads};
pub use tensor::QTensor;
