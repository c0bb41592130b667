//! The board's fixed addresses as register and DMA windows, and the
//! Cortex-A53 counter: this crate's only `unsafe`. Built for the board
//! only (`aarch64-unknown-none`).
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use board_openssd::clock::Ticks;
use board_openssd::mmio::{DmaWindow, Mmio};
use board_openssd::region::Region;
use board_openssd::uart::CadenceUart;

use crate::board::Hardware;
use crate::memory_map::{self as map, GEOMETRY};

/// The generic timer's physical count (CNTPCT_EL0).
#[derive(Debug)]
pub struct GenericTimer {
    hz: u64,
}

impl GenericTimer {
    /// The timer at the frequency CNTFRQ_EL0 reports (the FSBL sets it;
    /// [`map::TIMESTAMP_HZ`] if it reads 0).
    pub fn new() -> Self {
        let hz: u64;
        // SAFETY: reading CNTFRQ_EL0 has no side effects at EL3.
        unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) hz, options(nomem, nostack)) };
        Self {
            hz: if hz == 0 { map::TIMESTAMP_HZ } else { hz },
        }
    }
}

impl Default for GenericTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl Ticks for GenericTimer {
    fn ticks(&mut self) -> u64 {
        let t: u64;
        // SAFETY: reading CNTPCT_EL0 has no side effects at EL3.
        unsafe {
            core::arch::asm!("isb", "mrs {}, cntpct_el0", out(reg) t, options(nomem, nostack))
        };
        t
    }

    fn hz(&self) -> u64 {
        self.hz
    }
}

static TAKEN: AtomicBool = AtomicBool::new(false);

fn regs(r: Region) -> Mmio {
    // SAFETY: `take`'s contract: the page table maps every PL window of
    // the memory map as device memory, and `TAKEN` makes this the only
    // owner of each.
    unsafe { Mmio::new(r.addr(), r.size as usize) }
}

fn dma(r: Region) -> DmaWindow {
    // SAFETY: `take`'s contract: the DMA regions are mapped non-cacheable,
    // outside the image and the heap, and the PL masters see DRAM at the
    // CPU's addresses (identity map, `sys_top.bda`).
    unsafe { DmaWindow::new(r.addr(), r.base, r.size as usize) }
}

/// The board's parts, once (`None` after the first call).
///
/// # Safety
///
/// The running page table must map the memory map's PL windows as device
/// memory and its DMA regions as normal non-cacheable memory, and nothing
/// else may touch those windows.
pub unsafe fn take() -> Option<Hardware<Mmio, DmaWindow, GenericTimer>> {
    if TAKEN.swap(true, Ordering::AcqRel) {
        return None;
    }
    let nsc: Vec<Mmio> = (0..u64::from(GEOMETRY.channels))
        .map(|c| regs(map::NSC.nth(c, map::NSC_STRIDE)))
        .collect();
    Some(Hardware {
        nvme: regs(map::NVME),
        nsc,
        engine: regs(map::ENGINE),
        host_bounce: dma(map::HOST_BOUNCE),
        nand_buffers: dma(map::NAND_BUFFERS),
        counter: GenericTimer::new(),
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
