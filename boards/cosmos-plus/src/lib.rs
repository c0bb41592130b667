//! The InstCSD firmware on the **Cosmos+ OpenSSD**: Zynq-7000 XC7Z045
//! (2 × Cortex-A9, 1 GB DRAM), 8 channels × 8 ways of 16 KiB NAND pages.
//! Target `armv7a-none-eabi`.
//!
//! | module | owns |
//! | --- | --- |
//! | [`memory_map`] | DRAM, the PL windows, where the image, heap and DMA windows go; the geometry |
//! | [`regs`] | the Tiger4 NAND storage controller's register map, established vs ASSUMED |
//! | [`nsc`] | [`Tiger4Nsc`](nsc::Tiger4Nsc): the NAND controllers as a `board_openssd::flash::Nsc` |
//! | [`timer`] | the A9 global timer as the board's counter |
//! | [`board`] | [`CosmosPlus`](board::CosmosPlus): the board as a `board_openssd::board::OpenSsd`, which assembles it from the shared drivers and these |
//!
//! The firmware image is the `cosmos-plus-firmware` binary (our own ARMv7
//! startup with an MMU section map, heap, panic console); `cargo xtask
//! flash --board cosmos-plus` builds it with the engine's Verilog, the
//! Vivado script and the boot image description.
//!
//! **This has not run on a board.** The drivers are tested against
//! register models on the host (`cargo test -p board-cosmos-plus`), and
//! the image is only built. The NAND row addressing is an assumption and
//! the NAND must have been brought up by the vendor flow (see [`regs`]);
//! the engine computes in software until the block design streams NAND
//! data into it (see `board_openssd::engine`).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod board;
pub mod memory_map;
pub mod nsc;
pub mod regs;
pub mod timer;
