//! The board's fixed addresses as register and DMA windows: this crate's
//! only `unsafe`. Built for the board only (`armv7a-none-eabi`).
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use board_openssd::mmio::{DmaWindow, Mmio};
use board_openssd::region::Region;
use board_openssd::uart::CadenceUart;

use crate::board::Hardware;
use crate::memory_map::{self as map, GEOMETRY};
use crate::timer::GlobalTimer;

static TAKEN: AtomicBool = AtomicBool::new(false);

fn regs(r: Region) -> Mmio {
    // SAFETY: `take`'s contract: the MMU maps every window of the memory
    // map as device memory, and `TAKEN` makes this the only owner of each.
    unsafe { Mmio::new(r.addr(), r.size as usize) }
}

fn dma(r: Region) -> DmaWindow {
    // SAFETY: `take`'s contract: the DMA regions are mapped non-cacheable,
    // outside the image and the heap, and the PL masters see DDR at the
    // CPU's addresses (HP ports at 0, `OpenSSD2_bd.tcl`).
    unsafe { DmaWindow::new(r.addr(), r.base, r.size as usize) }
}

/// The board's parts, once (`None` after the first call).
///
/// # Safety
///
/// The MMU must map the memory map's device windows as device memory and
/// its DMA regions as normal non-cacheable memory, and nothing else may
/// touch those windows.
pub unsafe fn take() -> Option<Hardware<Mmio, DmaWindow, GlobalTimer<Mmio>>> {
    // A single-core image without interrupts: a plain load/store flag is
    // enough (no exclusive access needed while the MMU may be off).
    if TAKEN.load(Ordering::Acquire) {
        return None;
    }
    TAKEN.store(true, Ordering::Release);
    let nsc: Vec<Mmio> = (0..u64::from(GEOMETRY.channels))
        .map(|c| regs(map::NSC.nth(c, map::NSC_STRIDE)))
        .collect();
    Some(Hardware {
        nvme: regs(map::NVME),
        nsc,
        engine: regs(map::ENGINE),
        host_bounce: dma(map::HOST_BOUNCE),
        nand_buffers: dma(map::NAND_BUFFERS),
        counter: GlobalTimer::new(regs(map::GLOBAL_TIMER), map::GLOBAL_TIMER_HZ),
    })
}

/// The console UART.
///
/// # Safety
///
/// As [`take`], for the UART; at most one console may be live (the panic
/// handler makes its own after everything else has stopped).
pub unsafe fn console() -> CadenceUart<Mmio> {
    // SAFETY: the caller's contract.
    CadenceUart::new(unsafe { Mmio::new(map::UART.addr(), map::UART.size as usize) })
}
