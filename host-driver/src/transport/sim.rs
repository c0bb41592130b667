//! [`SimTransport`]: the simulated board in-process, driven exactly like a
//! PCIe NVMe controller.
//!
//! Queues and data buffers live in the board's host memory: the admin
//! queue pair is handed to the controller at enable time, the I/O queue pair
//! is created with the standard Create I/O CQ / SQ admin commands. Every
//! data buffer is a set of scattered 4 KiB pages described by PRP1 / PRP2 /
//! PRP lists built with [`proto::prp::build`]; SQEs are written to the SQ
//! ring, doorbells are rung, the board runs until idle, completions are
//! consumed by phase tag and the CQ head doorbell is rung.

use board_sim::{SimConfig, SimCsd};
use proto::{Cqe, Opcode, Sqe};

use super::inflight::Inflight;
use super::ring::QueuePair;
use super::staging::{self, Buffers};
use super::{DeviceTime, IoData, IoRequest, IoResult, Transport, TransportError};
use crate::dma::{DmaStats, Placement};

/// Admin opcode: Create I/O Submission Queue.
const CREATE_IO_SQ: Opcode = Opcode(0x01);
/// Admin opcode: Create I/O Completion Queue.
const CREATE_IO_CQ: Opcode = Opcode(0x05);
/// Admin queue entries.
const ADMIN_ENTRIES: u16 = 32;
/// Default I/O queue entries.
pub const DEFAULT_IO_ENTRIES: u16 = 64;
/// The one I/O queue pair's identifier.
const IO_QID: u16 = 1;

/// The simulated board behind an NVMe queue interface.
#[derive(Debug)]
pub struct SimTransport {
    dev: SimCsd,
    admin: QueuePair,
    io: QueuePair,
    next_admin_cid: u16,
    /// I/O commands on the device (their staged buffers) or completed.
    cmds: Inflight<Buffers>,
    /// Where command data lives.
    placement: Placement,
}

impl SimTransport {
    /// A board with default settings and `page_size`-byte flash pages, with
    /// a 64-entry I/O queue pair.
    pub fn new(page_size: u32) -> Result<Self, TransportError> {
        let dev = SimCsd::new(SimConfig::new(page_size))?;
        Self::with_device(dev, DEFAULT_IO_ENTRIES)
    }

    /// Wraps an already built board: enables its controller and creates one
    /// I/O queue pair of `io_entries` (2..=4096) entries.
    pub fn with_device(mut dev: SimCsd, io_entries: u16) -> Result<Self, TransportError> {
        if !(2..=4096).contains(&io_entries) {
            return Err(TransportError::Setup(format!(
                "I/O queue size {io_entries} not in 2..=4096"
            )));
        }
        let mem = dev.host_memory();
        let asq = mem.alloc_contiguous(usize::from(ADMIN_ENTRIES) * Sqe::SIZE);
        let acq = mem.alloc_contiguous(usize::from(ADMIN_ENTRIES) * Cqe::SIZE);
        let iosq = mem.alloc_contiguous(usize::from(io_entries) * Sqe::SIZE);
        let iocq = mem.alloc_contiguous(usize::from(io_entries) * Cqe::SIZE);
        dev.enable(asq, acq, ADMIN_ENTRIES)?;
        let mut t = Self {
            dev,
            admin: QueuePair::new(0, asq, acq, ADMIN_ENTRIES),
            io: QueuePair::new(IO_QID, iosq, iocq, io_entries),
            next_admin_cid: 0,
            cmds: Inflight::default(),
            placement: Placement::Host,
        };
        let qsize = u32::from(io_entries - 1) << 16 | u32::from(IO_QID);
        let mut cq = Sqe::new(CREATE_IO_CQ);
        cq.prp1 = iocq;
        cq.cdw10 = qsize;
        cq.cdw11 = 1; // PC = 1, interrupts off: the host polls.
        t.setup_command(cq, "create I/O completion queue")?;
        let mut sq = Sqe::new(CREATE_IO_SQ);
        sq.prp1 = iosq;
        sq.cdw10 = qsize;
        sq.cdw11 = u32::from(IO_QID) << 16 | 1; // CQID, PC = 1.
        t.setup_command(sq, "create I/O submission queue")?;
        Ok(t)
    }

    /// The board, for counters and timing.
    pub fn device(&self) -> &SimCsd {
        &self.dev
    }

    /// The board, taken back (power loss and restart in tests).
    pub fn into_device(self) -> SimCsd {
        self.dev
    }

    /// The board, mutable (fault injection in tests).
    pub fn device_mut(&mut self) -> &mut SimCsd {
        &mut self.dev
    }

