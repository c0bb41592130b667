//! Start-up and run-time support of the image, ours (ARMv7-A, no runtime
//! crate): `_start` parks every core but CPU 0, enters SVC mode with IRQ
//! and FIQ masked, turns the MMU and caches off (the FSBL hands over with
//! them off; this makes sure), points VBAR at a vector table whose entries
//! all spin, sets the stack, zeroes .bss and calls [`start`], which builds
//! the section map, enables the MMU and caches, starts the heap and runs
//! the firmware. The binary's only `unsafe`.
//!
//! Section map (1 MiB sections, identity):
//!
//! | range | what | memory type |
//! | --- | --- | --- |
//! | 0 – 256 MiB | DDR: image, stack, heap | normal, write-back write-allocate |
//! | 256 MiB – 1 GiB | DDR: DMA windows | normal, non-cacheable |
//! | 1 GiB – 4 GiB | PL (GP0, GP1), PS peripherals | shareable device, execute-never |
//!
//! ASSUMED: the FSBL left the L1 data cache clean (its hand-off flushes
//! it) and the L2 (PL310) disabled; we invalidate L1 before enabling it
//! and leave L2 off.
// Start-up: vector table, stacks, caches and MMU in inline assembly.
#![allow(unsafe_code)]

use core::arch::{asm, global_asm};

use board_cosmos_plus::board::CosmosPlus;
use board_cosmos_plus::memory_map as map;
use board_cosmos_plus::timer::GlobalTimer;
use board_openssd::mmio::{self, Mmio};
use embedded_alloc::LlffHeap;

global_asm!(
    ".section .text.boot, \"ax\"",
    ".arm",
    ".global _start",
    "_start:",
    // CPU 0 only.
    "    mrc p15, 0, r0, c0, c0, 5",
    "    ands r0, r0, #3",
    "    bne 3f",
    // SVC mode, IRQ and FIQ masked.
    "    cpsid if, #0x13",
    // MMU, D-cache, I-cache off.
    "    mrc p15, 0, r0, c1, c0, 0",
    "    bic r0, r0, #0x1",
    "    bic r0, r0, #0x4",
    "    bic r0, r0, #0x1000",
    "    mcr p15, 0, r0, c1, c0, 0",
    "    isb",
    // Vectors.
    "    ldr r0, =__vectors",
    "    mcr p15, 0, r0, c12, c0, 0",
    // Stack, .bss.
    "    ldr sp, =__stack_top",
    "    ldr r0, =__bss_start",
    "    ldr r1, =__bss_end",
    "    mov r2, #0",
    "1:  cmp r0, r1",
    "    strlo r2, [r0], #4",
    "    blo 1b",
    "    bl {start}",
    "3:  wfe",
    "    b 3b",
    ".ltorg",
    // Every exception spins where a debugger can find it.
    ".balign 32",
    "__vectors:",
    "    b .",
    "    b .",
    "    b .",
    "    b .",
    "    b .",
    "    b .",
    "    b .",
    "    b .",
    start = sym start,
);

/// Short-descriptor section entry bits.
const SECTION: u32 = 0b10;
const B: u32 = 1 << 2;
const C: u32 = 1 << 3;
const XN: u32 = 1 << 4;
/// AP[1:0] = 0b11: read/write at every level.
const AP_RW: u32 = 0b11 << 10;
const TEX1: u32 = 0b001 << 12;
const NORMAL_WBWA: u32 = SECTION | TEX1 | C | B | AP_RW;
const NORMAL_NC: u32 = SECTION | TEX1 | AP_RW;
const DEVICE: u32 = SECTION | B | XN | AP_RW;

/// The level-1 table: 4096 sections, 16 KiB aligned.
#[repr(C, align(16384))]
struct Table([u32; 4096]);

static mut TABLE: Table = Table([0; 4096]);

/// The section entry of megabyte `mb`.
const fn section(mb: u32) -> u32 {
    let addr = (mb as u64) << 20;
    let attrs = if addr < map::CACHED.end() {
        NORMAL_WBWA
    } else if addr < map::UNCACHED.end() {
        NORMAL_NC
    } else {
        DEVICE
    };
    mb << 20 | attrs
}

