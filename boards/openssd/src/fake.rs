//! Host-test stand-ins for the hardware: a register file whose behaviour
//! a test writes as a [`RegisterModel`], wrapped in a [`Recorder`] that
//! logs every access, and [`SharedMem`], DMA memory a fake device and the
//! driver under test both reach.
//!
//! [`NvmeModel`] models the OpenSSD NVMe host controller (both
//! generations) over a fake host memory, for tests that run the device
//! core end to end.
//!
//! Built for this crate's tests and, with the `fake` feature, for the
//! board crates' tests; never in firmware.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::rc::Rc;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use crate::board::Hardware;
use crate::clock::Ticks;
use crate::flash::slots;
use crate::mmio::{DmaMemory, Regs};
use crate::nvme::regs::{DmaCounts, FetchedCmd, HostLayout, off};

/// What a fake device does when its registers are read or written.
pub trait RegisterModel {
    /// The value the register at `offset` reads as (may have side effects,
    /// like popping a FIFO).
    fn read(&mut self, offset: usize) -> u32;
    /// A write of `value` to the register at `offset`.
    fn write(&mut self, offset: usize, value: u32);
}

/// Registers that hold what was last written (0 before); the default
/// behaviour models refine.
#[derive(Clone, Debug, Default)]
pub struct Plain {
    values: BTreeMap<usize, u32>,
}

impl Plain {
    /// The stored value at `offset`.
    pub fn get(&self, offset: usize) -> u32 {
        self.values.get(&offset).copied().unwrap_or(0)
    }

    /// Stores `value` at `offset` without logging.
    pub fn set(&mut self, offset: usize, value: u32) {
        self.values.insert(offset, value);
    }
}

impl RegisterModel for Plain {
    fn read(&mut self, offset: usize) -> u32 {
        self.get(offset)
    }

    fn write(&mut self, offset: usize, value: u32) {
        self.set(offset, value);
    }
}

/// One register access, as the driver made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A read of `.0` that returned `.1`.
    Read(usize, u32),
    /// A write of `.1` to `.0`.
    Write(usize, u32),
}

/// A [`RegisterModel`] behind the [`Regs`] seam, logging every access.
#[derive(Clone, Debug, Default)]
pub struct Recorder<M> {
    /// The device model.
    pub model: M,
    /// Every access in order.
    pub log: Vec<Access>,
}

impl<M> Recorder<M> {
    /// Wraps `model`.
    pub fn new(model: M) -> Self {
        Self {
            model,
            log: Vec::new(),
        }
    }

    /// The writes in order, as (offset, value).
    pub fn writes(&self) -> Vec<(usize, u32)> {
        self.log
            .iter()
            .filter_map(|a| match *a {
                Access::Write(o, v) => Some((o, v)),
                Access::Read(..) => None,
            })
            .collect()
    }

    /// Forgets the log.
    pub fn clear_log(&mut self) {
        self.log.clear();
    }
}

impl<M: RegisterModel> Regs for Recorder<M> {
    fn read32(&mut self, offset: usize) -> u32 {
        assert_eq!(offset % 4, 0, "unaligned register read {offset:#x}");
        let v = self.model.read(offset);
        self.log.push(Access::Read(offset, v));
        v
    }

    fn write32(&mut self, offset: usize, value: u32) {
        assert_eq!(offset % 4, 0, "unaligned register write {offset:#x}");
        self.log.push(Access::Write(offset, value));
        self.model.write(offset, value);
    }
}

/// DMA memory shared between a fake device model and a driver: clones see
/// the same bytes.
#[derive(Clone, Debug)]
pub struct SharedMem {
    bus: u64,
    bytes: Rc<RefCell<Vec<u8>>>,
}

impl SharedMem {
    /// `len` zero bytes at bus address `bus`.
    pub fn new(bus: u64, len: usize) -> Self {
        Self {
            bus,
            bytes: Rc::new(RefCell::new(vec![0; len])),
        }
    }

    /// A copy of `len` bytes at `offset`.
    pub fn peek(&self, offset: usize, len: usize) -> Vec<u8> {
        self.bytes.borrow()[offset..offset + len].to_vec()
    }

    /// Overwrites bytes at `offset`.
    pub fn poke(&self, offset: usize, data: &[u8]) {
        self.bytes.borrow_mut()[offset..offset + data.len()].copy_from_slice(data);
    }

