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
    use board_openssd::clock::Ticks;
    use board_openssd::fake::{Plain, Recorder, SharedMem};
    use board_openssd::flash::slots;
    use firmware::hal::{Clock, Nand};

    use super::*;
    use crate::memory_map::GEOMETRY;

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
