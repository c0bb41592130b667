//! Attention for InstInfer's computational SSD: the f32/f64 accuracy
//! [`reference`](mod@reference), the bit-exact integer [`engine`] model that device
//! firmware, simulator and FPGA must match, their shared [`shape`] types and
//! [`AttentionError`], and deterministic [`testdata`].
//!
//! Methods: dense attention, SparQ (per-query-head sparsity) and SparF
//! (InstInfer Algorithm 1 with grouped-query attention: one choice of dims
//! and tokens per KV group, so flash reads are shared by its query heads).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod engine;
pub mod error;
pub mod host;
pub mod math;
pub mod reference;
pub mod shape;
pub mod testdata;

pub use error::AttentionError;
pub use shape::{GroupShape, H2oParams, HeadsLayout, Method, SparseParams};
