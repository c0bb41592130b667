//! Test-only host memory: sparse 4 KiB pages at bus addresses; an access
//! to an unmapped page, or one crossing a page boundary (which the core
//! promises never to make), is refused.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;

use crate::host::{DmaError, HostDma};

pub const PAGE: u64 = 4096;
/// The code returned for a refused access.
pub const EFAULT: i32 = -14;

#[derive(Debug, Default)]
pub struct SparseMemory {
    pages: BTreeMap<u64, Box<[u8; 4096]>>,
    pub crossings: usize,
}

impl SparseMemory {
    pub fn map(&mut self, addr: u64) {
        self.pages.insert(addr & !(PAGE - 1), Box::new([0; 4096]));
    }

    fn page(&mut self, addr: u64, len: usize) -> Result<(&mut [u8; 4096], usize), DmaError> {
        let off = (addr % PAGE) as usize;
        if off + len > PAGE as usize {
            self.crossings += 1;
            return Err(DmaError { code: EFAULT, addr });
        }
        let page = self
            .pages
            .get_mut(&(addr - off as u64))
            .ok_or(DmaError { code: EFAULT, addr })?;
        Ok((page, off))
    }

    pub fn bytes(&mut self, addr: u64, len: usize) -> &[u8] {
        let (page, off) = self.page(addr, len).expect("mapped");
        &page[off..off + len]
    }
}

impl HostDma for SparseMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let (page, off) = self.page(addr, buf.len())?;
        buf.copy_from_slice(&page[off..off + buf.len()]);
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let (page, off) = self.page(addr, data.len())?;
        page[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
}
