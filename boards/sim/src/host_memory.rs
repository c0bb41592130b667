//! Host memory as the drive sees it over PCIe: sparse 4 KiB pages at 64-bit
//! bus addresses.
//!
//! [`HostMemory::alloc`] hands out pages that are deliberately *not*
//! contiguous (every other page, above 4 GiB) so that PRP lists and
//! page-crossing DMA are exercised on every transfer; queues, which NVMe
//! wants physically contiguous, come from [`HostMemory::alloc_contiguous`]
//! in a separate address window, each region followed by an unmapped guard
//! page. An access to an unmapped address is [`SimError::BadAddress`] (the
//! firmware answers it with Data Transfer Error), never a panic.

use std::collections::HashMap;

use crate::error::SimError;

/// Host page size (NVMe CC.MPS = 0).
pub const HOST_PAGE: usize = 4096;
const PAGE: u64 = HOST_PAGE as u64;
/// Start of the scattered-page window (above 4 GiB: 64-bit PRPs).
const SCATTER_BASE: u64 = 0x1_0000_0000;
/// Start of the contiguous window.
const CONTIG_BASE: u64 = 0x80_0000_0000;
/// Start of the GPU memory window: a GPU's memory as its BAR exposes it
/// behind the PCIe switch the drive shares with it (peer-to-peer DMA).
pub const GPU_BASE: u64 = 0x100_0000_0000;
/// Size of the GPU window (model choice: 64 GiB of BAR).
pub const GPU_WINDOW: u64 = 64 << 30;

/// Whether `addr` lies in the GPU memory window.
pub const fn is_gpu(addr: u64) -> bool {
    addr >= GPU_BASE && addr < GPU_BASE + GPU_WINDOW
}

/// Bytes moved through [`HostMemory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostMemoryCounters {
    /// Bytes of host DRAM read (by host code, device DMA or a copy).
    pub bytes_read: u64,
    /// Bytes of host DRAM written.
    pub bytes_written: u64,
    /// Bytes of GPU memory read (by the GPU's producer, peer DMA or a copy).
    pub gpu_bytes_read: u64,
    /// Bytes of GPU memory written.
    pub gpu_bytes_written: u64,
}

/// Sparse host memory.
#[derive(Debug, Default)]
pub struct HostMemory {
    pages: HashMap<u64, Box<[u8; HOST_PAGE]>>,
    next_scatter: u64,
    next_contig: u64,
    next_gpu: u64,
    counters: HostMemoryCounters,
}

impl HostMemory {
    /// Empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `ceil(len / 4 KiB)` zeroed pages and returns their bus
    /// addresses in buffer order; consecutive pages are never adjacent.
    pub fn alloc(&mut self, len: usize) -> Vec<u64> {
        let n = len.div_ceil(HOST_PAGE) as u64;
        (0..n)
            .map(|_| {
                // Stride of two pages: an unmapped gap after every page.
                let addr = SCATTER_BASE + self.next_scatter * 2 * PAGE;
                self.next_scatter += 1;
                self.map(addr);
                addr
            })
            .collect()
    }

    /// Maps `ceil(len / 4 KiB)` zeroed, physically contiguous pages and
    /// returns the first address (for NVMe queues).
    pub fn alloc_contiguous(&mut self, len: usize) -> u64 {
        let n = len.div_ceil(HOST_PAGE).max(1) as u64;
        let base = CONTIG_BASE + self.next_contig * PAGE;
        // One guard page after the region.
        self.next_contig += n + 1;
        for i in 0..n {
            self.map(base + i * PAGE);
        }
        base
    }

    /// Maps `ceil(len / 4 KiB)` zeroed pages of GPU memory, contiguous in
    /// the GPU window, and returns the first address; a guard page follows.
    pub fn alloc_gpu(&mut self, len: usize) -> u64 {
        let n = len.div_ceil(HOST_PAGE).max(1) as u64;
        let base = GPU_BASE + self.next_gpu * PAGE;
        self.next_gpu += n + 1;
        for i in 0..n {
            self.map(base + i * PAGE);
        }
        base
    }

    /// Unmaps the pages at `addrs` (page addresses; unknown ones ignored).
    pub fn free(&mut self, addrs: &[u64]) {
        for a in addrs {
            self.pages.remove(&(a & !(PAGE - 1)));
        }
    }

    /// Unmaps every page of `[base, base + len)`.
    pub fn free_range(&mut self, base: u64, len: usize) {
        let first = base & !(PAGE - 1);
        let end = base + len as u64;
        let mut a = first;
        while a < end {
            self.pages.remove(&a);
            a += PAGE;
        }
    }

    /// Whether every byte of `[addr, addr + len)` is mapped.
    pub fn is_mapped(&self, addr: u64, len: usize) -> bool {
        self.check(addr, len).is_ok()
    }

