//! The paper's system in a cost model: how fast OPT-13B decodes on one
//! A6000 when its KV cache lives on an SSD (an ideal host SSD offload;
//! FlexGen as published, with its placement options), in host memory
//! (DeepSpeed-style), or in computational SSDs (InstInfer, dense and
//! SparF).
//!
//! | module | owns |
//! | --- | --- |
//! | [`hw`] | the hardware and the model shape, every parameter with its source |
//! | [`bound`] | the physical limit of a CSD point: its busiest resource |
//! | [`csd`] | the CSD side: measured by running the firmware, FTL and the simulated board's timing on OPT-13B-shaped commands (never a formula) |
//! | [`trace`] | attention traces of the real model (SmolLM2), recorded and scaled to OPT-13B's head shape |
//! | [`flexgen`] | FlexGen as published: its memory-mapped KV files, copy threads and per-layer sync, from its code |
//! | [`systems`] | the host side of each system: GPU, PCIe, SSD, host memory; each system's own limit |
//!
//! Figures from the model are *modelled*; figures from [`csd`] are
//! *simulated* (virtual device time); nothing here is a wall-clock
//! measurement of the systems compared.

pub mod bound;
pub mod csd;
pub mod flexgen;
pub mod hw;
pub mod systems;
pub mod trace;

pub use bound::{Bound, Resource};
pub use csd::{CsdPoint, CsdProfile, KvSource, profile_csd};
pub use flexgen::{DiskRate, FlexGen, KvHome};
pub use hw::{Hardware, ModelShape, Param};
pub use systems::{
    DataPaths, StepTime, System, Workload, instinfer_data_paths, limit_throughput, throughput,
};
