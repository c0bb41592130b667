//! The Cosmos+ address map as this firmware uses it.
//!
//! Established (the 8-channel × 8-way predefined block design,
//! `josephly88/GreedyOpenSSD: OpenSSD2-8C8W-Prebuild-3.0.0_hw_platform_0/
//! OpenSSD2_bd.tcl`, and the memory map of the Cosmos+ firmware,
//! `SKKJH/DaisyPlus_Trim: memory_map.h`, a copy of it):
//!
//! * PS DDR (1 GiB) at 0x0010_0000–0x3FFF_FFFF for the CPU; the NVMe
//!   controller's DMA master (S_AXI_HP3) and the NAND controllers' data
//!   masters (S_AXI_HP0/HP1) see DDR at 0–0x3FFF_FFFF, the same addresses.
//! * M_AXI_GP0 (0x4000_0000, 1 GiB): the Tiger4 NAND controllers
//!   (`Tiger4NSC_c/C_AXI`) at 0x43C0_0000 + 0x1_0000·c, c < 8.
//! * M_AXI_GP1 (0x8000_0000, 1 GiB): the NVMe host controller
//!   (`NVMeHostController_0/s0_axi`) at 0x83C0_0000, 64 KiB.
//! * The Cortex-A9 MPCore private timers at 0xF8F0_0000 (global timer at
//!   +0x200; Xilinx UG585).
//!
//! Chosen here: the engine's 4 KiB AXI4-Lite window at 0x43D0_0000 on GP0
//! (above the eight NAND controllers; the Tcl of `cargo xtask flash`
//! assigns it there), the image at 1 MiB, the heap below 256 MiB, and the
//! DMA windows above 256 MiB, which the start-up code maps non-cacheable
//! (as the Cosmos+ firmware does from 0x1000_0000).
//!
//! ASSUMED: the console is UART1 at 0xE000_1000, and the CPU runs at
//! 666.67 MHz, so the global timer (PERIPHCLK = CPU/2) counts at 333.33 MHz
//! (`XPAR_CPU_CORTEXA9_0_CPU_CLK_FREQ_HZ` 666666687 in public test
//! stand-ins of the Cosmos+ BSP).

use board_openssd::region::Region;
use ftl::Geometry;

/// The flash: 8 channels × 8 ways, 4096 blocks of 256 pages of 16 KiB
/// (the ftl preset).
pub const GEOMETRY: Geometry = Geometry::cosmos_plus();

/// PS DDR the CPU may use.
pub const DRAM: Region = Region::new(0x0010_0000, 0x3FF0_0000);
/// Normal cacheable memory: image, stack, heap.
pub const CACHED: Region = Region::new(0, 0x1000_0000);
/// Normal non-cacheable memory: the DMA windows.
pub const UNCACHED: Region = Region::new(0x1000_0000, 0x3000_0000);
/// The firmware image (`link.ld`).
pub const IMAGE: Region = Region::new(0x0010_0000, 0x03F0_0000);
/// The heap: the device core's working set.
pub const HEAP: Region = Region::new(0x0400_0000, 0x0C00_0000);
/// Bounce buffer of the NVMe controller's direct DMAs.
pub const HOST_BOUNCE: Region = Region::new(0x1000_0000, 0x1_0000);
/// The NAND page buffers and completion words, a slot per die.
pub const NAND_BUFFERS: Region = Region::new(0x1010_0000, 0x20_0000);

/// M_AXI_GP0's window.
pub const GP0: Region = Region::new(0x4000_0000, 0x4000_0000);
/// M_AXI_GP1's window.
pub const GP1: Region = Region::new(0x8000_0000, 0x4000_0000);
/// NAND controller c's registers: `NSC.nth(c, NSC_STRIDE)`.
pub const NSC: Region = Region::new(0x43C0_0000, 0x1_0000);
/// Distance between NAND controllers.
pub const NSC_STRIDE: u64 = 0x1_0000;
/// The NVMe host controller.
pub const NVME: Region = Region::new(0x83C0_0000, 0x1_0000);
/// The attention engine (ours; see the module docs).
pub const ENGINE: Region = Region::new(0x43D0_0000, 1 << engine_regs::ADDR_BITS);
/// Everything from GP0 up: device memory.
pub const DEVICE: Region = Region::new(0x4000_0000, 0xC000_0000);
/// Console UART1 (Cadence).
pub const UART: Region = Region::new(0xE000_1000, 0x1000);
/// The A9 global timer.
pub const GLOBAL_TIMER: Region = Region::new(0xF8F0_0200, 0x100);
/// Global timer rate: PERIPHCLK, half the CPU clock (ASSUMED 666.67 MHz).
pub const GLOBAL_TIMER_HZ: u64 = 333_333_343;

/// Bytes of group buffers the device core may hold: half the heap.
pub const DRAM_BUDGET: u64 = HEAP.size / 2;

#[cfg(test)]
mod tests {
    use board_openssd::flash::slots;
    use board_openssd::nvme::regs::COSMOS_PLUS;
    use board_openssd::region::disjoint;
    use std::format;
    use std::vec::Vec;

    use super::*;

    fn nscs() -> impl Iterator<Item = Region> {
        (0..u64::from(GEOMETRY.channels)).map(|c| NSC.nth(c, NSC_STRIDE))
    }

    #[test]
    fn memory_regions_sit_where_their_caching_needs_them() {
        for r in [IMAGE, HEAP] {
            assert!(CACHED.contains(&r) && DRAM.contains(&r), "{r:?}");
        }
        for r in [HOST_BOUNCE, NAND_BUFFERS] {
            assert!(UNCACHED.contains(&r) && DRAM.contains(&r), "{r:?}");
        }
        assert!(disjoint(&[IMAGE, HEAP, HOST_BOUNCE, NAND_BUFFERS]));
        // The start-up code maps whole megabytes.
        for r in [CACHED, UNCACHED, DEVICE] {
            assert_eq!((r.base % (1 << 20), r.size % (1 << 20)), (0, 0), "{r:?}");
        }
    }

    #[test]
    fn dma_windows_are_big_enough() {
        const { assert!(HOST_BOUNCE.size >= 4096) };
        assert!(NAND_BUFFERS.size as usize >= slots::window_bytes(GEOMETRY.dies() as usize));
    }

    #[test]
    fn pl_windows_sit_in_their_ports_and_never_overlap() {
        let mut pl: Vec<Region> = nscs().collect();
        pl.extend([ENGINE, NVME]);
        assert!(disjoint(&pl));
        for r in nscs().chain([ENGINE]) {
            assert!(GP0.contains(&r), "{r:?} on GP0");
        }
        assert!(GP1.contains(&NVME));
        assert_eq!(NVME.size as usize, COSMOS_PLUS.window);
        for r in [GP0, GP1, UART, GLOBAL_TIMER] {
            assert!(DEVICE.contains(&r), "{r:?} is device memory");
        }
    }

    #[test]
    fn the_geometry_is_the_ftl_preset() {
        assert_eq!(
            (GEOMETRY.channels, GEOMETRY.ways, GEOMETRY.page_size),
            (8, 8, 16384)
        );
        assert_eq!(GEOMETRY.pages_per_block, crate::regs::ROWS_PER_BLOCK);
        assert!(GEOMETRY.validate().is_ok());
    }

    #[test]
    fn the_linker_script_places_the_image_where_the_map_says() {
        let ld = include_str!("../link.ld").to_lowercase();
        let want = format!(
            "origin = {:#010x}, length = {:#010x}",
            IMAGE.base, IMAGE.size
        );
        assert!(ld.contains(&want), "link.ld lacks `{want}`");
    }
}
