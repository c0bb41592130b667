//! Board parts shared by the boards that run the device core on a real
//! instruction set without a timing model: the QEMU boards and the C ABI
//! for emulators.
//!
//! | module | owns |
//! | --- | --- |
//! | [`nand`] | [`RamNand`]: NAND flash in RAM (pages allocated when programmed), with the NFC row filter |
//! | [`link`] | [`LinkHost`]: the NVMe host interface over a byte stream ([`proto::link`]) |
//! | [`board`] | [`LinkBoard`]: a whole board from these parts, and its start-up configuration |
//!
//! `no_std` with `alloc`, no `unsafe`.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod board;
pub mod link;
pub mod nand;

pub use board::{LinkBoard, device_config};
pub use link::{ByteLink, LinkError, LinkHost};
pub use nand::{RamNand, RamNandError};