    /// The offset of bus address `bus`, if it lies in this memory.
    pub fn offset_of(&self, bus: u64) -> Option<usize> {
        let off = usize::try_from(bus.checked_sub(self.bus)?).ok()?;
        (off <= self.bytes.borrow().len()).then_some(off)
    }
}

impl DmaMemory for SharedMem {
    fn bus_base(&self) -> u64 {
        self.bus
    }

    fn len(&self) -> usize {
        self.bytes.borrow().len()
    }

    fn read(&mut self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self.bytes.borrow()[offset..offset + out.len()]);
    }

    fn write(&mut self, offset: usize, data: &[u8]) {
        self.poke(offset, data);
    }
}

/// A completion the firmware pushed: slot, kind (1 = completion, 2 = slot
/// release), status half-word, dword 0.
pub type Completion = (u16, u32, u16, u32);

/// The OpenSSD NVMe host controller as its firmware sees it: command FIFO
/// and SRAM, completion FIFO, direct DMA engine between `host` memory (at
/// bus address `host_base`) and the bounce buffer, CC.EN and friends.
#[derive(Debug)]
pub struct NvmeModel {
    /// Generation.
    pub layout: &'static HostLayout,
    /// NVME_STATUS.
    pub status: u32,
    /// Fetched commands not yet popped.
    pub fifo: VecDeque<u32>,
    /// Command SRAM.
    pub sram: Vec<u8>,
    /// Host memory.
    pub host: Vec<u8>,
    /// Bus address of `host[0]`.
    pub host_base: u64,
    /// The device side of the DMAs.
    pub bounce: SharedMem,
    /// DMAs finished.
    pub done: DmaCounts,
    /// DMAs run: (to host, host address, length).
    pub ran: Vec<(bool, u64, usize)>,
    /// Completions pushed.
    pub completions: Vec<Completion>,
    /// Every other register written (queues, admin queue).
    pub other: BTreeMap<usize, u32>,
    /// DMAs never finish.
    pub stuck: bool,
    dma: [u32; 5],
    cpl: [u32; 3],
}

impl NvmeModel {
    /// A controller of generation `layout`, with `host_len` bytes of host
    /// memory at `host_base`, moving data to and from `bounce`.
    pub fn new(
        layout: &'static HostLayout,
        host_base: u64,
        host_len: usize,
        bounce: SharedMem,
    ) -> Self {
        Self {
            layout,
            status: 0,
            fifo: VecDeque::new(),
            sram: vec![0; 64 << layout.slot_bits],
            host: vec![0; host_len],
            host_base,
            bounce,
            done: DmaCounts::default(),
            ran: Vec::new(),
            completions: Vec::new(),
            other: BTreeMap::new(),
            stuck: false,
            dma: [0; 5],
            cpl: [0; 3],
        }
    }

    /// The host sets CC.EN.
    pub fn enable(&mut self) {
        self.status |= crate::nvme::regs::status::CC_EN;
    }

    /// The controller fetches `sqe` from queue `queue` into `slot`.
    pub fn submit(&mut self, queue: u16, slot: u16, sqe: &proto::Sqe) {
        let at = usize::from(slot) * 64;
        self.sram[at..at + 64].copy_from_slice(&sqe.to_bytes());
        self.fifo.push_back(
            FetchedCmd {
                queue,
                slot,
                seq: 0,
            }
            .encode(self.layout),
        );
    }

    /// Host memory at bus address `addr`.
    pub fn host_at(&self, addr: u64, len: usize) -> &[u8] {
        let h = (addr - self.host_base) as usize;
        &self.host[h..h + len]
    }

    fn run_dma(&mut self) {
        let [dev, hi, lo, ctrl, _] = self.dma;
        let host = u64::from(hi) << 32 | u64::from(lo);
        let len = (ctrl & 0x1FFF) as usize;
        let to_host = (ctrl >> 30) & 1 == 1;
        assert_eq!(ctrl >> 31, 1, "direct DMA");
        assert_eq!(host % self.layout.host_align, 0, "host alignment");
        assert!(len <= 4096, "at most a page");
        self.ran.push((to_host, host, len));
        if self.stuck {
            return;
        }
        let d = self
            .bounce
            .offset_of(u64::from(dev))
            .expect("device address in the bounce buffer");
        let h = (host - self.host_base) as usize;
        if to_host {
            let bytes = self.bounce.peek(d, len);
            self.host[h..h + len].copy_from_slice(&bytes);
            self.done.direct_tx = self.done.direct_tx.wrapping_add(1);
        } else {
            self.bounce.poke(d, &self.host[h..h + len]);
            self.done.direct_rx = self.done.direct_rx.wrapping_add(1);
        }
    }
}

