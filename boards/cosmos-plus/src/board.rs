//! The Cosmos+ board as an [`OpenSsd`]: the Zynq-7000 generation of the
//! NVMe host controller, eight Tiger4 NAND controllers, the geometry,
//! identity and memory map. The assembly is `board_openssd::board`'s.

use alloc::vec::Vec;

use board_openssd::board::{OpenSsd, Windows};
use board_openssd::mmio::Regs;
use board_openssd::nvme::regs::{COSMOS_PLUS, HostLayout};
use ftl::Geometry;

use crate::memory_map as map;
use crate::nsc::Tiger4Nsc;

/// Polls allowed per channel for a reset to go out at start-up.
const RESET_SPINS: u32 = 100_000;

/// The Cosmos+ board.
#[derive(Clone, Copy, Debug)]
pub struct CosmosPlus;

/// The Cosmos+ board over registers `R`, DMA memory `M`, counter `T`.
pub type Board<R, M, T> = board_openssd::board::Board<CosmosPlus, R, M, T>;

impl OpenSsd for CosmosPlus {
    const HOST: &'static HostLayout = &COSMOS_PLUS;
    const GEOMETRY: Geometry = map::GEOMETRY;
    const DRAM_BUDGET: u64 = map::DRAM_BUDGET;
    const SERIAL: &'static str = "COSMOSPLUS-0001";
    const MODEL: &'static str = "InstCSD Cosmos+ OpenSSD";
    /// The InstInfer paper's 285 MHz (measured on Daisyplus; the XC7Z045
    /// fabric is slower, to be measured).
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

    type Nsc<R: Regs> = Tiger4Nsc<R>;

    /// Resets every NAND way.
    fn nsc<R: Regs>(channels: Vec<R>) -> Tiger4Nsc<R> {
        let mut nsc = Tiger4Nsc::new(channels);
        nsc.reset_all(map::GEOMETRY.ways, RESET_SPINS);
        nsc
    }
}

#[cfg(test)]
mod tests {
    use board_openssd::board::{BringUpError, Hardware};
    use board_openssd::fake::{Plain, Recorder, SharedMem, StepCounter, plain_hardware};
    use board_openssd::flash::slots;
    use firmware::hal::{Clock, Nand};

    use super::*;
    use crate::memory_map::GEOMETRY;
    use crate::regs::{cmd, off};

    /// One second of the 333 MHz global timer per read.
    fn hardware(channels: usize) -> Hardware<Recorder<Plain>, SharedMem, StepCounter> {
        plain_hardware(
            channels,
            0x1000_0000,
            64,
            StepCounter::new(333_333_343, 333_333_343),
        )
    }

    #[test]
    fn the_board_assembles_and_resets_every_way() {
        let mut b = CosmosPlus::assemble(hardware(8)).expect("board");
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
        let c = CosmosPlus::config(&mut b);
        assert_eq!(c.ftl.geometry, GEOMETRY);
        assert_eq!(c.engine.lanes, 16);
    }

    #[test]
    fn bad_parts_are_refused() {
        assert_eq!(
            CosmosPlus::assemble(hardware(4)).err(),
            Some(BringUpError::Channels { got: 4 })
        );
        let mut p = hardware(8);
        p.nand_buffers = SharedMem::new(0x1010_0000, slots::window_bytes(8));
        assert!(matches!(
            CosmosPlus::assemble(p).err(),
            Some(BringUpError::Flash(_))
        ));
    }
}
