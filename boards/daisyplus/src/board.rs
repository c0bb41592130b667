//! The Daisyplus board from its parts: the NVMe host controller, the four
//! T4 NAND controllers, the engine and the counter, over any register and
//! DMA-memory implementation (MMIO on the board, fakes in tests).

use alloc::vec::Vec;

use board_openssd::board::device_config;
use board_openssd::clock::{TickClock, Ticks};
use board_openssd::engine::BoardEngine;
use board_openssd::flash::{FlashArray, FlashError};
use board_openssd::mmio::{DmaMemory, Regs};
use board_openssd::nvme::regs::DAISYPLUS;
use board_openssd::nvme::{HostError, NvmeHost};
use firmware::hal::Parts;
use firmware::{DeviceConfig, EngineInfo};

use crate::memory_map::{DRAM_BUDGET, GEOMETRY};
use crate::nsc::T4Nsc;

/// The engine clock the InstInfer paper ran on this board (285 MHz).
pub const ENGINE_CLOCK_KHZ: u32 = 285_000;

/// The Daisyplus board.
pub type Board<R, M, T> =
    Parts<NvmeHost<R, M>, FlashArray<T4Nsc<R>, M>, BoardEngine<R>, TickClock<T>>;

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

/// Builds the board; queues a reset of every NAND way.
pub fn assemble<R: Regs, M: DmaMemory, T: Ticks>(
    hw: Hardware<R, M, T>,
) -> Result<Board<R, M, T>, BringUpError> {
    if hw.nsc.len() != usize::from(GEOMETRY.channels) {
        return Err(BringUpError::Channels { got: hw.nsc.len() });
    }
    let host = NvmeHost::new(hw.nvme, &DAISYPLUS, hw.host_bounce).map_err(BringUpError::Host)?;
    let mut nsc = T4Nsc::new(hw.nsc);
    // Best effort: a controller whose queue is full is not idle, so it has
    // been brought up by someone already.
    nsc.reset_all(GEOMETRY.ways);
    let nand = FlashArray::new(nsc, hw.nand_buffers, GEOMETRY).map_err(BringUpError::Flash)?;
    Ok(Parts {
        host,
        nand,
        engine: BoardEngine::probe(hw.engine),
        clock: TickClock::new(hw.counter),
    })
}

/// The start-up configuration: the Daisyplus geometry, the DRAM budget of
/// the memory map, and the engine as the bitstream reports it (2 kernels ×
/// 8 lanes when absent, the synthesized engine).
pub fn config<R: Regs, M, T>(board: &mut Board<R, M, T>) -> DeviceConfig {
    let lanes = board
        .engine
        .hardware()
        .map(|hw| hw.config().kernels * hw.config().lanes)
        .unwrap_or(16);
    device_config(
        GEOMETRY,
        DRAM_BUDGET,
        "DAISYPLUS-0001",
        "InstCSD Daisyplus OpenSSD",
        EngineInfo {
            clock_khz: ENGINE_CLOCK_KHZ,
            lanes: lanes as u16,
        },
    )
}

#[cfg(test)]
mod tests {
    use board_openssd::clock::Ticks;
    use board_openssd::fake::{Plain, Recorder, SharedMem};
    use board_openssd::flash::slots;
    use firmware::hal::{Clock, Nand};

    use super::*;

    struct Counter(u64);
    impl Ticks for Counter {
        fn ticks(&mut self) -> u64 {
            self.0 += 33_333;
            self.0
        }
        fn hz(&self) -> u64 {
            33_333_000
        }
    }

    fn hardware(channels: usize) -> Hardware<Recorder<Plain>, SharedMem, Counter> {
        Hardware {
            nvme: Recorder::new(Plain::default()),
            nsc: (0..channels)
                .map(|_| Recorder::new(Plain::default()))
                .collect(),
            engine: Recorder::new(Plain::default()),
            host_bounce: SharedMem::new(0x4000_0000, 0x1_0000),
            nand_buffers: SharedMem::new(0x4010_0000, slots::window_bytes(8)),
            counter: Counter(0),
        }
    }

    #[test]
    fn the_board_assembles_from_its_parts() {
        let mut b = assemble(hardware(4)).expect("board");
        assert_eq!(b.host.layout().name, "daisyplus");
        assert_eq!(*b.nand.geometry(), GEOMETRY);
        assert_eq!(b.nand.in_flight(), 0);
        assert_eq!(
            b.clock.now_ns(),
            1_000_000,
            "one 33.333 MHz millisecond per read"
        );
        let c = config(&mut b);
        assert_eq!(c.ftl.geometry, GEOMETRY);
        assert_eq!(c.engine.lanes, 16, "no engine behind a blank register file");
        assert_eq!(c.engine.clock_khz, 285_000);
    }

    #[test]
    fn the_wrong_number_of_controllers_is_refused() {
        assert_eq!(
            assemble(hardware(3)).err(),
            Some(BringUpError::Channels { got: 3 })
        );
    }

    #[test]
    fn too_small_buffers_are_refused() {
        let mut p = hardware(4);
        p.nand_buffers = SharedMem::new(0x4010_0000, slots::SLOT);
        assert!(matches!(assemble(p).err(), Some(BringUpError::Flash(_))));
        let mut p = hardware(4);
        p.host_bounce = SharedMem::new(0x4000_0000, 512);
        assert!(matches!(assemble(p).err(), Some(BringUpError::Host(_))));
    }
}