    fn setup_command(&mut self, sqe: Sqe, what: &str) -> Result<(), TransportError> {
        let res = self.admin(IoRequest {
            sqe,
            data: IoData::None,
        })?;
        let status = res.cqe.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(TransportError::Setup(format!("{what}: {status}")))
        }
    }

    /// Places the data of the commands submitted from now on (I/O
    /// commands; admin commands keep theirs in host memory, as a driver
    /// does): host memory, or the board's GPU window reached peer to peer
    /// or through a bounce buffer.
    pub fn set_placement(&mut self, placement: Placement) {
        self.placement = placement;
    }

    /// Where command data is placed.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Bytes per path so far.
    pub fn dma_stats(&self) -> DmaStats {
        let k = self.dev.pcie_counters();
        let c = self.dev.copy_engine();
        DmaStats {
            device_host_dram_bytes: k.host_dram_bytes(),
            p2p_bytes: k.p2p_bytes_in + k.p2p_bytes_out,
            bounce_bytes: c.bytes,
            bounce_copies: c.copies,
            bounce_busy_ns: c.busy_ns(),
        }
    }

    fn stage(&mut self, sqe: &mut Sqe, data: &IoData) -> Result<Buffers, TransportError> {
        staging::stage_on(&mut self.dev, sqe, data, self.placement)
    }

    fn stage_admin(&mut self, sqe: &mut Sqe, data: &IoData) -> Result<Buffers, TransportError> {
        staging::stage(self.dev.host_memory(), sqe, data)
    }

    fn unstage(&mut self, bufs: Buffers) -> Result<Vec<u8>, TransportError> {
        staging::unstage_on(&mut self.dev, bufs)
    }

    fn release(&mut self, bufs: &Buffers) {
        staging::release(self.dev.host_memory(), bufs);
    }

    /// Runs the board until idle; a controller fatal status is an error.
    fn run_device(&mut self) -> Result<(), TransportError> {
        self.dev.process()?;
        if self.dev.fatal() {
            return Err(TransportError::DeviceFailed(
                "controller fatal status (CSTS.CFS) set".into(),
            ));
        }
        Ok(())
    }

    /// Reads the next CQE of `q` if its phase says it is new.
    fn peek_cq(&mut self, admin: bool) -> Result<Option<Cqe>, TransportError> {
        let q = if admin { &self.admin } else { &self.io };
        let mut raw = [0u8; Cqe::SIZE];
        let slot = q.cq_slot();
        self.dev.host_memory().read(slot, &mut raw)?;
        let cqe = Cqe::from_bytes(&raw)?;
        Ok(q.is_new(&cqe).then_some(cqe))
    }

    /// Consumes the CQE just peeked and rings the CQ head doorbell.
    fn pop_cq(&mut self, admin: bool, cqe: &Cqe) -> Result<(), TransportError> {
        let q = if admin { &mut self.admin } else { &mut self.io };
        let head = q.pop(cqe);
        let qid = q.qid;
        self.dev.ring_cq(qid, head);
        Ok(())
    }

    /// Moves every posted I/O completion to `ready`; returns how many.
    fn harvest(&mut self) -> Result<usize, TransportError> {
        let mut n = 0;
        while let Some(cqe) = self.peek_cq(false)? {
            self.pop_cq(false, &cqe)?;
            if cqe.sq_id != IO_QID {
                return Err(TransportError::UnexpectedCompletion {
                    cid: cqe.cid,
                    sq_id: cqe.sq_id,
                });
            }
            let bufs =
                self.cmds
                    .pending
                    .remove(&cqe.cid)
                    .ok_or(TransportError::UnexpectedCompletion {
                        cid: cqe.cid,
                        sq_id: cqe.sq_id,
                    })?;
            let data = self.unstage(bufs)?;
            self.cmds.complete(cqe.cid, IoResult { cqe, data });
            n += 1;
        }
        Ok(n)
    }

    fn write_sqe(&mut self, admin: bool, sqe: &Sqe) -> Result<(), TransportError> {
        let q = if admin { &mut self.admin } else { &mut self.io };
        let slot = q.sq_slot();
        let tail = q.push();
        let qid = q.qid;
        self.dev.host_memory().write(slot, &sqe.to_bytes())?;
        self.dev.ring_sq(qid, tail);
        Ok(())
    }
}

