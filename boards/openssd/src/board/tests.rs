//! The assembly and the start-up configuration of a board described by a
//! test [`OpenSsd`]: what every board shares, whatever its controller.

use std::vec::Vec;

use engine_regs::reg;
use firmware::hal::{Clock, Nand};
use ftl::{Geometry, Ppa};

use super::*;
use crate::fake::{Plain, Recorder, SharedMem, StepCounter, plain_hardware};
use crate::flash::{NscCmd, slots};
use crate::nvme::regs::DAISYPLUS;

/// A board of 2 channels × 2 ways whose controller only counts what it
/// was given.
pub(crate) struct Bench;

/// The controller: how many channels it was built over.
pub(crate) struct Count {
    channels: usize,
}

impl Nsc for Count {
    fn can_issue(&mut self, _: u8) -> bool {
        true
    }
    fn issue(&mut self, _: u8, _: u8, _: NscCmd) {}
    fn row(&self, p: Ppa) -> u32 {
        p.page
    }
}

const GEOMETRY: Geometry = Geometry {
    channels: 2,
    ways: 2,
    blocks_per_die: 8,
    pages_per_block: 256,
    page_size: 16384,
};

impl OpenSsd for Bench {
    const HOST: &'static HostLayout = &DAISYPLUS;
    const GEOMETRY: Geometry = GEOMETRY;
    const DRAM_BUDGET: u64 = 1 << 20;
    const SERIAL: &'static str = "BENCH-1";
    const MODEL: &'static str = "InstCSD bench";
    const ENGINE_CLOCK_KHZ: u32 = 100_000;
    const WINDOWS: Windows = Windows {
        nvme: Region::new(0xB000_0000, 0x2_0000),
        nsc: Region::new(0xA000_0000, 0x1000),
        nsc_stride: 0x1_0000,
        engine: Region::new(0xA100_0000, 0x1000),
        host_bounce: Region::new(0x4000_0000, 0x1_0000),
        nand_buffers: Region::new(0x4010_0000, 0x1_0000),
        uart: Region::new(0xFF00_0000, 0x1000),
    };
    type Nsc<R: Regs> = Count;
    fn nsc<R: Regs>(channels: Vec<R>) -> Count {
        Count {
            channels: channels.len(),
        }
    }
}

/// One tick = one millisecond.
fn hardware(channels: usize) -> Hardware<Recorder<Plain>, SharedMem, StepCounter> {
    plain_hardware(channels, 0x4000_0000, 4, StepCounter::new(1, 1000))
}

#[test]
fn a_board_assembles_from_its_parts_and_its_description() {
    let mut b = Bench::assemble(hardware(2)).expect("board");
    assert_eq!(b.host.layout().name, "daisyplus");
    assert_eq!(*b.nand.geometry(), GEOMETRY);
    assert_eq!(b.nand.nsc_mut().channels, 2, "one controller per channel");
    assert_eq!(b.nand.in_flight(), 0);
    assert_eq!(b.clock.now_ns(), 1_000_000, "one millisecond per read");
    let c = Bench::config(&mut b);
    assert_eq!(c.ftl.geometry, GEOMETRY);
    assert_eq!(c.ftl.dram_budget, 1 << 20);
    assert_eq!(c.identity.vendor_id, VENDOR_ID);
    assert!(c.identity.serial.starts_with(b"BENCH-1 "));
    assert!(c.identity.model.starts_with(b"InstCSD bench "));
    assert_eq!(c.engine.clock_khz, 100_000);
    assert_eq!(
        u32::from(c.engine.lanes),
        SYNTH_LANES,
        "no engine behind a blank register file"
    );
}

#[test]
fn the_engine_the_bitstream_reports_sets_the_lanes() {
    let mut hw = hardware(2);
    let regs = &mut hw.engine.model;
    regs.set(reg::ID as usize, engine_regs::ID);
    regs.set(reg::VERSION as usize, engine_regs::VERSION);
    // 4 channels, 1 kernel, 4 lanes.
    regs.set(reg::CONFIG as usize, 64 << 16 | 4 << 12 | 1 << 8 | 4);
    let mut b = Bench::assemble(hw).expect("board");
    assert_eq!(Bench::config(&mut b).engine.lanes, 4);
}

#[test]
fn the_wrong_number_of_controllers_is_refused() {
    for got in [0, 1, 3] {
        assert_eq!(
            Bench::assemble(hardware(got)).err(),
            Some(BringUpError::Channels { got })
        );
    }
}

#[test]
fn too_small_buffers_are_refused() {
    let mut p = hardware(2);
    p.nand_buffers = SharedMem::new(0x4010_0000, slots::SLOT);
    assert!(matches!(
        Bench::assemble(p).err(),
        Some(BringUpError::Flash(_))
    ));
    let mut p = hardware(2);
    p.host_bounce = SharedMem::new(0x4000_0000, 512);
    assert!(matches!(
        Bench::assemble(p).err(),
        Some(BringUpError::Host(_))
    ));
}

#[test]
fn windows_step_through_the_controllers() {
    let w = Bench::WINDOWS;
    assert_eq!(w.nsc_of(0), w.nsc);
    assert_eq!(w.nsc_of(3), Region::new(0xA003_0000, 0x1000));
}
