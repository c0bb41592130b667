//! NVMe over Fabrics on TCP: the CSD as an NVMe/TCP target, and the host's
//! NVMe/TCP initiator.
//!
//! | module | owns |
//! | --- | --- |
//! | [`wire`] | reading and writing whole PDUs on a byte stream ([`proto::tcp`] checks them) |
//! | [`namespace`] | namespace 1: a RAM block namespace the target serves Read / Write from |
//! | [`target`] | [`Target`]: `instinfer serve`, the simulated board (running the firmware) behind NVMe/TCP |
//! | [`auth`] | DH-HMAC-CHAP secrets (`DHHC-1:` text) and the owner-only secrets file |
//! | [`initiator`] | [`NvmeTcp`]: the [`host_driver::transport::Transport`] to a target (`--device tcp://HOST:PORT/NQN`) |
//!
//! The vendor commands of [`proto`] travel to the firmware unchanged (an
//! SGL in the capsule becomes PRPs into the simulated board's host memory,
//! as a fabrics-to-PCIe bridge does) and their completions come back with
//! the firmware's status; the fabrics commands, properties, keep-alive and
//! namespace are the target's.

pub mod auth;
pub mod initiator;
pub mod namespace;
pub mod target;
pub mod wire;

pub use initiator::{NvmeTcp, TcpUrl};
pub use target::{Target, TargetConfig, TargetHandle, TargetStats};

/// The subsystem NQN `instinfer serve` uses unless told otherwise.
pub const DEFAULT_NQN: &str = "nqn.2026-11.io.instinfer:csd";
/// The host NQN of `instinfer`'s own initiator.
pub const HOST_NQN: &str = "nqn.2026-11.io.instinfer:host";