impl Transport for SimTransport {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        let mut sqe = req.sqe;
        let cid = self.next_admin_cid;
        self.next_admin_cid = self.next_admin_cid.wrapping_add(1);
        sqe.set_cid(cid);
        let bufs = self.stage_admin(&mut sqe, &req.data)?;
        let sent = self.write_sqe(true, &sqe).and_then(|()| self.run_device());
        if let Err(e) = sent {
            self.release(&bufs);
            return Err(e);
        }
        let Some(cqe) = self.peek_cq(true)? else {
            self.release(&bufs);
            return Err(TransportError::NoCompletion(1));
        };
        self.pop_cq(true, &cqe)?;
        if cqe.cid != cid || cqe.sq_id != 0 {
            self.release(&bufs);
            return Err(TransportError::UnexpectedCompletion {
                cid: cqe.cid,
                sq_id: cqe.sq_id,
            });
        }
        let data = self.unstage(bufs)?;
        Ok(IoResult { cqe, data })
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        if self.io.sq_full() {
            // Let the device drain the ring; its completions wait in `ready`.
            self.run_device()?;
            self.harvest()?;
            if self.io.sq_full() {
                return Err(TransportError::QueueFull(self.cmds.pending.len()));
            }
        }
        let cid = self.cmds.free_cid();
        let mut sqe = req.sqe;
        sqe.set_cid(cid);
        let bufs = self.stage(&mut sqe, &req.data)?;
        if let Err(e) = self.write_sqe(false, &sqe) {
            self.release(&bufs);
            return Err(e);
        }
        self.cmds.pending.insert(cid, bufs);
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        if self.cmds.must_harvest()? && self.harvest()? == 0 {
            self.run_device()?;
            if self.harvest()? == 0 {
                return Err(TransportError::NoCompletion(self.cmds.pending.len()));
            }
        }
        self.cmds.pop()
    }

    fn in_flight(&self) -> usize {
        self.cmds.len()
    }

    fn holds_caller(&self) -> bool {
        true
    }

    fn device_time(&self) -> Option<DeviceTime> {
        let b = self.dev.breakdown();
        Some(DeviceTime {
            now_ns: self.dev.now_ns(),
            total_ns: b.total,
            flash_busy_ns: b.flash_busy,
            bus_busy_ns: b.bus_busy,
            engine_busy_ns: b.engine_busy,
            dma_busy_ns: b.dma_busy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::prp::{self, PAGE};

    /// Stages `len` bytes, walks the PRPs as a device would and compares.
    fn staged_bytes_walk_back(t: &mut SimTransport, len: usize) {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4096) as u8).collect();
        let mut sqe = Sqe::new(Opcode::KV_APPEND);
        let bufs = t.stage(&mut sqe, &IoData::ToDevice(data.clone())).unwrap();
        let mem = t.dev.host_memory();
        let mut walker = prp::PrpWalker::new(sqe.prp1, sqe.prp2, len).unwrap();
        let mut got = Vec::with_capacity(len);
        let mut segments = 0;
        while let Some((addr, n)) = walker
            .next_segment(|a, out: &mut [u64]| {
                let mut raw = vec![0u8; out.len() * 8];
                mem.read(a, &mut raw).map_err(TransportError::from)?;
                for (o, c) in out.iter_mut().zip(raw.chunks_exact(8)) {
                    *o = u64::from_le_bytes(c.try_into().unwrap_or_default());
                }
                Ok::<(), TransportError>(())
            })
            .unwrap()
        {
            let mut chunk = vec![0u8; n];
            mem.read(addr, &mut chunk).unwrap();
            got.extend_from_slice(&chunk);
            segments += 1;
        }
        assert_eq!(got, data, "{len} bytes");
        assert_eq!(segments, len.div_ceil(PAGE));
        assert_eq!(bufs.list_pages.len(), prp::layout(len, 0).list_pages);
        let before = t.dev.host_memory().mapped_pages();
        t.release(&bufs);
        let freed = before - t.dev.host_memory().mapped_pages();
        assert_eq!(freed, bufs.data_pages.len() + bufs.list_pages.len());
    }

    #[test]
    fn prps_describe_every_size() {
        let mut t = SimTransport::new(4096).unwrap();
        // PRP1 only, PRP1 + PRP2, one PRP list, chained PRP lists.
        for len in [1, 4095, 4096, 4097, 8192, 8193, 1 << 20, (4 << 20) + 3] {
            staged_bytes_walk_back(&mut t, len);
        }
    }

    #[test]
    fn oversized_and_empty_transfers() {
        let mut t = SimTransport::new(4096).unwrap();
        let mut sqe = Sqe::new(Opcode::DECODE_FETCH);
        sqe.prp1 = 0x1000;
        let bufs = t.stage(&mut sqe, &IoData::None).unwrap();
        assert!(bufs.data_pages.is_empty());
        assert_eq!(sqe.prp1, 0x1000, "no-data commands keep their PRP1");
        let e = t
            .stage(&mut sqe, &IoData::FromDevice(prp::MAX_LEN + 1))
            .unwrap_err();
        assert!(matches!(e, TransportError::BadTransfer { .. }));
        assert!(matches!(t.reap(), Err(TransportError::NothingInFlight)));
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn unknown_opcode_completes_with_error_status() {
        let mut t = SimTransport::new(4096).unwrap();
        let cid = t
            .submit(IoRequest {
                sqe: Sqe::new(Opcode(0x99)),
                data: IoData::None,
            })
            .unwrap();
        assert_eq!(t.in_flight(), 1);
        let (c, res) = t.reap().unwrap();
        assert_eq!(c, cid);
        assert_eq!(res.cqe.cid, cid);
        assert!(!res.cqe.status().is_success());
        let time = t.device_time().unwrap();
        assert!(time.now_ns > 0);
    }
}
