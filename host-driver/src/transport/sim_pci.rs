//! [`SimPci`]: the simulated board's NVMe controller as a PCI function for
//! the user-space driver (`nvme_linux::vfio::UserNvme`), so the driver's
//! register, queue and PRP code runs against the InstCSD firmware: BAR0
//! writes to AQA/ASQ/ACQ/CC enable the board's queue engine, doorbell
//! writes ring it (and let it run), and the DMA block is a contiguous
//! range of the board's host memory.

use board_sim::{SimConfig, SimCsd};
use nvme_linux::vfio::{DMA_BLOCK_BYTES, Pci};
use proto::regs;

use super::TransportError;

/// The simulated controller behind [`Pci`].
#[derive(Debug)]
pub struct SimPci {
    csd: SimCsd,
    base: u64,
    aqa: u32,
    asq: u64,
    acq: u64,
    enabled: bool,
    fatal: bool,
}

impl SimPci {
    /// A simulated board with `page_size`-byte flash pages.
    pub fn new(page_size: u32) -> Result<Self, TransportError> {
        let mut csd = SimCsd::new(SimConfig::new(page_size))?;
        let base = csd.host_memory().alloc_contiguous(DMA_BLOCK_BYTES);
        Ok(Self {
            csd,
            base,
            aqa: 0,
            asq: 0,
            acq: 0,
            enabled: false,
            fatal: false,
        })
    }

    /// The board (fault hooks such as [`SimCsd::stall`]).
    pub fn csd_mut(&mut self) -> &mut SimCsd {
        &mut self.csd
    }
}

fn set_half(x: &mut u64, high: bool, v: u32) {
    if high {
        *x = (*x & 0xFFFF_FFFF) | u64::from(v) << 32;
    } else {
        *x = (*x & !0xFFFF_FFFF) | u64::from(v);
    }
}

impl Pci for SimPci {
    fn read32(&mut self, off: usize) -> u32 {
        match off {
            // MQES 4095, CQR, TO 1 (500 ms); DSTRD 0 in the high half.
            regs::CAP => 4095 | 1 << 16 | 1 << 24,
            o if o == regs::CAP + 4 => 0,
            regs::VS => regs::VERSION_1_4,
            regs::CSTS => u32::from(self.enabled) | u32::from(self.fatal) << 1,
            _ => 0,
        }
    }

    fn write32(&mut self, off: usize, v: u32) {
        match off {
            regs::AQA => self.aqa = v,
            o if o == regs::ASQ || o == regs::ASQ + 4 => set_half(&mut self.asq, o != regs::ASQ, v),
            o if o == regs::ACQ || o == regs::ACQ + 4 => set_half(&mut self.acq, o != regs::ACQ, v),
            regs::CC if v & regs::CC_EN == 0 && self.enabled => {
                self.csd.disable();
                self.enabled = false;
                self.fatal = false;
            }
            regs::CC if v & regs::CC_EN != 0 && !self.enabled => {
                let entries = (self.aqa & 0xFFF) as u16 + 1;
                match self.csd.enable(self.asq, self.acq, entries) {
                    Ok(()) => self.enabled = true,
                    Err(_) => self.fatal = true,
                }
            }
            o if o >= regs::DOORBELL_BASE => {
                let n = (o - regs::DOORBELL_BASE) / 4;
                let qid = (n / 2) as u16;
                if n.is_multiple_of(2) {
                    self.csd.ring_sq(qid, v as u16);
                    if self.csd.process().is_err() || self.csd.fatal() {
                        self.fatal = true;
                    }
                } else {
                    self.csd.ring_cq(qid, v as u16);
                }
            }
            _ => {}
        }
    }

    fn dma_iova(&self) -> u64 {
        self.base
    }

    fn dma_put(&mut self, off: usize, data: &[u8]) {
        if self
            .csd
            .host_memory()
            .write(self.base + off as u64, data)
            .is_err()
        {
            self.fatal = true;
        }
    }

    fn dma_get(&mut self, off: usize, out: &mut [u8]) {
        if self
            .csd
            .host_memory()
            .read(self.base + off as u64, out)
            .is_err()
        {
            self.fatal = true;
        }
    }
}
