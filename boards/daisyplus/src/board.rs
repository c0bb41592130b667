//! The Daisyplus board as an [`OpenSsd`]: the ZynqMP generation of the
//! NVMe host controller, four T4 NAND controllers, the geometry, identity
//! and memory map. The assembly is `board_openssd::board`'s.

use alloc::vec::Vec;

use board_openssd::board::{OpenSsd, Windows};
use board_openssd::mmio::Regs;
use board_openssd::nvme::regs::{DAISYPLUS, HostLayout};
use ftl::Geometry;

use crate::memory_map as map;
use crate::nsc::T4Nsc;

/// The Daisyplus board.
#[derive(Clone, Copy, Debug)]
pub struct Daisyplus;

/// The Daisyplus board over registers `R`, DMA memory `M`, counter `T`.
pub type Board<R, M, T> = board_openssd::board::Board<Daisyplus, R, M, T>;

impl OpenSsd for Daisyplus {
    const HOST: &'static HostLayout = &DAISYPLUS;
    const GEOMETRY: Geometry = map::GEOMETRY;
    const DRAM_BUDGET: u64 = map::DRAM_BUDGET;
    const SERIAL: &'static str = "DAISYPLUS-0001";
    const MODEL: &'static str = "InstCSD Daisyplus OpenSSD";
    /// The engine clock the InstInfer paper ran on this board (285 MHz).
    const ENGINE_CLOCK_KHZ: u32 = 285_000;
    const WINDOWS: Windows = Windows {
        nvme: map::NVME,
        nsc: map::NSC,
        nsc_stride: map::NSC_STRIDE,
        engine: map::ENGINE,
        host_bounce: map::HOST_BOUNCE,
        nand_buffers: map::NAND_BUFFERS,
        uart: map::UART,
    };

    type Nsc<R: Regs> = T4Nsc<R>;

    /// Queues a reset of every NAND way.
    fn nsc<R: Regs>(channels: Vec<R>) -> T4Nsc<R> {
        let mut nsc = T4Nsc::new(channels);
        // Best effort: a controller whose queue is full is not idle, so it
        // has been brought up by someone already.
        nsc.reset_all(map::GEOMETRY.ways);
        nsc
    }
}

#[cfg(test)]
mod tests {
    use board_openssd::board::{BringUpError, Hardware};
    use board_openssd::fake::{Plain, Recorder, SharedMem, StepCounter, plain_hardware};
    use firmware::hal::{Clock, Nand};

    use super::*;
    use crate::memory_map::GEOMETRY;

    /// 1 ms of the 33.333 MHz counter per read.
    fn hardware(channels: usize) -> Hardware<Recorder<Plain>, SharedMem, StepCounter> {
        plain_hardware(
            channels,
            0x4000_0000,
            8,
            StepCounter::new(33_333, 33_333_000),
        )
    }

    #[test]
    fn the_board_assembles_from_its_parts() {
        let mut b = Daisyplus::assemble(hardware(4)).expect("board");
        assert_eq!(b.host.layout().name, "daisyplus");
        assert_eq!(*b.nand.geometry(), GEOMETRY);
        assert_eq!(b.nand.in_flight(), 0);
        assert_eq!(
            b.clock.now_ns(),
            1_000_000,
            "one 33.333 MHz millisecond per read"
        );
        let c = Daisyplus::config(&mut b);
        assert_eq!(c.ftl.geometry, GEOMETRY);
        assert_eq!(c.engine.lanes, 16, "no engine behind a blank register file");
        assert_eq!(c.engine.clock_khz, 285_000);
    }

    #[test]
    fn the_wrong_number_of_controllers_is_refused() {
        assert_eq!(
            Daisyplus::assemble(hardware(3)).err(),
            Some(BringUpError::Channels { got: 3 })
        );
    }
}
