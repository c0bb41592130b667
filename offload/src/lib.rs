//! Decode-attention offload as an application links it: the calls the
//! Python package (`instinfer`) and the C library (`libinstinfer`) wrap,
//! one to one, so both behave exactly as this crate does.
//!
//! | module | owns |
//! | --- | --- |
//! | [`device`] | [`device::DeviceSpec`] (`sim`, `qemu:<board>`, `tcp://…`, `/dev/…`, `vfio:…`) and [`device::AnyTransport`] |
//! | [`drives`] | [`Drives`]: one drive or an array, sequences, KV append, decode with split submit/fetch |
//! | [`ssd`] | [`SsdKv`]: the SSD block-sparse backend (a plain drive or a directory) behind the same calls; [`SsdWorker`]: it on a thread of its own |
//! | [`any`] | [`AnyBackend`]: drives or the SSD backend behind one value, as the bindings' handles hold them |
//! | [`backend`] | [`KvBackend`]: the calls both share once a sequence is open |
//! | [`method`] | [`MethodSpec`]: a method's name and compression (or explicit SparF parameters), resolved per step |
//! | `check` | the argument checks every backend makes before sending anything |
//! | [`report`] | [`StepReport`], [`StepOutput`], [`BatchOutput`]: what a decode returns |
//! | [`values`] | [`Values`]: fp16 or f32 input, rounded to fp16 for the wire |
//! | [`error`] | [`OffloadError`]: every failure, with the NVMe status where the drive gave one |
//!
//! Arrays are row-major: K and V `[kv_heads][tokens][d]`, q
//! `[q_heads][d]`, a new token's K and V `[kv_heads][d]`, outputs
//! `[q_heads][d]` f32.
#![forbid(unsafe_code)]

pub mod any;
pub mod backend;
mod check;
pub mod device;
pub mod drives;
pub mod error;
pub mod method;
pub mod report;
#[cfg(target_os = "linux")]
pub mod ssd;
pub mod values;

pub use any::AnyBackend;
pub use backend::KvBackend;
pub use drives::{Drives, Layout, SeqOptions, Step};
pub use error::OffloadError;
pub use method::MethodSpec;
pub use report::{BatchOutput, StepOutput, StepReport};
#[cfg(target_os = "linux")]
pub use ssd::{SsdKv, SsdOptions, SsdWorker};
pub use values::Values;

pub use host_driver::backend::ModelShape;
