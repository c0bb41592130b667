//! Startup, memory map and clock of the Zynq-7000 board under QEMU.
#![allow(unsafe_code)] // startup symbols (`no_mangle`) and the global timer's registers

use board_qemu_common::{Board, serve};
use firmware::hal::Clock;
use ftl::Geometry;

/// UART0 (Cadence) of the Zynq-7000.
const UART0: usize = 0xE000_0000;
/// UART1: defmt log frames.
const UART1: usize = 0xE000_1000;
/// Heap: 512 MiB of DDR above the image, its stack and `.bss`.
const HEAP: (usize, usize) = (0x1000_0000, 0x2000_0000);
/// The A9 MPCore global timer (private peripherals at 0xF8F0_0000).
const GTIMER: usize = 0xF8F0_0200;
/// Global timer ticks per µs: PERIPHCLK, half the 667 MHz CPU clock of a
/// Zynq-7000 speed grade -1 (a nominal figure: QEMU does not model it).
const GTIMER_TICKS_PER_US: u64 = 333;

core::arch::global_asm!(
    r#"
    .section .text.start, "ax"
    .arm
    .global _start
_start:
    b reset
    b fault_undef
    b fault_svc
    b fault_pabort
    b fault_dabort
    b fault_undef
    b fault_irq
    b fault_irq
reset:
    ldr sp, =__stack_top
    ldr r0, =_start
    mcr p15, 0, r0, c12, c0, 0
    ldr r0, =__bss_start
    ldr r1, =__bss_end
    mov r2, #0
1:
    cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    bl zynq7000_main
2:
    b 2b
fault_undef:
    mov r0, #1
    b zynq7000_fault
fault_svc:
    mov r0, #2
    b zynq7000_fault
fault_pabort:
    mov r0, #3
    b zynq7000_fault
fault_dabort:
    mov r0, #4
    b zynq7000_fault
fault_irq:
    mov r0, #5
    b zynq7000_fault
"#
);

/// A CPU exception: exit QEMU with status 10 + its kind (1 undefined,
/// 2 SVC, 3 prefetch abort, 4 data abort, 5 IRQ/FIQ).
#[unsafe(no_mangle)]
extern "C" fn zynq7000_fault(kind: u32) -> ! {
    semihosting_exit(10 + kind as i32)
}

fn semihosting_exit(code: i32) -> ! {
    board_qemu_common::exit(code)
}

/// The A9 global timer, read as nanoseconds at its nominal rate.
#[derive(Debug)]
struct GlobalTimer;

impl GlobalTimer {
    fn start() -> Self {
        // SAFETY: GTIMER + 8 is the global timer's control register in the
        // A9's private peripheral region; setting bit 0 starts the counter.
        unsafe { core::ptr::write_volatile((GTIMER + 8) as *mut u32, 1) };
        Self
    }
}

impl Clock for GlobalTimer {
    fn now_ns(&self) -> u64 {
        let read = |off: usize| {
            // SAFETY: counter registers of the global timer; reads have no
            // side effects.
            unsafe { core::ptr::read_volatile((GTIMER + off) as *const u32) }
        };
        // High, low, high again: retry if the low word wrapped in between.
        let ticks = loop {
            let hi = read(4);
            let lo = read(0);
            if read(4) == hi {
                break u64::from(hi) << 32 | u64::from(lo);
            }
        };
        ticks * 1000 / GTIMER_TICKS_PER_US
    }
}

#[unsafe(no_mangle)]
extern "C" fn zynq7000_main() -> ! {
    let board = Board {
        name: "qemu-zynq7000",
        id: 2,
        geometry: Geometry::cosmos_plus(),
        heap: HEAP,
        uart_base: UART0,
        log_uart_base: UART1,
    };
    serve(&board, GlobalTimer::start())
}
