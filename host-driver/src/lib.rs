//! InstInfer host side: everything between a model runner and the
//! computational SSDs that run its decode attention.
//!
//! | module | owns |
//! | --- | --- |
//! | [`transport`] | moving SQEs, data and CQEs to a device ([`transport::SimTransport`]) |
//! | [`csd`] | one device in InstCSD terms: identify, sequences, KV append, decode |
//! | [`array`](mod@array) | several devices sharding the KV heads of each sequence |
//! | [`backend`] | the model-facing [`backend::AttentionBackend`]: in-storage or host reference |
//! | [`npy`] | NumPy `.npy` files (the CLI's array format) |
//! | [`run`] | the CLI's jobs as library functions: attend, demo, bench |
//! | [`solid`] | SolidAttention: the KV cache on a plain SSD, block-sparse attention on the host with prefetch (Linux) |
//! | [`dma`] | where command data lives (host or GPU memory) and how the device reaches it (peer to peer or bounce) |
//! | [`fabric`] | NVMe/TCP: the CSD as a target (`instinfer serve`) and the host's initiator |
//! | [`cost`] | the paper's systems in a cost model, the CSD side measured on the simulated board |
#![forbid(unsafe_code)]

pub mod array;
pub mod backend;
pub mod cost;
pub mod csd;
pub mod dma;
pub mod fabric;
pub mod measure;
pub mod npy;
pub mod policy;
pub mod run;
pub mod runner;
pub mod solid;
pub mod transport;
