//! InstCSD device core: the firmware of the computational SSD.
//!
//! It fetches NVMe commands, moves their data by PRP, keeps the sequence
//! table, drives the flash translation layer ([`ftl`]) and schedules the
//! in-storage attention engine: dense (stream K pages, then V pages) or
//! SparF (dim pages of the chosen dims → approximate scores → top-k → token
//! pages), with page-level skipping first and the NFC filter second, or
//! PAGES (pages scored from a DRAM index, the chosen ones read whole, over
//! a layout that places alike keys on the same pages).
//!
//! Generic over the [`hal`] traits, integer-only, `no_std` (with `alloc` for
//! the device DRAM working set). Every error becomes an NVMe status.
//!
//! # Modules
//!
//! [`Device`] is the entry: it owns the board and the core's state and
//! hands both to the handlers. No module imports `device`; the handlers take
//! the state (`state`) and the board, or only the part of either they use.
//!
//! | module | owns |
//! | --- | --- |
//! | `log` | log points (defmt frames, or nothing) |
//! | [`config`] | what a board tells the core at start-up |
//! | [`device`] | the public entry: [`Device`] (board + state), boot, poll |
//! | [`hal`] | the traits a board implements: host interface, NAND, engine, clock |
//! | `counters` | the running counters of the core |
//! | `decode` | decode commands admitted in batches under the DRAM budget |
//! | `dispatch` | serving one command: admin and vendor I/O handlers |
//! | `dma` | moving a command's data by PRP |
//! | `error` | [`DeviceError`] and the NVMe status of every failure |
//! | `flash` | carrying out FTL programs and erases, batches of filtered reads |
//! | `gc` | when the FTL's garbage collection runs: in the background after a command, in the foreground before a host write |
//! | `identify` | the Identify Controller page and its capability block |
//! | `journal` | the sequence journal in flash, read at boot |
//! | `pages` | the PAGES method's DRAM index per stream: page summaries, pinned sinks |
//! | `reads` | the read queue of a decode batch: one queue per die, read retry |
//! | `scheduler` | the pages, filters and engine work of a batch of decodes, pipelined per head |
//! | `sequence` | the sequence table: shapes, streams, pending results |
//! | `state` | what the core keeps between commands |
//! | `stats` | the statistics log page |
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

#[macro_use]
mod log;

pub mod config;
pub mod device;
pub mod hal;

mod counters;
mod decode;
mod dispatch;
mod dma;
mod error;
mod flash;
mod gc;
mod identify;
mod journal;
mod pages;
mod reads;
mod scheduler;
mod sequence;
mod state;
mod stats;

pub use config::{DeviceConfig, EngineInfo, Identity};
pub use device::{Device, Progress};
pub use error::DeviceError;
