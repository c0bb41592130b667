//! [`NvmeHost`]: the device core's [`HostInterface`] over the OpenSSD NVMe
//! host controller (Cosmos+ `NVMeHostController`, Daisyplus
//! `nvme_ctrl`).
//!
//! The controller does the NVMe transport in hardware: it exposes BAR0 to
//! the host, fetches SQEs from the host's queues into a command SRAM, and
//! posts CQEs (phase tags, doorbells, interrupts) when the firmware pushes
//! a completion entry. The firmware sees:
//!
//! * a **command FIFO** — one read pops (queue, SRAM slot) of a fetched
//!   command, whose 64 bytes it then reads from the SRAM;
//! * a **completion FIFO** — "complete slot s with this status", which
//!   also frees the slot;
//! * a **DMA command FIFO** — "move n ≤ 4096 bytes between host address h
//!   and device address d", and counters of finished DMAs.
//!
//! This driver polls (no interrupts), handles the CC.EN / CC.SHN
//! handshake inside [`HostInterface::fetch`], serves the queue-management
//! admin commands itself ([`admin`]) and hands everything else to the
//! core. Data moves through a bounce buffer in a DMA window: one chunk of
//! at most a page at a time ([`dma`]), waiting for each to finish — simple
//! and correct, not the fastest (the controller could overlap several).
//!
//! Register layouts and their sources are in [`regs`]. None of this has run
//! on a board yet: it is tested against a model of the controller in
//! host tests only.

pub mod admin;
pub mod dma;
mod error;
pub mod regs;

#[cfg(test)]
mod tests;

use alloc::collections::BTreeMap;

use firmware::hal::{HostInterface, Submission};
use proto::{Sqe, Status};

use crate::mmio::{DmaMemory, Regs};

pub use error::HostError;
use regs::{CplKind, Direction, DmaCmd, DmaCounts, FetchedCmd, HostLayout, MAX_DMA, off};

/// Board-served admin commands `fetch` may complete in one call before it
/// yields (so a host flooding the admin queue cannot starve the core).
const ADMIN_BURST: usize = 16;

/// Default spin budget of one DMA (register polls).
pub const DEFAULT_DMA_SPINS: u32 = 50_000_000;

/// What the last controller check found (see [`NvmeHost::controller`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerState {
    /// CC.EN = 0: the host has not enabled the controller.
    Disabled,
    /// Enabled and ready (CSTS.RDY = 1).
    Ready,
    /// The host asked for shutdown; CSTS.SHST says complete.
    ShutDown,
}

/// The NVMe host interface of an OpenSSD board; see the module docs.
#[derive(Debug)]
pub struct NvmeHost<R, M> {
    regs: R,
    layout: &'static HostLayout,
    bounce: M,
    /// Direct DMAs issued, per direction (wrapping like the counters).
    issued: DmaCounts,
    /// Command slots of the commands handed to the core.
    slots: BTreeMap<(u16, u16), u16>,
    queues: admin::Queues,
    state: ControllerState,
    dma_spins: u32,
}

impl<R: Regs, M: DmaMemory> NvmeHost<R, M> {
    /// The controller behind `regs`, of generation `layout`, moving data
    /// through `bounce` (at least one DMA, 4 KiB, below 4 GiB on the bus).
    pub fn new(mut regs: R, layout: &'static HostLayout, bounce: M) -> Result<Self, HostError> {
        let bus = bounce.bus_base();
        let len = bounce.len();
        if len < MAX_DMA || bus.checked_add(len as u64).is_none_or(|end| end > 1 << 32) {
            return Err(HostError::BadBounceBuffer { bus, len });
        }
        // DMAs the controller finished before we came are not ours.
        let issued = DmaCounts::decode(regs.read32(off::DMA_FIFO_CNT));
        Ok(Self {
            regs,
            layout,
            bounce,
            issued,
            slots: BTreeMap::new(),
            queues: admin::Queues::default(),
            state: ControllerState::Disabled,
            dma_spins: DEFAULT_DMA_SPINS,
        })
    }

