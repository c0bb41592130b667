//! An OpenSSD board from its parts, once for every board: the NVMe host
//! controller, one NAND controller per channel, the engine and the
//! counter, over any register and DMA-memory implementation (MMIO on the
//! board, fakes in tests), as the [`firmware::hal::Parts`] the device core
//! runs on.
//!
//! What sets one board apart from another is an [`OpenSsd`]: its NAND
//! controller, its host controller's generation, geometry, identity and
//! memory map. The board crates describe their board with it and keep only
//! their CPU's start-up.
//!
//! | file | owns |
//! | --- | --- |
//! | `hardware.rs` | [`Hardware`] (what a board is built from), the assembly and [`BringUpError`] |
//! | `config.rs` | the start-up [`DeviceConfig`] every board shares, and a board's own |

mod config;
mod hardware;
#[cfg(test)]
pub(crate) mod tests;

use alloc::vec::Vec;

use firmware::DeviceConfig;
use ftl::Geometry;

pub use config::{SYNTH_LANES, VENDOR_ID, device_config};
pub use hardware::{BringUpError, Hardware};

use crate::clock::{TickClock, Ticks};
use crate::engine::BoardEngine;
use crate::flash::{FlashArray, Nsc};
use crate::mmio::{DmaMemory, Regs};
use crate::nvme::NvmeHost;
use crate::nvme::regs::HostLayout;
use crate::region::Region;

/// What sets an OpenSSD board apart from the others.
pub trait OpenSsd {
    /// The NVMe host controller's generation; its `name` is the board's.
    const HOST: &'static HostLayout;
    /// The flash behind the NAND controllers (one controller per channel).
    const GEOMETRY: Geometry;
    /// Bytes of group buffers the device core may hold.
    const DRAM_BUDGET: u64;
    /// Identify's serial number.
    const SERIAL: &'static str;
    /// Identify's model number.
    const MODEL: &'static str;
    /// The engine clock advertised to the host.
    const ENGINE_CLOCK_KHZ: u32;
    /// Where the parts sit in the board's memory map.
    const WINDOWS: Windows;

    /// The board's NAND storage controllers over each channel's registers.
    type Nsc<R: Regs>: Nsc;

    /// The controllers over `channels` (one register window per channel),
    /// the NAND brought up as far as this board's controller needs at
    /// start-up (every way reset).
    fn nsc<R: Regs>(channels: Vec<R>) -> Self::Nsc<R>;

    /// Builds the board from its parts: the host interface over its
    /// bounce buffer, the NAND brought up ([`OpenSsd::nsc`]) behind the
    /// die scheduler, the engine probed, the clock started.
    fn assemble<R: Regs, M: DmaMemory, T: Ticks>(
        hw: Hardware<R, M, T>,
    ) -> Result<Board<Self, R, M, T>, BringUpError>
    where
        Self: Sized,
    {
        hardware::assemble::<Self, R, M, T>(hw)
    }

    /// The start-up configuration: the board's geometry, DRAM budget and
    /// identity, and the engine as the bitstream reports it ([`SYNTH_LANES`]
    /// when absent) at [`OpenSsd::ENGINE_CLOCK_KHZ`].
    fn config<R: Regs, M, T>(board: &mut Board<Self, R, M, T>) -> DeviceConfig
    where
        Self: Sized,
    {
        config::config::<Self, R, M, T>(board)
    }
}

/// The memory-map windows of a board's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    /// The NVMe host controller's registers.
    pub nvme: Region,
    /// Channel 0's NAND controller registers.
    pub nsc: Region,
    /// Distance between the NAND controllers' windows.
    pub nsc_stride: u64,
    /// The engine's registers.
    pub engine: Region,
    /// The NVMe controller's DMA bounce buffer.
    pub host_bounce: Region,
    /// The NAND page buffers and completion words.
    pub nand_buffers: Region,
    /// The console UART.
    pub uart: Region,
}

impl Windows {
    /// Channel `c`'s NAND controller registers.
    pub const fn nsc_of(&self, c: u64) -> Region {
        self.nsc.nth(c, self.nsc_stride)
    }
}

/// Board `B`: `firmware::hal::Parts` of this crate's drivers.
pub type Board<B, R, M, T> = firmware::hal::Parts<
    NvmeHost<R, M>,
    FlashArray<<B as OpenSsd>::Nsc<R>, M>,
    BoardEngine<R>,
    TickClock<T>,
>;
