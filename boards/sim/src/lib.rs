//! The simulated InstCSD board: the embedded default device.
//!
//! The firmware core ([`firmware::Device`]) runs unchanged on [`SimBoard`],
//! which implements the four `firmware::hal` traits in discrete-event
//! virtual time (never the wall clock):
//!
//! | module | owns |
//! | --- | --- |
//! | [`clock`] | virtual time and per-resource busy bookkeeping |
//! | [`host_memory`] | sparse, scattered host memory at bus addresses |
//! | [`pcie`] | the PCIe link as a timed DMA resource; peer-to-peer DMA to a GPU behind a switch, and the GPU's bounce copies |
//! | [`queues`] | the NVMe queue engine: admin/I/O queues, doorbells, queue management |
//! | [`nand`] | the flash: page store, program/erase rules, die and bus timing, NFC filters |
//! | [`engine`] | the attention engine's cycle model over `SoftEngine` |
//! | [`config`] | [`SimConfig`] with sourced defaults |
//! | [`board`] | [`SimBoard`]: the HAL traits over the pieces |
//! | [`csd`] | [`SimCsd`]: the drive as the host sees it |
//! | [`error`] | [`SimError`], [`NandError`] |
//! | `simd` | the soft engine's kernels compiled for AVX2, chosen at run time |
#![deny(unsafe_code)]

pub mod board;
pub mod clock;
pub mod config;
pub mod csd;
pub mod engine;
pub mod error;
pub mod host_memory;
pub mod nand;
pub mod pcie;
pub mod queues;
// Calls into functions compiled for AVX2, behind run-time detection.
#[allow(unsafe_code)]
mod simd;

pub use board::SimBoard;
pub use clock::VirtualClock;
pub use config::SimConfig;
pub use csd::SimCsd;
pub use engine::{EngineModel, EngineUnit, EngineWork, SimEngine};
pub use error::{NandError, SimError};
pub use host_memory::{GPU_BASE, HOST_PAGE, HostMemory, HostMemoryCounters, is_gpu};
pub use nand::{CHARGING_RULE, FaultCounters, NandCounters, NandFaults, NandSim, NandTiming};
pub use pcie::{CopyEngine, GpuModel, PcieCounters, PcieLink, PcieModel};
pub use queues::{QueueEngine, QueueLimits};