    /// Sets the spin budget of one DMA.
    pub fn with_dma_spins(mut self, spins: u32) -> Self {
        self.dma_spins = spins.max(1);
        self
    }

    /// The controller's generation.
    pub fn layout(&self) -> &'static HostLayout {
        self.layout
    }

    /// The registers (tests inspect the model behind them).
    pub fn regs_mut(&mut self) -> &mut R {
        &mut self.regs
    }

    /// Follows the host's CC.EN and CC.SHN: on enable, validates the admin
    /// queue pair and sets CSTS.RDY; on disable, forgets every queue and
    /// command; on shutdown, reports it complete (nothing is cached on
    /// the board side of the transport).
    pub fn controller(&mut self) -> ControllerState {
        use regs::{admin_queue as aq, status as st};
        let s = self.regs.read32(off::NVME_STATUS);
        let enabled = s & st::CC_EN != 0;
        let shn = (s >> st::CC_SHN_SHIFT) & 3;
        let shst = (s >> st::CSTS_SHST_SHIFT) & 3;
        if shn != 0 {
            if shst != st::SHST_COMPLETE {
                let v = s & !(3 << st::CSTS_SHST_SHIFT) | st::SHST_COMPLETE << st::CSTS_SHST_SHIFT;
                self.regs.write32(off::NVME_STATUS, v);
            }
            self.state = ControllerState::ShutDown;
        } else if enabled && self.state != ControllerState::Ready {
            self.regs.write32(
                off::ADMIN_QUEUE,
                aq::SQ_VALID | aq::CQ_VALID | aq::CQ_IRQ_EN,
            );
            let v = (s | st::CSTS_RDY) & !(3 << st::CSTS_SHST_SHIFT);
            self.regs.write32(off::NVME_STATUS, v);
            self.state = ControllerState::Ready;
        } else if !enabled && self.state != ControllerState::Disabled {
            self.reset();
            self.regs.write32(off::NVME_STATUS, s & !st::CSTS_RDY);
            self.state = ControllerState::Disabled;
        }
        self.state
    }

    /// Controller reset: every I/O queue invalid, the admin pair invalid,
    /// outstanding commands forgotten.
    fn reset(&mut self) {
        for i in 0..usize::from(self.layout.io_queues) {
            for base in [off::IO_SQ, off::IO_CQ] {
                self.regs.write32(base + 8 * i, 0);
                self.regs.write32(base + 8 * i + 4, 0);
            }
        }
        self.regs.write32(off::ADMIN_QUEUE, 0);
        self.queues.reset();
        self.slots.clear();
    }

    /// Pops the command FIFO and reads the SQE from the SRAM.
    fn pop(&mut self) -> Option<(FetchedCmd, Sqe)> {
        let cmd = FetchedCmd::decode(self.layout, self.regs.read32(off::CMD_FIFO))?;
        let mut bytes = [0u8; Sqe::SIZE];
        let base = self.layout.sqe_offset(cmd.slot);
        for (i, w) in bytes.chunks_exact_mut(4).enumerate() {
            w.copy_from_slice(&self.regs.read32(base + 4 * i).to_le_bytes());
        }
        let sqe = Sqe::from_bytes(&bytes).ok()?;
        Some((cmd, sqe))
    }

    fn push_completion(&mut self, kind: CplKind, dw0: u32, status: Status) {
        let (words, n) = regs::cpl_words(self.layout, kind, dw0, status);
        for &(i, v) in &words[..n] {
            self.regs.write32(off::CPL_FIFO + 4 * i, v);
        }
    }

    fn program_queue(&mut self, w: admin::QueueWrite) {
        let (base, index, words) = match w {
            admin::QueueWrite::Sq { index, regs } => {
                (off::IO_SQ, index, regs.sq_words(self.layout))
            }
            admin::QueueWrite::Cq { index, regs } => {
                (off::IO_CQ, index, regs.cq_words(self.layout))
            }
        };
        let at = base + 8 * usize::from(index);
        self.regs.write32(at, words[0]);
        self.regs.write32(at + 4, words[1]);
    }

    /// One direct DMA of `len` bytes between host `host` and the start of
    /// the bounce buffer; waits for it.
    fn dma(&mut self, dir: Direction, host: u64, len: usize) -> Result<(), HostError> {
        if !self.layout.host_addr_ok(host) {
            return Err(HostError::AddressTooWide(host));
        }
        debug_assert!(len <= MAX_DMA && len <= self.bounce.len());
        let cmd = DmaCmd {
            // Checked below 4 GiB in `new`.
            dev_addr: self.bounce.bus_base() as u32,
            host_addr: host,
            len: len as u16,
            dir,
        };
        let (words, n) = cmd.words(self.layout);
        for (i, &w) in words[..n].iter().enumerate() {
            self.regs.write32(off::DMA_CMD_FIFO + 4 * i, w);
        }
        let want = match dir {
            Direction::FromHost => {
                self.issued.direct_rx = self.issued.direct_rx.wrapping_add(1);
                self.issued.direct_rx
            }
            Direction::ToHost => {
                self.issued.direct_tx = self.issued.direct_tx.wrapping_add(1);
                self.issued.direct_tx
            }
        };
        for _ in 0..self.dma_spins {
            let done = DmaCounts::decode(self.regs.read32(off::DMA_FIFO_CNT));
            if done.direct(dir) == want {
                return Ok(());
            }
        }
        Err(HostError::DmaTimeout {
            direction: dir,
            host,
        })
    }
}

