//! Start-up and run-time support of the image: aarch64-rt's entry (boot
//! stack, .bss, vector table) at EL3 with the initial page table below, the
//! heap, the heap lock, the panic handler. The binary's only `unsafe`.
//!
//! Page table (level 1, 1 GiB blocks, identity):
//!
//! | gigabyte | what | memory type |
//! | --- | --- | --- |
//! | 0 | DDR: image, stack, heap | normal, write-back cacheable |
//! | 1 | DDR: DMA windows | normal, non-cacheable (the PL masters are not coherent) |
//! | 2 | PL: HPM0_LPD, HPM0_FPD, HPM1_FPD | device nGnRE, execute-never |
//! | 3 | QSPI, PCIe low, PS peripherals | device nGnRE, execute-never |
// Start-up: the translation table and system registers at EL3.
#![allow(unsafe_code)]

use aarch64_rt::{
    ExceptionHandlers, InitialPagetable, entry, exception_handlers, initial_pagetable,
};
use board_daisyplus::board::Daisyplus;
use board_daisyplus::memory_map as map;
use board_daisyplus::timer::GenericTimer;
use board_openssd::mmio;
use embedded_alloc::LlffHeap;

/// Block descriptor bits (stage 1, 4 KiB granule, level 1).
const BLOCK: u64 = 0b01;
const ACCESS_FLAG: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 0b11 << 8;
/// Execute-never (EL3 regime: bit 54).
const XN: u64 = 1 << 54;
/// MAIR: index 0 device nGnRE, 1 normal write-back RW-allocate, 2 normal
/// non-cacheable.
const MAIR: u64 = 0x04 | 0xFF << 8 | 0x44 << 16;
const DEVICE: u64 = 0 << 2;
const CACHED: u64 = 1 << 2;
const UNCACHED: u64 = 2 << 2;

const fn gib(i: u64, attrs: u64) -> usize {
    (i << 30 | BLOCK | ACCESS_FLAG | attrs) as usize
}

const _: () = assert!(map::CACHED.base == 0 && map::UNCACHED.base == 1 << 30);
const _: () = assert!(map::PL.base == 2 << 30 && map::PERIPHERALS.base == 3 << 30);

initial_pagetable!(
    {
        let mut t = [0usize; 512];
        t[0] = gib(0, CACHED | INNER_SHAREABLE);
        t[1] = gib(1, UNCACHED | INNER_SHAREABLE);
        t[2] = gib(2, DEVICE | XN);
        t[3] = gib(3, DEVICE | XN);
        InitialPagetable(t)
    },
    MAIR
);

struct Exceptions;
impl ExceptionHandlers for Exceptions {}
exception_handlers!(Exceptions);

// 64 pages (256 KiB) of boot stack.
entry!(boot, 64);

#[global_allocator]
static HEAP: LlffHeap = LlffHeap::empty();

/// One core, and interrupts stay masked from reset on (the firmware
/// polls): nothing can preempt a critical section, so it needs no state.
struct SingleCore;
critical_section::set_impl!(SingleCore);

// SAFETY: one core runs this image and never unmasks interrupts, so
// acquire/release have nothing to exclude.
unsafe impl critical_section::Impl for SingleCore {
    unsafe fn acquire() {}
    unsafe fn release(_: ()) {}
}

fn boot(_x0: u64, _x1: u64, _x2: u64, _x3: u64) -> ! {
    // SAFETY: the heap range is DDR mapped cacheable by the page table
    // above, disjoint from the image and its stack (memory_map's tests),
    // and this runs once, before any allocation.
    unsafe { HEAP.init(map::HEAP.addr(), map::HEAP.size as usize) };
    // SAFETY: the page table above maps the UART's gigabyte as device
    // memory; this is the only console until a panic.
    let mut console = unsafe { mmio::console::<Daisyplus>() };
    // SAFETY: the page table maps the PL windows as device memory and the
    // DMA regions non-cacheable (identity map: the PL masters see DRAM at
    // the CPU's addresses, `sys_top.bda`), outside the image and the heap
    // (memory_map's tests); `take` hands each out once.
    let Some(hw) = (unsafe { mmio::take::<Daisyplus, _>(GenericTimer::new) }) else {
        board_openssd::serve::park()
    };
    board_openssd::serve::run::<Daisyplus, _, _, _, _>(hw, &mut console)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    use core::fmt::Write;
    // SAFETY: nothing else runs after a panic, so this console is the only
    // user of the UART from here on.
    let mut console = unsafe { mmio::console::<Daisyplus>() };
    let _ = writeln!(console, "instcsd: panic: {info}");
    board_openssd::serve::park()
}