    /// Reads `buf.len()` bytes at `addr`, crossing pages as needed.
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), SimError> {
        self.check(addr, buf.len())?;
        let mut done = 0;
        while done < buf.len() {
            let a = addr + done as u64;
            let off = (a % PAGE) as usize;
            let n = (HOST_PAGE - off).min(buf.len() - done);
            let page = self
                .pages
                .get(&(a - off as u64))
                .ok_or(SimError::BadAddress(a))?;
            buf[done..done + n].copy_from_slice(&page[off..off + n]);
            done += n;
        }
        if is_gpu(addr) {
            self.counters.gpu_bytes_read += buf.len() as u64;
        } else {
            self.counters.bytes_read += buf.len() as u64;
        }
        Ok(())
    }

    /// Writes `data` at `addr`, crossing pages as needed. Nothing is written
    /// unless the whole range is mapped.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        self.check(addr, data.len())?;
        let mut done = 0;
        while done < data.len() {
            let a = addr + done as u64;
            let off = (a % PAGE) as usize;
            let n = (HOST_PAGE - off).min(data.len() - done);
            let page = self
                .pages
                .get_mut(&(a - off as u64))
                .ok_or(SimError::BadAddress(a))?;
            page[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        if is_gpu(addr) {
            self.counters.gpu_bytes_written += data.len() as u64;
        } else {
            self.counters.bytes_written += data.len() as u64;
        }
        Ok(())
    }

    /// Bytes moved so far.
    pub fn counters(&self) -> HostMemoryCounters {
        self.counters
    }

    /// Pages currently mapped.
    pub fn mapped_pages(&self) -> usize {
        self.pages.len()
    }

    fn map(&mut self, addr: u64) {
        self.pages.insert(addr, Box::new([0; HOST_PAGE]));
    }

    /// The first unmapped address of the range, as an error.
    fn check(&self, addr: u64, len: usize) -> Result<(), SimError> {
        let end = addr
            .checked_add(len as u64)
            .ok_or(SimError::BadAddress(addr))?;
        let mut a = addr & !(PAGE - 1);
        while a < end {
            if !self.pages.contains_key(&a) {
                return Err(SimError::BadAddress(a.max(addr)));
            }
            a += PAGE;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_scatters_pages() {
        let mut m = HostMemory::new();
        let pages = m.alloc(3 * HOST_PAGE + 1);
        assert_eq!(pages.len(), 4);
        for w in pages.windows(2) {
            assert_ne!(w[1], w[0] + PAGE, "pages must not be contiguous");
        }
        assert!(pages.iter().all(|p| p % PAGE == 0 && *p >= 1 << 32));
        assert!(m.alloc(0).is_empty());
        // The gap after a scattered page is unmapped.
        assert!(!m.is_mapped(pages[0] + PAGE, 1));
    }

    #[test]
    fn contiguous_region_spans_pages() {
        let mut m = HostMemory::new();
        let q = m.alloc_contiguous(3 * HOST_PAGE);
        let data: Vec<u8> = (0..3 * HOST_PAGE).map(|i| i as u8).collect();
        m.write(q, &data).unwrap();
        let mut back = vec![0; data.len() - 100];
        m.read(q + 50, &mut back).unwrap();
        assert_eq!(back, data[50..data.len() - 50]);
        // Guard page after the region.
        assert!(matches!(
            m.read(q + 3 * PAGE, &mut [0]),
            Err(SimError::BadAddress(_))
        ));
        let q2 = m.alloc_contiguous(1);
        assert!(q2 > q + 3 * PAGE);
    }

    #[test]
    fn unmapped_access_is_an_error_not_a_panic() {
        let mut m = HostMemory::new();
        let p = m.alloc(HOST_PAGE)[0];
        // Crossing into the gap fails and writes nothing.
        let r = m.write(p + PAGE - 2, &[1, 2, 3, 4]);
        assert!(matches!(r, Err(SimError::BadAddress(a)) if a == p + PAGE));
        let mut b = [9u8; 2];
        m.read(p + PAGE - 2, &mut b).unwrap();
        assert_eq!(b, [0, 0]);
        assert!(matches!(m.read(0, &mut b), Err(SimError::BadAddress(0))));
        assert!(matches!(
            m.read(u64::MAX, &mut b),
            Err(SimError::BadAddress(_))
        ));
        m.free(&[p]);
        assert!(matches!(m.read(p, &mut b), Err(SimError::BadAddress(a)) if a == p));
    }

    #[test]
    fn counts_bytes() {
        let mut m = HostMemory::new();
        let p = m.alloc(10)[0];
        m.write(p, &[1; 10]).unwrap();
        m.read(p, &mut [0; 4]).unwrap();
        assert_eq!(
            m.counters(),
            HostMemoryCounters {
                bytes_read: 4,
                bytes_written: 10,
                ..HostMemoryCounters::default()
            }
        );
        let g = m.alloc_gpu(3 * HOST_PAGE);
        assert!(is_gpu(g) && !is_gpu(p));
        m.write(g + 100, &[5; 8192]).unwrap();
        assert_eq!(m.counters().gpu_bytes_written, 8192);
        assert_eq!(
            m.counters().bytes_written,
            10,
            "GPU memory is not host DRAM"
        );
        assert!(m.read(g + 3 * PAGE, &mut [0]).is_err(), "guard page");
    }
}
