//! What the two QEMU boards (`qemu-zynqmp`, `qemu-zynq7000`) share.
//!
//! | module | owns | runs on |
//! | --- | --- | --- |
//! | [`cmdline`] | the boot arguments the host passes (`-append`): page size, the link's pipe paths | anywhere (tested on the host) |
//! | `link` | [`board_ram::ByteLink`] over semihosting files (the host's named pipes) | the board |
//! | `heap` | the global allocator over a DRAM range | the board |
//! | `logger` | the defmt logger: frames on the second UART | the board |
//! | `serve` | boot: console banner (on the Cadence UART of `board_openssd::uart`, which both Zynq families have), connect, run the device core until the host stops it, exit | the board |
//!
//! The semihosting link is compiled only for bare-metal targets: a
//! semihosting trap faults on a board without a debugger, so only the QEMU
//! boards use it.
#![cfg_attr(target_os = "none", no_std)]
#![deny(unsafe_code)]

pub mod cmdline;

#[cfg(target_os = "none")]
mod heap;
#[cfg(target_os = "none")]
mod link;
#[cfg(target_os = "none")]
mod logger;
#[cfg(target_os = "none")]
mod serve;

#[cfg(target_os = "none")]
pub use serve::{Board, serve};

/// Exits QEMU with `code` (semihosting), for a board's fault handlers.
#[cfg(target_os = "none")]
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}
