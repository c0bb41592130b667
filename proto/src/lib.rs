//! Wire protocol of the InstInfer computational SSD ("InstCSD").
//!
//! Everything that crosses the PCIe boundary between the host driver and the
//! drive firmware is defined here, and only here:
//!
//! | module | owns |
//! | --- | --- |
//! | [`auth`] | DH-HMAC-CHAP authentication messages (Negotiate, Challenge, Reply, Success, Failure) |
//! | [`sqe`] | the 64-byte submission queue entry |
//! | [`cqe`] | the 16-byte completion queue entry |
//! | [`status`] | status codes (generic NVMe + InstCSD vendor codes) |
//! | [`opcode`] | opcodes and their data-direction bits |
//! | [`prp`] | PRP walking (device side) and PRP building (host side) |
//! | [`identify`] | Identify Controller data and the InstCSD capability block |
//! | [`log`] | Get Log Page command and the InstCSD statistics log page |
//! | [`link`] | the board link: NVMe traffic over a byte stream (firmware under QEMU) |
//! | [`vendor`] | the InstCSD vendor I/O commands: builders and strict parsers |
//! | [`regs`] | controller register offsets and doorbells |
//! | [`discovery`] | the Discovery Log Page and the discovery NQN |
//! | [`fabrics`] | NVMe over Fabrics commands (Connect, Property Get / Set) and properties |
//! | [`tcp`] | NVMe/TCP PDUs: framing, checks and digests |
//! | [`error`] | [`ProtoError`], the crate's error type |
//! | `wire` | little-endian field readers and writers shared by the encoders |
//!
//! All multi-byte fields are little-endian on the wire; every `to_bytes` /
//! `from_bytes` pair encodes explicitly, so the crate is correct on any host.
//! `#![no_std]`, no allocation, no `unsafe`.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod auth;
pub mod cqe;
pub mod discovery;
pub mod error;
pub mod fabrics;
pub mod identify;
pub mod link;
pub mod log;
pub mod opcode;
pub mod prp;
pub mod regs;
pub mod sqe;
pub mod status;
pub mod tcp;
pub mod vendor;

mod wire;

pub use cqe::Cqe;
pub use error::ProtoError;
pub use identify::{CapabilityBlock, IdentifyCmd, IdentifyController, identify_controller};
pub use log::{GetLogPage, StatsLog, get_log_page};
pub use opcode::{DataDirection, Opcode};
pub use sqe::Sqe;
pub use status::Status;
pub use vendor::{
    DecodeFetch, DecodeFlags, DecodeReport, DecodeSubmit, GuardTrailer, KvAppend, Method,
    Placement, SeqClose, SeqOpen, SeqShape, VendorCommand,
};
