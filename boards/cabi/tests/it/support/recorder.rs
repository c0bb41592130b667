//! [`Recorder`]: a host-driver [`Transport`] over the simulated board that
//! writes down every command as a [`Record`].
//!
//! It is a small NVMe host of its own (admin queue pair, one I/O queue
//! pair, one command at a time) so that it knows everything a command
//! references: each data buffer is scattered 4 KiB pages of the board's
//! host memory, poisoned, described by PRP1/PRP2/PRP lists
//! ([`proto::prp::build`]) at a rotating first-page offset; the pages (data
//! and list) are snapshotted before the SQE is rung and again after the
//! CQE arrives. Queue set-up (Create I/O CQ/SQ) is not recorded: in an
//! emulator the queues are the emulator's.

use std::collections::VecDeque;

use board_sim::{SimConfig, SimCsd};
use host_driver::transport::{DeviceTime, IoData, IoRequest, IoResult, Transport, TransportError};
use proto::prp::{self, PrpPair};
use proto::{Cqe, Opcode, Sqe};

use super::vectors::{CqeFields, DeviceLine, Record, Section};

const PAGE: usize = 4096;
const ADMIN_ENTRIES: u16 = 8;
const IO_ENTRIES: u16 = 8;
const IO_QID: u16 = 1;
/// Fill of data pages before a command, so stray or missing writes show.
const POISON: u8 = 0x5A;
/// First-page offsets used in turn (dword aligned).
const OFFSETS: [usize; 5] = [0, 1024, 0, 3072, 128];

/// Where a command's data lives.
#[derive(Clone, Debug)]
pub enum Prps {
    /// Staged by the recorder.
    Auto,
    /// Exactly these PRPs; `pages` (already mapped and filled by the
    /// caller, or deliberately unmapped) are snapshotted.
    Given { pair: PrpPair, pages: Vec<u64> },
}

#[derive(Debug)]
struct Ring {
    qid: u16,
    sq: u64,
    cq: u64,
    entries: u16,
    tail: u16,
    head: u16,
    phase: bool,
}