const _: () = assert!(map::CACHED.base == 0 && map::UNCACHED.base == map::CACHED.end());
const _: () = assert!(map::DEVICE.base == map::UNCACHED.end());

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

/// Builds the section map and turns the MMU and caches on.
fn enable_mmu() {
    let table = &raw mut TABLE;
    for mb in 0..4096u32 {
        // SAFETY: `table` points at the static table, only touched here,
        // before the MMU uses it; `mb` < 4096.
        unsafe { (*table).0[mb as usize] = section(mb) };
    }
    // L1 D-cache of the A9: 4 ways × 256 sets of 32-byte lines.
    for way in 0..4u32 {
        for set in 0..256u32 {
            let sw = way << 30 | set << 5;
            // SAFETY: DCISW invalidates one line by set/way; the cache is
            // off and (ASSUMED) clean, so no data is lost.
            unsafe { asm!("mcr p15, 0, {}, c7, c6, 2", in(reg) sw, options(nostack)) };
        }
    }
    // SAFETY: standard ARMv7 MMU enable: TTBR0 = the table (16 KiB
    // aligned, identity map of everything the image touches), TTBCR = 0,
    // every domain a client, TLB/I-cache/branch predictor invalidated,
    // then SCTLR.M, C, Z, I set and A cleared, with the barriers the
    // architecture requires.
    unsafe {
        asm!(
            "mcr p15, 0, {ttb}, c2, c0, 0",
            "mov {t}, #0",
            "mcr p15, 0, {t}, c2, c0, 2",
            "ldr {t}, =0x55555555",
            "mcr p15, 0, {t}, c3, c0, 0",
            "mov {t}, #0",
            "mcr p15, 0, {t}, c8, c7, 0",
            "mcr p15, 0, {t}, c7, c5, 0",
            "mcr p15, 0, {t}, c7, c5, 6",
            "dsb",
            "isb",
            "mrc p15, 0, {t}, c1, c0, 0",
            "orr {t}, {t}, #0x1",
            "orr {t}, {t}, #0x4",
            "orr {t}, {t}, #0x800",
            "orr {t}, {t}, #0x1000",
            "bic {t}, {t}, #0x2",
            "mcr p15, 0, {t}, c1, c0, 0",
            "dsb",
            "isb",
            ttb = in(reg) table as u32,
            t = out(reg) _,
            options(nostack),
        );
    }
}

extern "C" fn start() -> ! {
    enable_mmu();
    // SAFETY: the heap range is DDR mapped cacheable above, disjoint from
    // the image, its stack and the DMA windows (memory_map's tests), and
    // this runs once, before any allocation.
    unsafe { HEAP.init(map::HEAP.addr(), map::HEAP.size as usize) };
    // SAFETY: the UART is in the device range of the section map; this is
    // the only console until a panic.
    let mut console = unsafe { mmio::console::<CosmosPlus>() };
    let timer = || {
        // SAFETY: the global timer is in the device range of the section
        // map, and only this counter drives it (`take` calls this once).
        let regs = unsafe { Mmio::at(map::GLOBAL_TIMER) };
        GlobalTimer::new(regs, map::GLOBAL_TIMER_HZ)
    };
    // SAFETY: the section map makes the PL windows device memory and the
    // DMA regions non-cacheable, outside the image and the heap
    // (memory_map's tests), and the PL masters see DDR at the CPU's
    // addresses (HP ports at 0, `OpenSSD2_bd.tcl`); `take` hands each out
    // once.
    let Some(hw) = (unsafe { mmio::take::<CosmosPlus, _>(timer) }) else {
        board_openssd::serve::park()
    };
    board_openssd::serve::run::<CosmosPlus, _, _, _, _>(hw, &mut console)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    use core::fmt::Write;
    // SAFETY: nothing else runs after a panic, so this console is the only
    // user of the UART from here on.
    let mut console = unsafe { mmio::console::<CosmosPlus>() };
    let _ = writeln!(console, "instcsd: panic: {info}");
    board_openssd::serve::park()
}
