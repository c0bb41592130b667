//! The InstCSD firmware on the **Daisyplus OpenSSD**: Zynq UltraScale+
//! ZU17EG (4 × Cortex-A53, 2 GB DRAM, PCIe Gen3 x4), 4 channels × 2 ways
//! of 16 KiB SLC NAND. Target `aarch64-unknown-none`.
//!
//! | module | owns |
//! | --- | --- |
//! | [`memory_map`] | DRAM, the PL windows, where the image, heap and DMA windows go; the geometry |
//! | [`regs`] | the T4 NAND storage controller's register map, established vs ASSUMED |
//! | [`nsc`] | [`T4Nsc`](nsc::T4Nsc): the NAND controllers as a `board_openssd::flash::Nsc` |
//! | [`board`] | [`Daisyplus`](board::Daisyplus): the board as a `board_openssd::board::OpenSsd`, which assembles it from the shared drivers and these |
//! | `timer` | (board target only) the A53 generic timer as the board's counter; the crate's only `unsafe` |
//!
//! The firmware image is the `daisyplus-firmware` binary (aarch64-rt entry
//! at EL3, heap, panic console); `cargo xtask flash --board daisyplus`
//! builds it with the engine's Verilog, the Vivado script and the boot
//! image description.
//!
//! **This has not run on a board.** Nothing here could be tested on
//! hardware: the drivers are tested against register models on the host
//! (`cargo test -p board-daisyplus`), and the image is only built. The
//! NAND path also needs the vendor's T4 microcode loaded and the NAND
//! brought up first (see [`regs`]); the engine computes in software until
//! the block design streams NAND data into it (see
//! `board_openssd::engine`).
#![no_std]
#![deny(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod board;
pub mod memory_map;
pub mod nsc;
pub mod regs;
#[cfg(all(target_arch = "aarch64", target_os = "none"))]
pub mod timer;
