//! InstCSD device core: the firmware of the computational SSD.
//!
//! It fetches NVMe commands, moves their data by PRP, keeps the sequence
//! table, drives the flash translation layer ([`ftl`]) and schedules the
//! in-storage attention engine: dense (stream K pages, then V pages) or
//! SparF (dim pages of the chosen dims → approximate scores → top-k → token
//! pages), with page-level skipping first and the NFC filter second.
//!
//! Generic over the [`hal`] traits, integer-only, `no_std` (with `alloc` for
//! the device DRAM working set). Every error becomes an NVMe status.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

#[macro_use]
mod log;

pub mod config;
pub mod device;
pub mod hal;

mod counters;
mod dispatch;
mod dma;
mod error;
mod flash;
mod identify;
mod journal;
mod scheduler;
mod sequence;
mod state;
mod stats;

pub use config::{DeviceConfig, EngineInfo, Identity};
pub use device::{Device, Progress};
pub use error::DeviceError;