impl<R: Regs, M: DmaMemory> HostInterface for NvmeHost<R, M> {
    type HostError = HostError;

    fn fetch(&mut self) -> nb::Result<Submission, HostError> {
        if self.controller() != ControllerState::Ready {
            return Err(nb::Error::WouldBlock);
        }
        for _ in 0..ADMIN_BURST {
            let Some((cmd, sqe)) = self.pop() else {
                return Err(nb::Error::WouldBlock);
            };
            if cmd.queue == 0 {
                match admin::serve(self.layout, &mut self.queues, &sqe) {
                    admin::Action::Complete { status, dw0, write } => {
                        if let Some(w) = write {
                            self.program_queue(w);
                        }
                        self.push_completion(CplKind::Auto { slot: cmd.slot }, dw0, status);
                        continue;
                    }
                    admin::Action::Hold => {
                        self.push_completion(
                            CplKind::SlotRelease { slot: cmd.slot },
                            0,
                            Status::SUCCESS,
                        );
                        continue;
                    }
                    admin::Action::Firmware => {}
                }
            }
            self.slots.insert((cmd.queue, sqe.cid()), cmd.slot);
            return Ok(Submission {
                queue: cmd.queue,
                sqe,
            });
        }
        Err(nb::Error::WouldBlock)
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), HostError> {
        if self.state != ControllerState::Ready {
            return Err(HostError::NotEnabled);
        }
        for c in dma::plan(addr, buf.len(), self.layout.host_align)? {
            self.dma(Direction::FromHost, c.host, c.len)?;
            self.bounce.read(c.skip, &mut buf[c.at..c.at + c.take]);
        }
        Ok(())
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), HostError> {
        if self.state != ControllerState::Ready {
            return Err(HostError::NotEnabled);
        }
        for c in dma::plan(addr, data.len(), self.layout.host_align)? {
            if !c.is_whole() {
                // Keep the host bytes around ours: read the window first.
                self.dma(Direction::FromHost, c.host, c.len)?;
            }
            self.bounce.write(c.skip, &data[c.at..c.at + c.take]);
            self.dma(Direction::ToHost, c.host, c.len)?;
        }
        Ok(())
    }

    fn complete(
        &mut self,
        sub: &Submission,
        status: Status,
        dw0: u32,
    ) -> nb::Result<(), HostError> {
        let key = (sub.queue, sub.sqe.cid());
        let slot = self.slots.remove(&key).ok_or(HostError::UnknownCommand {
            queue: key.0,
            cid: key.1,
        })?;
        // The controller posts the CQE itself and never reports a full CQ
        // to the firmware.
        self.push_completion(CplKind::Auto { slot }, dw0, status);
        Ok(())
    }
}
