//! Attention for InstInfer's computational SSD: the f32/f64 accuracy
//! [`reference`](mod@reference), the bit-exact integer [`engine`] model that device
//! firmware, simulator and FPGA must match, their shared [`shape`] types and
//! [`AttentionError`], and deterministic [`testdata`].
//!
//! Methods: dense attention, SparQ (per-query-head sparsity) and SparF
//! (InstInfer Algorithm 1 with grouped-query attention: one choice of dims
//! and tokens per KV group, so flash reads are shared by its query heads).
//!
//! | module | owns |
//! | --- | --- |
//! | [`engine`] | the bit-exact integer engine model that firmware, simulator and FPGA must match |
//! | [`reference`](mod@reference) | the real-valued accuracy reference (f64 inside) the engine's error is measured against |
//! | [`host`] | the host's fast dense decode attention in f32 |
//! | [`shape`] | shapes and method parameters, and the one place buffer lengths are checked |
//! | [`error`] | [`AttentionError`]: every way the inputs of an attention call can be inconsistent |
//! | [`math`] | transcendental helpers (over `libm`) for the reference and the test data |
//! | [`testdata`] | deterministic, structured KV caches and queries for tests |
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
