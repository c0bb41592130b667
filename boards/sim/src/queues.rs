//! The controller side of the NVMe queues, like the NVMe IP block of an
//! OpenSSD board.
//!
//! It owns the submission and completion queues that live in host memory:
//! the admin pair set by [`QueueEngine::enable`] (AQA/ASQ/ACQ + CC.EN),
//! the doorbells, phase tags and the queue-management admin commands —
//! Create/Delete I/O Completion Queue (05h/04h) and Create/Delete I/O
//! Submission Queue (01h/00h), which it serves itself (NVMe base spec
//! §5.4–5.7; physically contiguous queues only, PC = 1). Every other command
//! goes to the firmware through [`QueueEngine::fetch`], round-robin over the
//! submission queues with entries pending.
//!
//! A submission queue is only fetched from while its completion queue has
//! a free slot for every command fetched and not yet completed, so the
//! firmware never finds a CQ full (back-pressure stays on the host's side
//! of the SQ). A doorbell write naming a missing queue or an out-of-range
//! value, or a queue access to unmapped memory, sets the controller-fatal
//! flag (CSTS.CFS) and stops the engine; nothing panics.

use firmware::hal::Submission;
use proto::{Cqe, Opcode, Sqe, Status};

use crate::error::SimError;
use crate::pcie::Dma;

/// Delete I/O Submission Queue.
pub const OP_DELETE_SQ: Opcode = Opcode(0x00);
/// Create I/O Submission Queue.
pub const OP_CREATE_SQ: Opcode = Opcode(0x01);
/// Delete I/O Completion Queue.
pub const OP_DELETE_CQ: Opcode = Opcode(0x04);
/// Create I/O Completion Queue.
pub const OP_CREATE_CQ: Opcode = Opcode(0x05);

/// Completion Queue Invalid (command specific 00h).
pub const CQ_INVALID: Status = Status::new(1, 0x00).with_dnr(true);
/// Invalid Queue Identifier (command specific 01h).
pub const INVALID_QUEUE_ID: Status = Status::INVALID_QUEUE_ID;
/// Invalid Queue Size (command specific 02h).
pub const INVALID_QUEUE_SIZE: Status = Status::new(1, 0x02).with_dnr(true);
/// Invalid Queue Deletion (command specific 0Ch).
pub const INVALID_QUEUE_DELETION: Status = Status::new(1, 0x0C).with_dnr(true);

const SQE_BYTES: u64 = Sqe::SIZE as u64;
const CQE_BYTES: u64 = Cqe::SIZE as u64;
/// Largest admin queue (AQA.ASQS/ACQS are 12-bit, 0-based).
pub const MAX_ADMIN_ENTRIES: u16 = 4096;

/// Limits the controller advertises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    /// Highest I/O queue id. Model choice: 64.
    pub max_io_queues: u16,
    /// Largest I/O queue in entries (CAP.MQES + 1). Model choice: 1024.
    pub max_entries: u32,
}

