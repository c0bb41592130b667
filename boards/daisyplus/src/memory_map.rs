//! The Daisyplus address map as this firmware uses it.
//!
//! Established (CRZ-Technology/OpenSSD-OpenChannelSSD, DaisyPlus 2025.1
//! project: `ws/daisyplus/psu_cortexa53_0/standalone_psu_cortexa53_0/bsp/
//! include/xparameters.h` and the block design's address assignment
//! `ws/daisyplus/hw/sdt/.Xil/.../sys_top.bda`):
//!
//! * PS DDR from 0 to 0x7FEF_FFFF; the NVMe controller's DMA master (on
//!   S_AXI_HP1_FPD) and the NAND controllers' data masters (S_AXI_HP0_FPD)
//!   see it at the same addresses, 0 to 0x7FFF_FFFF.
//! * M_AXI_HPM0_FPD: the NAND controllers' microcode BRAMs at
//!   0xA000_0000 + 0x1000·c and their registers (`t4nfc_hlper`) at
//!   0xA001_0000 + 0x1_0000·c, c < 4.
//! * M_AXI_HPM1_FPD: the NAND I/O delay tuners at 0xB000_0000 and
//!   0xB001_0000, the NVMe controller (`nvme_ctrl`) at 0xB002_0000
//!   (128 KiB).
//!
//! Chosen here (nothing public places them): the engine's 4 KiB AXI4-Lite
//! window at 0xA010_0000 on HPM0 (the Tcl of `cargo xtask flash` assigns
//! it there), the image at 1 MiB, the heap, and the DMA windows in the
//! second gigabyte, which the initial page table maps non-cacheable so the
//! CPU and the PL masters see the same bytes without cache maintenance.
//! The console is UART0 (ASSUMED: the board's USB-UART may be wired to
//! UART1 at 0xFF01_0000).

use board_openssd::region::Region;
use ftl::Geometry;

/// The flash: 4 channels × 2 ways of 16 KiB SLC pages, 2048 blocks of 256
/// pages (the Daisyplus FTL's `USER_CHANNELS` 4, `USER_WAYS` 2,
/// `ROWS_PER_SLC_BLOCK` 256, `MAIN_BLOCKS_PER_LUN` 2048 in `ftl_config.h`).
pub const GEOMETRY: Geometry = Geometry::daisyplus();

/// PS DDR the CPU may use (`XPAR_PSU_DDR_0`).
pub const DRAM: Region = Region::new(0, 0x7FF0_0000);
/// The first gigabyte: normal cacheable memory (image, stack, heap).
pub const CACHED: Region = Region::new(0, 1 << 30);
/// The second gigabyte: normal non-cacheable (DMA windows).
pub const UNCACHED: Region = Region::new(1 << 30, 1 << 30);
/// The firmware image (`memory.ld`).
pub const IMAGE: Region = Region::new(0x0010_0000, 0x03F0_0000);
/// The heap: the device core's working set (group buffers, FTL tables).
pub const HEAP: Region = Region::new(0x0400_0000, 0x3C00_0000);
/// Bounce buffer of the NVMe controller's direct DMAs.
pub const HOST_BOUNCE: Region = Region::new(0x4000_0000, 0x1_0000);
/// The NAND page buffers and completion words, a slot per die.
pub const NAND_BUFFERS: Region = Region::new(0x4010_0000, 0x10_0000);

