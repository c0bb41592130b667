//! The InstCSD firmware on QEMU's `xlnx-zcu102` (Cortex-A53 at EL1, as the
//! Daisyplus board's ZynqMP): aarch64-rt's entry with an identity map
//! (DDR normal cacheable, the peripheral gigabyte device memory), the
//! Cadence UART0 console at 0xFF00_0000, the generic timer as the clock,
//! and the Daisyplus flash geometry in RAM. Everything else is
//! `board_qemu_common::serve`.
//!
//! On a host build this is a stub that says where it runs.
//!
//! | module | owns |
//! | --- | --- |
//! | `board` | (board target only) memory map, startup and clock of the zcu102 board under QEMU; the crate's only `unsafe` |
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_code)]

#[cfg(target_os = "none")]
mod board;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "qemu-zynqmp is firmware for aarch64-unknown-none; run it with \
         `cargo xtask qemu --board zynqmp`"
    );
    std::process::exit(2);
}
