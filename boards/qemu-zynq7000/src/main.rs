//! The InstCSD firmware on QEMU's `xilinx-zynq-a9` (Cortex-A9, as the
//! Cosmos+ board's Zynq-7000): its own startup (vector table, stack,
//! `.bss`), the Cadence UART0 console at 0xE000_0000, the A9 global timer
//! as the clock, and the Cosmos+ flash geometry in RAM. Everything else is
//! `board_qemu_common::serve`.
//!
//! The MMU and caches stay off: the core runs on strongly-ordered memory,
//! which QEMU executes the allocator's exclusive loads and stores on; a
//! real A9 would need the MMU on first (the Cosmos+ board crate's job).
//!
//! On a host build this is a stub that says where it runs.
//!
//! | module | owns |
//! | --- | --- |
//! | `board` | (board target only) startup, memory map and clock of the Zynq-7000 board under QEMU; the crate's only `unsafe` |
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_code)]

#[cfg(target_os = "none")]
mod board;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "qemu-zynq7000 is firmware for armv7a-none-eabi; run it with \
         `cargo xtask qemu --board zynq7000`"
    );
    std::process::exit(2);
}
