//! InstInfer's host library: everything between a model runner and the
//! computational SSDs that run its decode attention. The `instinfer` CLI,
//! its benchmarks and the cost model live in the `instinfer` crate; the
//! NVMe/TCP fabric in `nvme-tcp`; SolidAttention in `solid-attention`.
//!
//! | module | owns |
//! | --- | --- |
//! | [`transport`] | moving SQEs, data and CQEs to a device ([`transport::SimTransport`]) |
//! | [`csd`] | one device in InstCSD terms: identify, sequences, KV append, decode |
//! | [`array`](mod@array) | several devices sharding the KV heads of each sequence |
//! | [`backend`] | the model-facing [`backend::AttentionBackend`]: in-storage or host reference |
//! | [`dma`] | where command data lives (host or GPU memory) and how the device reaches it (peer to peer or bounce) |
//! | [`measure`] | device counters and virtual time of one phase of work on an array |
//! | [`policy`] | which attention method, compression and guardrail a layer runs |
//! | [`runner`] | the model's attention hook on a backend: per-layer plans, recording |
//! | [`vectors`] | reference workloads: the end-to-end vectors and a seeded decode workload |
#![forbid(unsafe_code)]

pub mod array;
pub mod backend;
pub mod csd;
pub mod dma;
pub mod measure;
pub mod policy;
pub mod runner;
pub mod transport;
pub mod vectors;
