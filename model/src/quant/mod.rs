//! Quantized tensors and the kernels that use them without expanding them:
//! block formats (F32, F16, Q4_1, Q8_0), `QTensor`, threaded matvec and
//! batched matmul.

mod float;
mod kind;
mod matmul;
mod matvec;
mod parallel;
mod q4_1;
mod q8_0;
mod tensor;

#[cfg(test)]
mod tests;

pub use float::dot_f32;
pub use kind::TensorKind;
pub use parallel::{MAX_THREADS, default_threads};
pub use tensor::QTensor;
