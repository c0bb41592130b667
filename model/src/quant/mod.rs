//! Quantized tensors and the kernels that use them without expanding them:
//! ggml's block formats (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and
//! the K-quants Q2_K–Q6_K), `QTensor`, threaded matvec and batched matmul.
//!
//! Each format has one file saying its block layout, which is exactly
//! ggml's (`ggml-common.h`, `dequantize_row_*` in `ggml-quants.c`); decoding
//! gives the same f32 bits as gguf-py's `gguf.quants.dequantize` (tested).
//! The kernels follow ggml's: the input is quantized to 8 bits once per
//! matvec (`act`), each row's dot product sums integers per block (SIMD
//! chosen at run time in `simd`, the crate's one unsafe module) and
//! scales them in f32 in a fixed order (`vecdot`), so every instruction
//! set and every thread count gives the same bits. Rows are split between
//! the caller and persistent workers (`pool`).

mod act;
mod float;
mod kind;
mod kquant;
mod matmul;
mod matvec;
mod parallel;
mod pool;
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
// SIMD intrinsics behind run-time feature detection.
#[allow(unsafe_code)]
mod simd;
mod tensor;
mod vecdot;

#[cfg(test)]
mod tests;

pub(crate) use float::round_f16;
pub use kind::{TensorKind, ggml_type_name};
pub use matmul::Gate;
pub use parallel::{MAX_THREADS, default_threads};
pub(crate) use pool::{Remote, chunked};
pub use simd::Isa;
pub use tensor::QTensor;

/// `out[j] = q · row j` of `keys` (rows of `q.len()`), on the active
/// instruction set in one call; the same bits on every one.
pub fn dots_f32(q: &[f32], keys: &[f32], out: &mut [f32]) {
    simd::dots_f32(Isa::active(), q, keys, out)
}

/// `out[i] += Σ_j p[j] · rows[j][i]` (rows of `out.len()`), row after row,
/// on the active instruction set; the same bits on every one.
pub fn weighted_rows(p: &[f32], rows: &[f32], out: &mut [f32]) {
    simd::weighted_rows(Isa::active(), p, rows, out)
}
