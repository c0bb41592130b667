//! The seam between the drivers and the hardware, and the crate's only
//! `unsafe`.
//!
//! Drivers see registers through [`Regs`] and DMA memory through
//! [`DmaMemory`]; on a board those are [`Mmio`] (volatile 32-bit accesses
//! to a device window) and [`DmaWindow`] (a DRAM range the PL bus masters
//! address), on the host the fakes of [`crate::fake`]. Constructing either
//! board type is `unsafe`: the caller vouches for the address map.
//! [`take`] and [`console`] open a board's windows ([`Windows`]) as its
//! [`Hardware`] and its console.
//!
//! Ordering: device registers are mapped Device (ARMv8 nGnRE / ARMv7
//! shareable device) and DMA windows Normal non-cacheable, so the CPU needs
//! a data synchronisation barrier between filling a buffer and ringing the
//! engine that reads it, and between seeing an engine finish and reading
//! what it wrote. [`DmaWindow`] issues it on every access.
// Volatile access to the board's register and DMA windows.
#![allow(unsafe_code)]

use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::board::{Hardware, OpenSsd, Windows};
use crate::region::Region;
use crate::uart::CadenceUart;

/// A window of 32-bit device registers addressed by byte offset.
///
/// Reads take `&mut self`: reading a FIFO register pops it.
pub trait Regs {
    /// Reads the register at byte `offset`.
    fn read32(&mut self, offset: usize) -> u32;
    /// Writes the register at byte `offset`.
    fn write32(&mut self, offset: usize, value: u32);
}

/// Memory the PL bus masters (the NVMe DMA engine, the NAND controllers)
/// read and write: the CPU reaches it through this trait only, never
/// through a Rust reference, since the hardware changes it behind the
/// compiler's back.
pub trait DmaMemory {
    /// The address of byte 0 as the PL masters see it.
    fn bus_base(&self) -> u64;
    /// Size in bytes.
    fn len(&self) -> usize;
    /// Whether the window is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `out.len()` bytes at `offset` out of the window.
    fn read(&mut self, offset: usize, out: &mut [u8]);
    /// Copies `data` into the window at `offset`.
    fn write(&mut self, offset: usize, data: &[u8]);
    /// The little-endian word at `offset`.
    fn read_u32(&mut self, offset: usize) -> u32 {
        let mut b = [0u8; 4];
        self.read(offset, &mut b);
        u32::from_le_bytes(b)
    }
    /// Stores a little-endian word at `offset`.
    fn write_u32(&mut self, offset: usize, value: u32) {
        self.write(offset, &value.to_le_bytes());
    }
}

/// A device register window at a fixed physical (identity-mapped) address.
#[derive(Debug)]
pub struct Mmio {
    base: usize,
    len: usize,
}

impl Mmio {
    /// The registers `[base, base + len)`.
    ///
    /// # Safety
    ///
    /// The range must be a device's register window, mapped as device
    /// memory, owned by this value alone for its lifetime, and the device
    /// must not write memory other than the [`DmaWindow`]s its driver owns.
    pub const unsafe fn new(base: usize, len: usize) -> Self {
        Self { base, len }
    }

    /// The registers of `r` (the boards identity-map).
    ///
    /// # Safety
    ///
    /// As [`Mmio::new`].
    pub const unsafe fn at(r: Region) -> Self {
        Self {
            base: r.addr(),
            len: r.size as usize,
        }
    }

    /// The window's base address.
    pub const fn base(&self) -> usize {
        self.base
    }

    fn check(&self, offset: usize) {
        assert!(
            offset.is_multiple_of(4) && offset.checked_add(4).is_some_and(|end| end <= self.len),
            "register offset {offset:#x} outside the {:#x}-byte window at {:#x}",
            self.len,
            self.base
        );
    }
}

impl Regs for Mmio {
    fn read32(&mut self, offset: usize) -> u32 {
        self.check(offset);
        // SAFETY: the offset is word aligned and inside the window
        // (checked), which `new`'s contract makes device registers this
        // value owns.
        unsafe { ptr::read_volatile((self.base + offset) as *const u32) }
    }

