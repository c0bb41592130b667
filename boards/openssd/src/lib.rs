//! Drivers for what the OpenSSD boards (Daisyplus, Cosmos+) share, and
//! the seam that lets them run in host tests.
//!
//! | module | owns |
//! | --- | --- |
//! | [`mmio`] | [`Regs`](mmio::Regs) and [`DmaMemory`](mmio::DmaMemory), their board implementations, a board's windows opened as its parts; the crate's only `unsafe` |
//! | [`nvme`] | [`NvmeHost`](nvme::NvmeHost): the device core's host interface over the OpenSSD NVMe host controller, both generations |
//! | [`flash`] | [`FlashArray`](flash::FlashArray): the core's `Nand` over a NAND storage controller ([`Nsc`](flash::Nsc)) with per-die state machines |
//! | [`engine`] | [`HwEngine`](engine::HwEngine), the attention engine's register driver, and [`BoardEngine`](engine::BoardEngine), the board's `Engine` |
//! | [`clock`] | the board clock over a hardware counter |
//! | [`uart`] | the Cadence UART console (of the QEMU boards too) |
//! | [`region`] | address ranges of a board memory map and their checks |
//! | [`serve`] | the firmware's run: assemble the board, then the main loop every board runs |
//! | [`board`] | the board assembled from these drivers, once for every board ([`OpenSsd`](board::OpenSsd) says what sets one apart), and its start-up configuration |
//! | `fake` | (feature `fake`, and in tests) register-file and DMA-memory fakes |
//!
//! **Status: none of this has run on a board.** The register layouts come
//! from the public OpenSSD sources named in each module (established) or
//! are labelled ASSUMED where those sources say nothing; everything is
//! tested against models of the hardware on the host only.
#![no_std]
#![deny(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod board;
pub mod clock;
pub mod engine;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod flash;
pub mod mmio;
pub mod nvme;
pub mod region;
pub mod serve;
pub mod uart;