/// M_AXI_HPM0_FPD's 256 MiB window.
pub const HPM0_FPD: Region = Region::new(0xA000_0000, 0x1000_0000);
/// M_AXI_HPM1_FPD's 256 MiB window.
pub const HPM1_FPD: Region = Region::new(0xB000_0000, 0x1000_0000);
/// NAND controller c's microcode BRAM: `NSC_UCODE.nth(c, NSC_UCODE_STRIDE)`.
pub const NSC_UCODE: Region = Region::new(0xA000_0000, 0x1000);
/// Distance between microcode BRAMs.
pub const NSC_UCODE_STRIDE: u64 = 0x1000;
/// NAND controller c's registers: `NSC.nth(c, NSC_STRIDE)`.
pub const NSC: Region = Region::new(0xA001_0000, 0x1_0000);
/// Distance between NAND controllers.
pub const NSC_STRIDE: u64 = 0x1_0000;
/// NAND DQ and DQS delay tuners.
pub const IODELAY: Region = Region::new(0xB000_0000, 0x2_0000);
/// The NVMe host controller.
pub const NVME: Region = Region::new(0xB002_0000, 0x2_0000);
/// The attention engine (ours; see the module docs).
pub const ENGINE: Region = Region::new(0xA010_0000, 1 << engine_regs::ADDR_BITS);
/// The gigabyte of PS peripherals (device memory).
pub const PERIPHERALS: Region = Region::new(0xC000_0000, 1 << 30);
/// The gigabyte holding the PL windows (device memory).
pub const PL: Region = Region::new(0x8000_0000, 1 << 30);
/// Console UART0 (Cadence).
pub const UART: Region = Region::new(0xFF00_0000, 0x1000);
/// The counter frequency when CNTFRQ_EL0 reads 0
/// (`XPAR_CPU_TIMESTAMP_CLK_FREQ`, 33.333 MHz).
pub const TIMESTAMP_HZ: u64 = 33_333_000;

/// Bytes of group buffers the device core may hold: half the heap, the
/// rest for the FTL's tables and the commands' buffers.
pub const DRAM_BUDGET: u64 = HEAP.size / 2;

#[cfg(test)]
mod tests {
    use board_openssd::flash::slots;
    use board_openssd::nvme::regs::DAISYPLUS;
    use board_openssd::region::disjoint;
    use std::format;
    use std::vec::Vec;

    use super::*;

    fn nsc_regions() -> impl Iterator<Item = Region> {
        (0..u64::from(GEOMETRY.channels))
            .flat_map(|c| [NSC.nth(c, NSC_STRIDE), NSC_UCODE.nth(c, NSC_UCODE_STRIDE)])
    }

    #[test]
    fn memory_regions_sit_where_their_caching_needs_them() {
        for r in [IMAGE, HEAP] {
            assert!(CACHED.contains(&r) && DRAM.contains(&r), "{r:?}");
        }
        for r in [HOST_BOUNCE, NAND_BUFFERS] {
            assert!(UNCACHED.contains(&r) && DRAM.contains(&r), "{r:?}");
            assert!(r.end() <= 1 << 32, "32-bit device addresses");
        }
        assert!(disjoint(&[IMAGE, HEAP, HOST_BOUNCE, NAND_BUFFERS]));
    }

    #[test]
    fn dma_windows_are_big_enough() {
        const { assert!(HOST_BOUNCE.size >= 4096) };
        assert!(NAND_BUFFERS.size as usize >= slots::window_bytes(GEOMETRY.dies() as usize));
        assert!(GEOMETRY.page_size as usize <= slots::DATA_BYTES);
    }

    #[test]
    fn pl_windows_sit_in_their_ports_and_never_overlap() {
        let mut pl: Vec<Region> = nsc_regions().collect();
        pl.extend([ENGINE, IODELAY, NVME]);
        assert!(disjoint(&pl));
        for r in nsc_regions().chain([ENGINE]) {
            assert!(HPM0_FPD.contains(&r), "{r:?} on HPM0");
        }
        for r in [IODELAY, NVME] {
            assert!(HPM1_FPD.contains(&r), "{r:?} on HPM1");
        }
        assert_eq!(NVME.size as usize, DAISYPLUS.window);
        assert!(PL.contains(&HPM0_FPD) && PL.contains(&HPM1_FPD));
        assert!(PERIPHERALS.contains(&UART));
    }

    #[test]
    fn the_geometry_is_the_ftl_preset() {
        assert_eq!(
            (GEOMETRY.channels, GEOMETRY.ways, GEOMETRY.page_size),
            (4, 2, 16384)
        );
        assert_eq!(GEOMETRY.pages_per_block, crate::regs::ROWS_PER_BLOCK);
        assert_eq!(GEOMETRY.capacity_bytes(), 64 << 30);
        assert!(GEOMETRY.validate().is_ok());
    }

    #[test]
    fn the_linker_script_places_the_image_where_the_map_says() {
        let ld = include_str!("../memory.ld");
        let want = format!(
            "origin = {:#010x}, length = {:#010x}",
            IMAGE.base, IMAGE.size
        );
        assert!(
            ld.to_lowercase().contains(&want),
            "memory.ld lacks `{want}`:\n{ld}"
        );
    }
}