    fn write32(&mut self, offset: usize, value: u32) {
        self.check(offset);
        // SAFETY: as in `read32`.
        unsafe { ptr::write_volatile((self.base + offset) as *mut u32, value) }
    }
}

/// A DRAM range the CPU and the PL bus masters share.
#[derive(Debug)]
pub struct DmaWindow {
    cpu: usize,
    bus: u64,
    len: usize,
}

impl DmaWindow {
    /// The bytes `[cpu, cpu + len)`, which the PL masters address at
    /// `[bus, bus + len)`.
    ///
    /// # Safety
    ///
    /// The range must be RAM, mapped non-cacheable (or coherent with the
    /// PL masters), used by nothing else (no Rust object lives there), and
    /// `bus` must address the same bytes from the PL side.
    pub const unsafe fn new(cpu: usize, bus: u64, len: usize) -> Self {
        Self { cpu, bus, len }
    }

    /// The DRAM of `r`, which the PL masters address where the CPU does.
    ///
    /// # Safety
    ///
    /// As [`DmaWindow::new`], with `bus` = `cpu` = `r.base`.
    pub const unsafe fn at(r: Region) -> Self {
        Self {
            cpu: r.addr(),
            bus: r.base,
            len: r.size as usize,
        }
    }

    /// Splits off the first `at` bytes: two disjoint windows.
    ///
    /// # Panics
    ///
    /// If `at` exceeds the window.
    pub fn split_at(self, at: usize) -> (Self, Self) {
        assert!(at <= self.len, "split at {at:#x} beyond {:#x}", self.len);
        let head = Self {
            cpu: self.cpu,
            bus: self.bus,
            len: at,
        };
        let tail = Self {
            cpu: self.cpu + at,
            bus: self.bus + at as u64,
            len: self.len - at,
        };
        (head, tail)
    }

    fn check(&self, offset: usize, n: usize) {
        assert!(
            offset.checked_add(n).is_some_and(|end| end <= self.len),
            "DMA access {offset:#x}+{n:#x} outside the {:#x}-byte window",
            self.len
        );
    }
}

impl DmaMemory for DmaWindow {
    fn bus_base(&self) -> u64 {
        self.bus
    }

    fn len(&self) -> usize {
        self.len
    }

    fn read(&mut self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len());
        // The engine's writes must be visible before we copy them out.
        barrier();
        // SAFETY: inside the window (checked), which `new`'s contract makes
        // RAM that no Rust object aliases; `out` is a distinct borrow. The
        // barrier above (an asm block the compiler cannot see through)
        // keeps the copy after the device's writes.
        unsafe {
            ptr::copy_nonoverlapping(
                (self.cpu + offset) as *const u8,
                out.as_mut_ptr(),
                out.len(),
            )
        }
    }

    fn write(&mut self, offset: usize, data: &[u8]) {
        self.check(offset, data.len());
        // SAFETY: as in `read`, with `data` the source.
        unsafe {
            ptr::copy_nonoverlapping(data.as_ptr(), (self.cpu + offset) as *mut u8, data.len())
        }
        // The bytes must reach memory before a register write starts the
        // engine that reads them.
        barrier();
    }
}

static TAKEN: AtomicBool = AtomicBool::new(false);

/// Board `B`'s parts at their windows ([`OpenSsd::WINDOWS`]), with the
/// counter `counter` builds, once (`None` after the first call).
///
/// # Safety
///
/// The running translation tables must map `B`'s register windows as
/// device memory and its DMA windows as normal non-cacheable memory, the
/// PL masters must see DRAM at the CPU's addresses, nothing else may touch
/// those windows, and the DMA windows must lie outside the image, its
/// stacks and the heap.
pub unsafe fn take<B: OpenSsd, T>(
    counter: impl FnOnce() -> T,
) -> Option<Hardware<Mmio, DmaWindow, T>> {
    // One core, interrupts masked: a plain load and store are enough (no
    // exclusive access, which needs the MMU on for some memory types).
    if TAKEN.load(Ordering::Acquire) {
        return None;
    }
    TAKEN.store(true, Ordering::Release);
    let w: Windows = B::WINDOWS;
    let channels = u64::from(B::GEOMETRY.channels);
    let counter = counter();
    // SAFETY: the caller's contract makes each window what `Mmio::new` and
    // `DmaWindow::new` require, and `TAKEN` makes the returned value the
    // only owner of each.
    unsafe {
        Some(Hardware {
            nvme: Mmio::at(w.nvme),
            nsc: (0..channels).map(|c| Mmio::at(w.nsc_of(c))).collect(),
            engine: Mmio::at(w.engine),
            host_bounce: DmaWindow::at(w.host_bounce),
            nand_buffers: DmaWindow::at(w.nand_buffers),
            counter,
        })
    }
}

