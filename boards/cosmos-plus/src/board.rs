//! The Cosmos+ board from its parts: the NVMe host controller, the eight
//! Tiger4 NAND controllers, the engine and the counter, over any register
//! and DMA-memory implementation (MMIO on the board, fakes in tests).

use alloc::vec::Vec;

use board_openssd::board::device_config;
use board_openssd::clock::{TickClock, Ticks};
use board_openssd::engine::BoardEngine;
use board_openssd::flash::{FlashArray, FlashError};
use board_openssd::mmio::{DmaMemory, Regs};
use board_openssd::nvme::regs::COSMOS_PLUS;
use board_openssd::nvme::{HostError, NvmeHost};
use firmware::hal::Parts;
use firmware::{DeviceConfig, EngineInfo};

use crate::memory_map::{DRAM_BUDGET, GEOMETRY};
use crate::nsc::Tiger4Nsc;

/// Engine clock advertised: the InstInfer paper's 285 MHz (measured on
/// Daisyplus; the XC7Z045 fabric is slower, to be measured).
pub const ENGINE_CLOCK_KHZ: u32 = 285_000;
/// Polls allowed per channel for a reset to go out at start-up.
const RESET_SPINS: u32 = 100_000;

/// The Cosmos+ board.
pub type Board<R, M, T> =
    Parts<NvmeHost<R, M>, FlashArray<Tiger4Nsc<R>, M>, BoardEngine<R>, TickClock<T>>;

/// What the board is built from.
#[derive(Debug)]
pub struct Hardware<R, M, T> {
    /// The NVMe host controller's registers.
    pub nvme: R,
    /// Each channel's NAND controller registers.
    pub nsc: Vec<R>,
    /// The engine's registers.
    pub engine: R,
    /// The NVMe bounce buffer.
    pub host_bounce: M,
    /// The NAND page buffers.
    pub nand_buffers: M,
    /// The free-running counter.
    pub counter: T,
}

/// Why the board could not be assembled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BringUpError {
    /// The host interface refused its bounce buffer.
    Host(HostError),
    /// The flash array refused its buffers.
    Flash(FlashError),
    /// Not one NAND controller per channel.
    Channels {
        /// Controllers given.
        got: usize,
    },
}

/// Builds the board; resets every NAND way.
pub fn assemble<R: Regs, M: DmaMemory, T: Ticks>(
    hw: Hardware<R, M, T>,
) -> Result<Board<R, M, T>, BringUpError> {
    if hw.nsc.len() != usize::from(GEOMETRY.channels) {
        return Err(BringUpError::Channels { got: hw.nsc.len() });
    }
    let host = NvmeHost::new(hw.nvme, &COSMOS_PLUS, hw.host_bounce).map_err(BringUpError::Host)?;
    let mut nsc = Tiger4Nsc::new(hw.nsc);
    nsc.reset_all(GEOMETRY.ways, RESET_SPINS);
    let nand = FlashArray::new(nsc, hw.nand_buffers, GEOMETRY).map_err(BringUpError::Flash)?;
    Ok(Parts {
        host,
        nand,
        engine: BoardEngine::probe(hw.engine),
        clock: TickClock::new(hw.counter),
    })
}

/// The start-up configuration: the Cosmos+ geometry, the memory map's DRAM
/// budget, and the engine as the bitstream reports it (the synthesized 2
/// kernels × 8 lanes when absent).
pub fn config<R: Regs, M, T>(board: &mut Board<R, M, T>) -> DeviceConfig {
    let lanes = board
        .engine
        .hardware()
        .map(|hw| hw.config().kernels * hw.config().lanes)
        .unwrap_or(16);
    device_config(
        GEOMETRY,
        DRAM_BUDGET,
        "COSMOSPLUS-0001",
        "InstCSD Cosmos+ OpenSSD",
        EngineInfo {
            clock_khz: ENGINE_CLOCK_KHZ,
            lanes: lanes as u16,
        },
    )
}

#[cfg(test)]
mod tests {
    use board_openssd::fake::{Plain, Recorder, SharedMem};
    use board_openssd::flash::slots;
    use firmware::hal::{Clock, Nand};

    use super::*;
    use crate::regs::{cmd, off};

    struct Counter(u64);
    impl Ticks for Counter {
        fn ticks(&mut self) -> u64 {
            self.0 += 333_333_343;
            self.0
        }
        fn hz(&self) -> u64 {
            333_333_343
        }
    }

    fn hardware(channels: usize) -> Hardware<Recorder<Plain>, SharedMem, Counter> {
        Hardware {
            nvme: Recorder::new(Plain::default()),
            nsc: (0..channels)
                .map(|_| Recorder::new(Plain::default()))
                .collect(),
            engine: Recorder::new(Plain::default()),
            host_bounce: SharedMem::new(0x1000_0000, 0x1_0000),
            nand_buffers: SharedMem::new(0x1010_0000, slots::window_bytes(64)),
            counter: Counter(0),
        }
    }

    #[test]
    fn the_board_assembles_and_resets_every_way() {
        let mut b = assemble(hardware(8)).expect("board");
        assert_eq!(b.host.layout().name, "cosmos-plus");
        assert_eq!(*b.nand.geometry(), GEOMETRY);
        assert_eq!(b.nand.in_flight(), 0);
        assert_eq!(b.clock.now_ns(), 1_000_000_000);
        for c in 0..8 {
            let resets = b
                .nand
                .nsc_mut()
                .channel_mut(c)
                .writes()
                .iter()
                .filter(|&&w| w == (off::CMD_SELECT, cmd::RESET))
                .count();
            assert_eq!(resets, 8, "channel {c}: one reset per way");
        }
        let c = config(&mut b);
        assert_eq!(c.ftl.geometry, GEOMETRY);
        assert_eq!(c.engine.lanes, 16);
    }

    #[test]
    fn bad_parts_are_refused() {
        assert_eq!(
            assemble(hardware(4)).err(),
            Some(BringUpError::Channels { got: 4 })
        );
        let mut p = hardware(8);
        p.nand_buffers = SharedMem::new(0x1010_0000, slots::window_bytes(8));
        assert!(matches!(assemble(p).err(), Some(BringUpError::Flash(_))));
    }
}
