//! The seam between the drivers and the hardware, and the crate's only
//! `unsafe`.
//!
//! Drivers see registers through [`Regs`] and DMA memory through
//! [`DmaMemory`]; on a board those are [`Mmio`] (volatile 32-bit accesses
//! to a device window) and [`DmaWindow`] (a DRAM range the PL bus masters
//! address), on the host the fakes of [`crate::fake`]. Constructing either
//! board type is `unsafe`: the caller vouches for the address map.
//!
//! Ordering: device registers are mapped Device (ARMv8 nGnRE / ARMv7
//! shareable device) and DMA windows Normal non-cacheable, so the CPU needs
//! a data synchronisation barrier between filling a buffer and ringing the
//! engine that reads it, and between seeing an engine finish and reading
//! what it wrote. [`DmaWindow`] issues it on every access.
#![allow(unsafe_code)]

use core::ptr;

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

    /// The window's base address.
    pub const fn base(&self) -> usize {
        self.base
    }

    fn check(&self, offset: usize) {
        assert!(
            offset % 4 == 0 && offset.checked_add(4).is_some_and(|end| end <= self.len),
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
    #[should_panic(expected = "outside")]
    fn dma_window_refuses_accesses_past_its_end() {
        let mut ram = [0u8; 8];
        // SAFETY: as above.
        let mut w = unsafe { DmaWindow::new(ram.as_mut_ptr() as usize, 0, ram.len()) };
        w.write(6, &[0; 4]);
    }
}