/// Board `B`'s console UART.
///
/// # Safety
///
/// As [`take`], for the UART; at most one console may be live (a panic
/// handler makes its own after everything else has stopped).
pub unsafe fn console<B: OpenSsd>() -> CadenceUart<Mmio> {
    // SAFETY: the caller's contract.
    CadenceUart::new(unsafe { Mmio::at(B::WINDOWS.uart) })
}

/// A full-system data synchronisation barrier.
pub fn barrier() {
    #[cfg(any(target_arch = "arm", target_arch = "aarch64"))]
    // SAFETY: a barrier instruction has no operands and no effect beyond
    // ordering; the (default) memory clobber keeps the compiler from
    // moving memory accesses across it.
    unsafe {
        core::arch::asm!("dsb sy", options(nostack, preserves_flags))
    };
    #[cfg(not(any(target_arch = "arm", target_arch = "aarch64")))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_window_reads_back_what_it_wrote_and_splits_disjointly() {
        let mut ram = [0u8; 64];
        let base = ram.as_mut_ptr() as usize;
        // SAFETY: `ram` outlives the windows and is only touched through
        // them until the end of the test.
        let w = unsafe { DmaWindow::new(base, 0x1000, ram.len()) };
        let (mut a, mut b) = w.split_at(16);
        assert_eq!((a.bus_base(), a.len()), (0x1000, 16));
        assert_eq!((b.bus_base(), b.len()), (0x1010, 48));
        a.write_u32(12, 0xAABB_CCDD);
        b.write(0, &[1, 2, 3]);
        let mut out = [0u8; 7];
        b.read(0, &mut out[..3]);
        assert_eq!(&out[..3], &[1, 2, 3]);
        assert_eq!(a.read_u32(12), 0xAABB_CCDD);
        assert_eq!(&ram[12..19], &[0xDD, 0xCC, 0xBB, 0xAA, 1, 2, 3]);
    }

    #[test]
    fn a_board_is_taken_once_at_its_windows() {
        use crate::board::tests::Bench;
        // SAFETY: the windows are only compared, never accessed.
        let hw = unsafe { take::<Bench, _>(|| 7u8) }.expect("first take");
        let w = Bench::WINDOWS;
        assert_eq!(hw.nvme.base(), w.nvme.addr());
        assert_eq!(hw.engine.base(), w.engine.addr());
        let nsc: std::vec::Vec<usize> = hw.nsc.iter().map(Mmio::base).collect();
        assert_eq!(nsc, [0xA000_0000, 0xA001_0000], "one window per channel");
        assert_eq!(
            (hw.host_bounce.bus_base(), hw.host_bounce.len()),
            (w.host_bounce.base, w.host_bounce.size as usize)
        );
        assert_eq!(hw.nand_buffers.bus_base(), w.nand_buffers.base);
        assert_eq!(hw.counter, 7);
        // SAFETY: as above (and nothing is returned).
        assert!(unsafe { take::<Bench, _>(|| 8u8) }.is_none(), "only once");
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn dma_window_refuses_accesses_past_its_end() {
        let mut ram = [0u8; 8];
        // SAFETY: as above.
        let mut w = unsafe { DmaWindow::new(ram.as_mut_ptr() as usize, 0, ram.len()) };
        w.write(6, &[0; 4]);
    }
}