impl RegisterModel for NvmeModel {
    fn read(&mut self, offset: usize) -> u32 {
        let l = self.layout;
        match offset {
            off::NVME_STATUS => self.status,
            off::CMD_FIFO => self.fifo.pop_front().unwrap_or(0),
            off::DMA_FIFO_CNT => self.done.encode(),
            o if o >= l.cmd_sram && o < l.cmd_sram + (64 << l.slot_bits) => {
                let i = o - l.cmd_sram;
                let mut w = [0u8; 4];
                w.copy_from_slice(&self.sram[i..i + 4]);
                u32::from_le_bytes(w)
            }
            o => self.other.get(&o).copied().unwrap_or(0),
        }
    }

    fn write(&mut self, offset: usize, value: u32) {
        let l = self.layout;
        match offset {
            off::NVME_STATUS => self.status = value,
            o if (off::CPL_FIFO..off::CPL_FIFO + 12).contains(&o) => {
                let i = (o - off::CPL_FIFO) / 4;
                self.cpl[i] = value;
                if i == 2 {
                    let slot = (value & ((1 << l.slot_bits) - 1)) as u16;
                    self.completions.push((
                        slot,
                        (value >> 14) & 3,
                        (value >> 16) as u16,
                        self.cpl[1],
                    ));
                }
            }
            o if (off::DMA_CMD_FIFO..off::DMA_CMD_FIFO + 4 * l.dma_cmd_words).contains(&o) => {
                let i = (o - off::DMA_CMD_FIFO) / 4;
                self.dma[i] = value;
                if i + 1 == l.dma_cmd_words {
                    self.run_dma();
                }
            }
            o => {
                self.other.insert(o, value);
            }
        }
    }
}

/// A counter that advances `step` ticks of a `hz` clock at every read,
/// so a test knows what each clock read returns.
#[derive(Clone, Copy, Debug)]
pub struct StepCounter {
    now: u64,
    step: u64,
    hz: u64,
}

impl StepCounter {
    /// A counter at 0 that moves `step` ticks of a `hz` clock per read.
    pub fn new(step: u64, hz: u64) -> Self {
        Self { now: 0, step, hz }
    }
}

impl Ticks for StepCounter {
    fn ticks(&mut self) -> u64 {
        self.now += self.step;
        self.now
    }
    fn hz(&self) -> u64 {
        self.hz
    }
}

/// A board's hardware as plain recorded registers (the NVMe controller,
/// `channels` NAND controllers, the engine), the NVMe bounce buffer at
/// `base` (64 KiB) and `buffer_slots` NAND page-buffer slots 1 MiB above
/// it, with `counter` as the free-running counter.
pub fn plain_hardware<T>(
    channels: usize,
    base: u64,
    buffer_slots: usize,
    counter: T,
) -> Hardware<Recorder<Plain>, SharedMem, T> {
    Hardware {
        nvme: Recorder::new(Plain::default()),
        nsc: (0..channels)
            .map(|_| Recorder::new(Plain::default()))
            .collect(),
        engine: Recorder::new(Plain::default()),
        host_bounce: SharedMem::new(base, 0x1_0000),
        nand_buffers: SharedMem::new(base + 0x10_0000, slots::window_bytes(buffer_slots)),
        counter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_logs_and_plain_remembers() {
        let mut r = Recorder::new(Plain::default());
        r.write32(8, 5);
        assert_eq!(r.read32(8), 5);
        assert_eq!(r.read32(12), 0);
        assert_eq!(
            r.log,
            [Access::Write(8, 5), Access::Read(8, 5), Access::Read(12, 0)]
        );
        assert_eq!(r.writes(), [(8, 5)]);
    }

    #[test]
    fn shared_mem_clones_share_bytes() {
        let a = SharedMem::new(0x4000_0000, 16);
        let mut b = a.clone();
        b.write_u32(4, 0x0102_0304);
        assert_eq!(a.peek(4, 4), [4, 3, 2, 1]);
        assert_eq!(a.offset_of(0x4000_0008), Some(8));
        assert_eq!(a.offset_of(0x3FFF_FFFF), None);
        assert_eq!(a.offset_of(0x4000_0011), None);
    }
}
