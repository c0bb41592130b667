//! Memory map, startup and clock of the zcu102 board under QEMU.
#![allow(unsafe_code)] // the aarch64-rt entry and the counter's system registers

use aarch64_rt::{ExceptionHandlers, InitialPagetable, entry, exception_handlers};
use board_qemu_common::{Board, serve};
use firmware::hal::Clock;
use ftl::Geometry;

/// UART0 (Cadence) of the ZynqMP.
const UART0: usize = 0xFF00_0000;
/// UART1: defmt log frames.
const UART1: usize = 0xFF01_0000;
/// Heap: 1 GiB of DDR above the image (which is below 256 MiB).
const HEAP: (usize, usize) = (0x2000_0000, 0x4000_0000);

/// Stage-1 block descriptor bits (4 KiB granule, level 1, 1 GiB blocks).
const BLOCK: u64 = 0b01;
const AF: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 0b11 << 8;
const UXN: u64 = 1 << 54;
const PXN: u64 = 1 << 53;
/// MAIR index 0: Device-nGnRE; index 1: normal write-back cacheable.
const ATTR_DEVICE: u64 = 0 << 2;
const ATTR_NORMAL: u64 = 1 << 2;
const MAIR: u64 = 0x04 | 0xFF << 8;

const fn normal(gib: u64) -> usize {
    (gib << 30 | BLOCK | ATTR_NORMAL | INNER_SHAREABLE | AF) as usize
}

const fn device(gib: u64) -> usize {
    (gib << 30 | BLOCK | ATTR_DEVICE | AF | UXN | PXN) as usize
}

aarch64_rt::initial_pagetable!(
    {
        let mut idmap = [0usize; 512];
        // DDR: 0–2 GiB.
        idmap[0] = normal(0);
        idmap[1] = normal(1);
        // Peripherals (UART0 at 0xFF00_0000): 3–4 GiB.
        idmap[3] = device(3);
        InitialPagetable(idmap)
    },
    MAIR
);

struct Exceptions;
impl ExceptionHandlers for Exceptions {}
exception_handlers!(Exceptions);

entry!(main);

/// The generic timer's virtual count, in nanoseconds.
#[derive(Debug)]
struct GenericTimer {
    freq: u64,
}

impl GenericTimer {
    fn new() -> Self {
        let freq: u64;
        // SAFETY: reading CNTFRQ_EL0 has no side effects and is allowed at EL1.
        unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) freq, options(nomem, nostack)) };
        Self { freq: freq.max(1) }
    }
}

impl Clock for GenericTimer {
    fn now_ns(&self) -> u64 {
        let count: u64;
        // SAFETY: reading CNTVCT_EL0 has no side effects and is allowed at EL1.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) count, options(nomem, nostack)) };
        (u128::from(count) * 1_000_000_000 / u128::from(self.freq)) as u64
    }
}

fn main(_x0: u64, _x1: u64, _x2: u64, _x3: u64) -> ! {
    let board = Board {
        name: "qemu-zynqmp",
        id: 1,
        geometry: Geometry::daisyplus(),
        heap: HEAP,
        uart_base: UART0,
        log_uart_base: UART1,
    };
    serve(&board, GenericTimer::new())
}