impl Ring {
    fn new(qid: u16, sq: u64, cq: u64, entries: u16) -> Self {
        Self {
            qid,
            sq,
            cq,
            entries,
            tail: 0,
            head: 0,
            phase: true,
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct Recorder {
    dev: SimCsd,
    admin: Ring,
    io: Ring,
    next_cid: u16,
    done: VecDeque<(u16, IoResult)>,
    section: Section,
}

impl Recorder {
    /// A simulated board with default settings and `page_size` pages,
    /// queues set up.
    pub fn new(page_size: u32) -> Result<Self, TransportError> {
        let cfg = SimConfig::new(page_size);
        let g = cfg.geometry;
        let id = cfg.device_config().identity;
        let device = DeviceLine {
            page_size,
            ram_pages: u64::from(g.dies())
                * u64::from(g.blocks_per_die)
                * u64::from(g.pages_per_block),
            vendor_id: id.vendor_id,
            serial: id.serial,
            model: id.model,
            firmware_rev: id.firmware_rev,
        };
        let mut dev = SimCsd::new(cfg)?;
        let mem = dev.host_memory();
        let asq = mem.alloc_contiguous(usize::from(ADMIN_ENTRIES) * Sqe::SIZE);
        let acq = mem.alloc_contiguous(usize::from(ADMIN_ENTRIES) * Cqe::SIZE);
        let iosq = mem.alloc_contiguous(usize::from(IO_ENTRIES) * Sqe::SIZE);
        let iocq = mem.alloc_contiguous(usize::from(IO_ENTRIES) * Cqe::SIZE);
        dev.enable(asq, acq, ADMIN_ENTRIES)?;
        let mut r = Self {
            dev,
            admin: Ring::new(0, asq, acq, ADMIN_ENTRIES),
            io: Ring::new(IO_QID, iosq, iocq, IO_ENTRIES),
            next_cid: 0x100,
            done: VecDeque::new(),
            section: Section {
                device,
                records: Vec::new(),
            },
        };
        let qsize = u32::from(IO_ENTRIES - 1) << 16 | u32::from(IO_QID);
        let mut cq = Sqe::new(Opcode(0x05));
        (cq.prp1, cq.cdw10, cq.cdw11) = (iocq, qsize, 1);
        let mut sq = Sqe::new(Opcode(0x01));
        (sq.prp1, sq.cdw10, sq.cdw11) = (iosq, qsize, u32::from(IO_QID) << 16 | 1);
        for setup in [cq, sq] {
            let cqe = r.ring(0, setup)?;
            if !cqe.status().is_success() {
                return Err(TransportError::Setup(format!(
                    "{setup:?}: {}",
                    cqe.status()
                )));
            }
        }
        Ok(r)
    }

    /// What was recorded.
    pub fn section(&self) -> &Section {
        &self.section
    }

    /// The board (its statistics).
    pub fn device(&self) -> &SimCsd {
        &self.dev
    }

    /// Maps `n` scattered pages (each followed by an unmapped one).
    pub fn alloc_pages(&mut self, n: usize) -> Vec<u64> {
        self.dev.host_memory().alloc(n * PAGE)
    }

    /// Writes host memory.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), TransportError> {
        Ok(self.dev.host_memory().write(addr, data)?)
    }

    /// Runs one command with the given PRPs and records it.
    pub fn raw(
        &mut self,
        qid: u16,
        sqe: Sqe,
        data: &IoData,
        prps: Prps,
    ) -> Result<IoResult, TransportError> {
        self.exec(qid, sqe, data, prps)
    }

    /// Puts `sqe` on queue `qid`, lets the board run, takes the CQE.
    fn ring(&mut self, qid: u16, sqe: Sqe) -> Result<Cqe, TransportError> {
        let q = if qid == 0 {
            &mut self.admin
        } else {
            &mut self.io
        };
        let slot = q.sq + u64::from(q.tail) * Sqe::SIZE as u64;
        q.tail = (q.tail + 1) % q.entries;
        let (qid, tail) = (q.qid, q.tail);
        self.dev.host_memory().write(slot, &sqe.to_bytes())?;
        self.dev.ring_sq(qid, tail);
        self.dev.process()?;
        let q = if qid == 0 {
            &mut self.admin
        } else {
            &mut self.io
        };
        let mut raw = [0u8; Cqe::SIZE];
        let slot = q.cq + u64::from(q.head) * Cqe::SIZE as u64;
        self.dev.host_memory().read(slot, &mut raw)?;
        let cqe = Cqe::from_bytes(&raw)?;
        let q = if qid == 0 {
            &mut self.admin
        } else {
            &mut self.io
        };
        if cqe.phase() != q.phase || self.dev.fatal() {
            return Err(TransportError::NoCompletion(1));
        }
        q.head = (q.head + 1) % q.entries;
        if q.head == 0 {
            q.phase = !q.phase;
        }
        let head = q.head;
        self.dev.ring_cq(qid, head);
        Ok(cqe)
    }

    fn snapshot(&mut self, pages: &[u64]) -> Vec<(u64, Vec<u8>)> {
        pages
            .iter()
            .filter_map(|&a| {
                let mut b = vec![0u8; PAGE];
                // A deliberately unmapped page is not part of the record.
                self.dev.host_memory().read(a, &mut b).ok().map(|()| (a, b))
            })
            .collect()
    }

    /// Stages `data` in fresh pages; returns the PRPs, the data pages and
    /// the list pages.
    fn stage(&mut self, data: &IoData) -> Result<(PrpPair, Vec<u64>, Vec<u64>), TransportError> {
        let len = data.len();
        if len == 0 {
            return Ok((PrpPair { prp1: 0, prp2: 0 }, Vec::new(), Vec::new()));
        }
        let offset = OFFSETS[usize::from(self.next_cid) % OFFSETS.len()];
        let plan = prp::layout(len, offset);
        let pages = self.alloc_pages(plan.pages);
        let lists = self.alloc_pages(plan.list_pages);
        for &p in &pages {
            self.write(p, &[POISON; PAGE])?;
        }
        let mem = self.dev.host_memory();
        let pair = prp::build::<TransportError>(len, offset, &pages, &lists, |addr, entries| {
            let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_le_bytes()).collect();
            Ok(mem.write(addr, &bytes)?)
        })?;
        if let IoData::ToDevice(bytes) = data {
            self.copy_in(&pages, offset, bytes)?;
        }
        Ok((pair, pages, lists))
    }

    fn copy_in(
        &mut self,
        pages: &[u64],
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), TransportError> {
        let mut done = 0;
        for (i, &p) in pages.iter().enumerate() {
            let at = if i == 0 { offset } else { 0 };
            let n = (PAGE - at).min(bytes.len() - done);
            self.write(p + at as u64, &bytes[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    fn copy_out(
        &mut self,
        pages: &[u64],
        offset: usize,
        len: usize,
    ) -> Result<Vec<u8>, TransportError> {
        let mut out = vec![0u8; len];
        let mut done = 0;
        for (i, &p) in pages.iter().enumerate() {
            let at = if i == 0 { offset } else { 0 };
            let n = (PAGE - at).min(len - done);
            self.dev
                .host_memory()
                .read(p + at as u64, &mut out[done..done + n])?;
            done += n;
        }
        Ok(out)
    }

    fn exec(
        &mut self,
        qid: u16,
        mut sqe: Sqe,
        data: &IoData,
        prps: Prps,
    ) -> Result<IoResult, TransportError> {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        sqe.set_cid(cid);
        let (pair, data_pages, snap, staged) = match prps {
            Prps::Auto => {
                let (pair, pages, lists) = self.stage(data)?;
                let snap: Vec<u64> = pages.iter().chain(&lists).copied().collect();
                (pair, pages, snap, true)
            }
            Prps::Given { pair, pages } => (pair, Vec::new(), pages, false),
        };
        (sqe.prp1, sqe.prp2) = (pair.prp1, pair.prp2);
        let pre = self.snapshot(&snap);
        let cqe = self.ring(qid, sqe)?;
        let post = self.snapshot(&snap);
        let out = match data {
            IoData::FromDevice(len) if staged => {
                self.copy_out(&data_pages, (pair.prp1 % PAGE as u64) as usize, *len)?
            }
            _ => Vec::new(),
        };
        if staged {
            self.dev.host_memory().free(&snap);
        }
        self.section.records.push(Record {
            qid,
            sqe: sqe.to_bytes(),
            pre,
            cqe: CqeFields::of(&cqe),
            post,
        });
        Ok(IoResult { cqe, data: out })
    }
}

impl Transport for Recorder {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        self.exec(0, req.sqe, &req.data, Prps::Auto)
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        let res = self.exec(IO_QID, req.sqe, &req.data, Prps::Auto)?;
        let cid = res.cqe.cid;
        self.done.push_back((cid, res));
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.done.pop_front().ok_or(TransportError::NothingInFlight)
    }

    fn in_flight(&self) -> usize {
        self.done.len()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }
}