impl Default for QueueLimits {
    fn default() -> Self {
        Self {
            max_io_queues: 64,
            max_entries: 1024,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct SubQueue {
    base: u64,
    entries: u16,
    head: u16,
    tail: u16,
    cqid: u16,
}

#[derive(Clone, Copy, Debug)]
struct CompQueue {
    base: u64,
    entries: u16,
    /// Next slot the controller writes.
    tail: u16,
    /// Next slot the host consumes (its last doorbell).
    head: u16,
    phase: bool,
    /// Commands fetched for this CQ and not yet completed.
    reserved: u16,
}

impl CompQueue {
    fn used(&self) -> u16 {
        ring_distance(self.head, self.tail, self.entries)
    }

    /// Slots free for new completions (one slot always stays empty).
    fn free(&self) -> u16 {
        self.entries - 1 - self.used()
    }
}

/// The queue engine.
#[derive(Debug)]
pub struct QueueEngine {
    limits: QueueLimits,
    sqs: Vec<Option<SubQueue>>,
    cqs: Vec<Option<CompQueue>>,
    next_rr: usize,
    enabled: bool,
    fatal: bool,
    served: u64,
    /// Fault hook: the controller fetches nothing until it is reset.
    stalled: bool,
}

impl QueueEngine {
    /// A disabled controller with `limits`.
    pub fn new(limits: QueueLimits) -> Self {
        let n = usize::from(limits.max_io_queues) + 1;
        Self {
            limits,
            sqs: vec![None; n],
            cqs: vec![None; n],
            next_rr: 0,
            enabled: false,
            fatal: false,
            served: 0,
            stalled: false,
        }
    }

    /// CC.EN = 0: a controller reset. Every queue is dropped, a fatal
    /// state and a stall are cleared; the firmware's state (open
    /// sequences, the flash) is untouched.
    pub fn disable(&mut self) {
        *self = Self::new(self.limits);
    }

    /// Fault hook: the controller hangs, fetching no command (those
    /// submitted stay unanswered) until a reset ([`Self::disable`]).
    pub fn stall(&mut self) {
        self.stalled = true;
    }

    /// Configures the admin queue pair (`entries` each) and enables the
    /// controller; every I/O queue is dropped (a controller reset).
    pub fn enable(&mut self, asq: u64, acq: u64, entries: u16) -> Result<(), SimError> {
        if !(2..=MAX_ADMIN_ENTRIES).contains(&entries) {
            return Err(SimError::InvalidQueueSize(entries));
        }
        for base in [asq, acq] {
            if base % 4096 != 0 {
                return Err(SimError::MisalignedQueue(base));
            }
        }
        *self = Self::new(self.limits);
        self.sqs[0] = Some(SubQueue {
            base: asq,
            entries,
            head: 0,
            tail: 0,
            cqid: 0,
        });
        self.cqs[0] = Some(Self::new_cq(acq, entries));
        self.enabled = true;
        Ok(())
    }

    /// Controller fatal status (CSTS.CFS).
    pub fn fatal(&self) -> bool {
        self.fatal
    }

    /// Whether CC.EN is set (and the controller is not dead).
    pub fn ready(&self) -> bool {
        self.enabled && !self.fatal
    }

    /// Queue-management commands served by the engine itself.
    pub fn served_internally(&self) -> u64 {
        self.served
    }

    /// SQ tail doorbell.
    pub fn ring_sq(&mut self, qid: u16, tail: u16) {
        match self.sqs.get_mut(usize::from(qid)) {
            Some(Some(sq)) if tail < sq.entries => sq.tail = tail,
            _ => self.fatal = true,
        }
    }

    /// CQ head doorbell; the head may only move over posted entries.
    pub fn ring_cq(&mut self, qid: u16, head: u16) {
        match self.cqs.get_mut(usize::from(qid)) {
            Some(Some(cq)) if head < cq.entries => {
                if ring_distance(cq.head, head, cq.entries) <= cq.used() {
                    cq.head = head;
                } else {
                    self.fatal = true;
                }
            }
            _ => self.fatal = true,
        }
    }

    /// The next command for the firmware, serving queue-management admin
    /// commands on the way; `WouldBlock` when nothing can be fetched.
    pub fn fetch(&mut self, dma: &mut Dma<'_>) -> nb::Result<Submission, SimError> {
        loop {
            if !self.ready() || self.stalled {
                return Err(nb::Error::WouldBlock);
            }
            let Some(qid) = self.next_ready_sq() else {
                return Err(nb::Error::WouldBlock);
            };
            let Some(sq) = self.sqs[qid].as_mut() else {
                return Err(nb::Error::WouldBlock);
            };
            let mut raw = [0u8; Sqe::SIZE];
            if dma
                .read(sq.base + u64::from(sq.head) * SQE_BYTES, &mut raw)
                .is_err()
            {
                self.fatal = true;
                return Err(nb::Error::WouldBlock);
            }
            sq.head = ((u32::from(sq.head) + 1) % u32::from(sq.entries)) as u16;
            let cqid = usize::from(sq.cqid);
            let Ok(sqe) = Sqe::from_bytes(&raw) else {
                self.fatal = true;
                return Err(nb::Error::WouldBlock);
            };
            if let Some(cq) = self.cqs[cqid].as_mut() {
                cq.reserved += 1;
            }
            let sub = Submission {
                queue: qid as u16,
                sqe,
            };
            if qid == 0 && is_queue_management(sqe.opcode()) {
                let status = self.queue_management(&sqe, dma);
                self.served += 1;
                self.complete(&sub, status, 0, dma)?;
                continue;
            }
            return Ok(sub);
        }
    }

    /// Posts the CQE of `sub` at its CQ's tail; `WouldBlock` while the CQ is
    /// full.
    pub fn complete(
        &mut self,
        sub: &Submission,
        status: Status,
        dw0: u32,
        dma: &mut Dma<'_>,
    ) -> nb::Result<(), SimError> {
        let sq = self
            .sqs
            .get(usize::from(sub.queue))
            .copied()
            .flatten()
            .ok_or(SimError::NoSuchQueue(sub.queue))?;
        let cq = self.cqs[usize::from(sq.cqid)]
            .as_mut()
            .ok_or(SimError::NoSuchQueue(sq.cqid))?;
        if cq.free() == 0 {
            return Err(nb::Error::WouldBlock);
        }
        let cqe = Cqe::new(sub.sqe.cid(), sub.queue, sq.head, status, dw0, cq.phase);
        let addr = cq.base + u64::from(cq.tail) * CQE_BYTES;
        if let Err(e) = dma.write(addr, &cqe.to_bytes()) {
            self.fatal = true;
            return Err(nb::Error::Other(e));
        }
        cq.tail = cq.tail.wrapping_add(1);
        if cq.tail == cq.entries {
            cq.tail = 0;
            cq.phase = !cq.phase;
        }
        cq.reserved = cq.reserved.saturating_sub(1);
        Ok(())
    }

    /// Round-robin over SQs with entries pending whose CQ can take one more
    /// completion.
    fn next_ready_sq(&mut self) -> Option<usize> {
        let n = self.sqs.len();
        for i in 0..n {
            let qid = (self.next_rr + i) % n;
            let Some(sq) = self.sqs[qid] else { continue };
            if sq.head == sq.tail {
                continue;
            }
            let room = self.cqs[usize::from(sq.cqid)].is_some_and(|cq| cq.free() > cq.reserved);
            if room {
                self.next_rr = qid + 1;
                return Some(qid);
            }
        }
        None
    }

    fn new_cq(base: u64, entries: u16) -> CompQueue {
        CompQueue {
            base,
            entries,
            tail: 0,
            head: 0,
            phase: true,
            reserved: 0,
        }
    }

    /// Serves one queue-management command; returns its status.
    fn queue_management(&mut self, sqe: &Sqe, dma: &Dma<'_>) -> Status {
        let qid = (sqe.cdw10 & 0xFFFF) as u16;
        let size = (sqe.cdw10 >> 16) + 1;
        let q = usize::from(qid);
        let io_qid = qid != 0 && qid <= self.limits.max_io_queues;
        match sqe.opcode() {
            OP_CREATE_CQ => {
                if !io_qid || self.cqs[q].is_some() {
                    return INVALID_QUEUE_ID;
                }
                let Some(entries) = self.io_queue_entries(size) else {
                    return INVALID_QUEUE_SIZE;
                };
                if let Err(s) = check_contiguous(sqe, u64::from(entries) * CQE_BYTES, dma) {
                    return s;
                }
                self.cqs[q] = Some(Self::new_cq(sqe.prp1, entries));
                Status::SUCCESS
            }
            OP_CREATE_SQ => {
                if !io_qid || self.sqs[q].is_some() {
                    return INVALID_QUEUE_ID;
                }
                let Some(entries) = self.io_queue_entries(size) else {
                    return INVALID_QUEUE_SIZE;
                };
                let cqid = (sqe.cdw11 >> 16) as u16;
                if cqid == 0 || self.cqs.get(usize::from(cqid)).is_none_or(Option::is_none) {
                    return CQ_INVALID;
                }
                if let Err(s) = check_contiguous(sqe, u64::from(entries) * SQE_BYTES, dma) {
                    return s;
                }
                self.sqs[q] = Some(SubQueue {
                    base: sqe.prp1,
                    entries,
                    head: 0,
                    tail: 0,
                    cqid,
                });
                Status::SUCCESS
            }
            OP_DELETE_SQ => {
                if !io_qid || self.sqs[q].take().is_none() {
                    return INVALID_QUEUE_ID;
                }
                Status::SUCCESS
            }
            OP_DELETE_CQ => {
                if !io_qid || self.cqs[q].is_none() {
                    return INVALID_QUEUE_ID;
                }
                if self.sqs.iter().flatten().any(|sq| sq.cqid == qid) {
                    return INVALID_QUEUE_DELETION;
                }
                self.cqs[q] = None;
                Status::SUCCESS
            }
            _ => Status::INVALID_OPCODE,
        }
    }

    /// Entries of an I/O queue of 1-based `size`, if allowed (2..=MQES+1).
    fn io_queue_entries(&self, size: u32) -> Option<u16> {
        if size < 2 || size > self.limits.max_entries {
            return None;
        }
        u16::try_from(size).ok()
    }
}

/// Steps from `from` forward to `to` on a ring of `entries` slots.
fn ring_distance(from: u16, to: u16, entries: u16) -> u16 {
    ((u32::from(to) + u32::from(entries) - u32::from(from)) % u32::from(entries)) as u16
}

fn is_queue_management(op: Opcode) -> bool {
    matches!(
        op,
        OP_DELETE_SQ | OP_CREATE_SQ | OP_DELETE_CQ | OP_CREATE_CQ
    )
}

/// PC must be 1 (we support physically contiguous queues only), PRP1
/// page aligned, and the whole queue mapped (model choice: a queue in
/// unmapped memory is refused as Invalid Field up front).
fn check_contiguous(sqe: &Sqe, bytes: u64, dma: &Dma<'_>) -> Result<(), Status> {
    let pc = sqe.cdw11 & 1 == 1;
    if !pc || !sqe.prp1.is_multiple_of(4096) || !dma.mem.is_mapped(sqe.prp1, bytes as usize) {
        return Err(Status::INVALID_FIELD);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
