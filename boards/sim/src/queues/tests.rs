//! Queue engine tests against a hand-built admin queue in host memory.

use super::*;
use crate::clock::VirtualClock;
use crate::host_memory::HostMemory;
use crate::pcie::{PcieLink, PcieModel};

struct Rig {
    mem: HostMemory,
    link: PcieLink,
    clock: VirtualClock,
    q: QueueEngine,
    asq: u64,
    acq: u64,
    entries: u16,
    sq_tail: u16,
    cq_head: u16,
}

impl Rig {
    fn new(entries: u16) -> Self {
        let mut mem = HostMemory::new();
        let asq = mem.alloc_contiguous(usize::from(entries) * 64);
        let acq = mem.alloc_contiguous(usize::from(entries) * 16);
        let mut q = QueueEngine::new(QueueLimits::default());
        q.enable(asq, acq, entries).unwrap();
        Self {
            mem,
            link: PcieLink::new(PcieModel::default()),
            clock: VirtualClock::new(),
            q,
            asq,
            acq,
            entries,
            sq_tail: 0,
            cq_head: 0,
        }
    }

    fn fetch(&mut self) -> nb::Result<Submission, SimError> {
        let Rig {
            mem,
            link,
            clock,
            q,
            ..
        } = self;
        q.fetch(&mut Dma { mem, link, clock })
    }

    fn complete(&mut self, sub: &Submission, dw0: u32) -> nb::Result<(), SimError> {
        let Rig {
            mem,
            link,
            clock,
            q,
            ..
        } = self;
        q.complete(sub, Status::SUCCESS, dw0, &mut Dma { mem, link, clock })
    }

    fn submit(&mut self, mut sqe: Sqe, cid: u16) {
        sqe.set_cid(cid);
        let addr = self.asq + u64::from(self.sq_tail) * 64;
        self.mem.write(addr, &sqe.to_bytes()).unwrap();
        self.sq_tail = (self.sq_tail + 1) % self.entries;
        self.q.ring_sq(0, self.sq_tail);
    }

    /// Fetches until idle; returns commands handed to the firmware.
    fn run(&mut self) -> Vec<Submission> {
        let mut out = Vec::new();
        loop {
            match self.fetch() {
                Ok(s) => out.push(s),
                Err(nb::Error::WouldBlock) => return out,
                Err(nb::Error::Other(e)) => panic!("{e}"),
            }
        }
    }

    fn cqe(&mut self, slot: u16) -> Cqe {
        let mut b = [0u8; 16];
        self.mem
            .read(self.acq + u64::from(slot) * 16, &mut b)
            .unwrap();
        Cqe::from_bytes(&b).unwrap()
    }

    /// Consumes the next CQE (phase checked by the caller).
    fn pop(&mut self) -> Cqe {
        let c = self.cqe(self.cq_head);
        self.cq_head = (self.cq_head + 1) % self.entries;
        self.q.ring_cq(0, self.cq_head);
        c
    }
}

fn create_cq(qid: u16, entries: u32, base: u64, pc: bool) -> Sqe {
    let mut s = Sqe::new(OP_CREATE_CQ);
    s.prp1 = base;
    s.cdw10 = ((entries - 1) << 16) | u32::from(qid);
    s.cdw11 = u32::from(pc);
    s
}

fn create_sq(qid: u16, entries: u32, base: u64, cqid: u16) -> Sqe {
    let mut s = Sqe::new(OP_CREATE_SQ);
    s.prp1 = base;
    s.cdw10 = ((entries - 1) << 16) | u32::from(qid);
    s.cdw11 = (u32::from(cqid) << 16) | 1;
    s
}

fn delete(op: Opcode, qid: u16) -> Sqe {
    let mut s = Sqe::new(op);
    s.cdw10 = u32::from(qid);
    s
}

#[test]
fn creates_io_queues_and_fetches_from_them() {
    let mut r = Rig::new(8);
    let cq = r.mem.alloc_contiguous(16 * 16);
    let sq = r.mem.alloc_contiguous(16 * 64);
    r.submit(create_cq(1, 16, cq, true), 1);
    r.submit(create_sq(1, 16, sq, 1), 2);
    assert!(
        r.run().is_empty(),
        "queue management never reaches the firmware"
    );
    assert_eq!(r.q.served_internally(), 2);
    for cid in [1, 2] {
        let c = r.pop();
        assert_eq!(
            (c.cid, c.sq_id, c.status(), c.phase()),
            (cid, 0, Status::SUCCESS, true)
        );
    }
    // A command on the new I/O SQ reaches the firmware and completes on CQ 1.
    let mut io = Sqe::new(Opcode::DECODE_SUBMIT);
    io.set_cid(77);
    r.mem.write(sq, &io.to_bytes()).unwrap();
    r.q.ring_sq(1, 1);
    let subs = r.run();
    assert_eq!(subs.len(), 1);
    assert_eq!((subs[0].queue, subs[0].sqe.cid()), (1, 77));
    r.complete(&subs[0], 0xABCD).unwrap();
    let mut b = [0u8; 16];
    r.mem.read(cq, &mut b).unwrap();
    let c = Cqe::from_bytes(&b).unwrap();
    assert_eq!(
        (c.cid, c.sq_id, c.sq_head, c.dw0, c.phase()),
        (77, 1, 1, 0xABCD, true)
    );
    assert!(!r.q.fatal());
}

#[test]
fn bad_queue_commands_get_the_right_status() {
    let mut r = Rig::new(16);
    let base = r.mem.alloc_contiguous(2 * 4096);
    let cases = [
        (create_cq(0, 4, base, true), INVALID_QUEUE_ID),
        (create_cq(65, 4, base, true), INVALID_QUEUE_ID),
        (create_cq(1, 1, base, true), INVALID_QUEUE_SIZE),
        (create_cq(1, 2048, base, true), INVALID_QUEUE_SIZE),
        (create_cq(1, 4, base, false), Status::INVALID_FIELD),
        (create_cq(1, 4, base + 8, true), Status::INVALID_FIELD),
        (create_cq(1, 4, 0xdead_0000, true), Status::INVALID_FIELD),
        (create_sq(1, 4, base, 1), CQ_INVALID),
        (create_sq(1, 4, base, 0), CQ_INVALID),
        (create_cq(1, 4, base, true), Status::SUCCESS),
        (create_cq(1, 4, base, true), INVALID_QUEUE_ID),
        (create_sq(1, 1, base, 1), INVALID_QUEUE_SIZE),
        (create_sq(1, 4, base + 4096, 1), Status::SUCCESS),
        (delete(OP_DELETE_CQ, 1), INVALID_QUEUE_DELETION),
        (delete(OP_DELETE_SQ, 0), INVALID_QUEUE_ID),
        (delete(OP_DELETE_SQ, 2), INVALID_QUEUE_ID),
        (delete(OP_DELETE_SQ, 1), Status::SUCCESS),
        (delete(OP_DELETE_CQ, 1), Status::SUCCESS),
        (delete(OP_DELETE_CQ, 1), INVALID_QUEUE_ID),
    ];
    for (i, (sqe, want)) in cases.iter().enumerate() {
        r.submit(*sqe, i as u16);
        assert!(r.run().is_empty());
        let c = r.pop();
        assert_eq!(c.cid, i as u16);
        assert_eq!(c.status(), *want, "case {i}");
    }
    assert!(!r.q.fatal());
}

#[test]
fn phase_tag_flips_on_every_lap() {
    let mut r = Rig::new(4);
    // Create/delete CQ 1 over and over: 3 laps of a 4-entry CQ.
    let base = r.mem.alloc_contiguous(4096);
    for i in 0..12u16 {
        let sqe = if i % 2 == 0 {
            create_cq(1, 2, base, true)
        } else {
            delete(OP_DELETE_CQ, 1)
        };
        r.submit(sqe, i);
        r.run();
        let slot = r.cq_head;
        let c = r.pop();
        assert_eq!(c.cid, i);
        assert!(c.status().is_success());
        assert_eq!(c.phase(), (i / 4) % 2 == 0, "lap {} slot {slot}", i / 4);
        assert_eq!(c.sq_head, (i + 1) % 4);
    }
}

#[test]
fn full_cq_holds_commands_in_the_sq() {
    let mut r = Rig::new(4);
    let base = r.mem.alloc_contiguous(4096);
    // Three completions fill a 4-entry CQ (one slot stays empty).
    r.submit(create_cq(1, 2, base, true), 0);
    r.submit(delete(OP_DELETE_CQ, 1), 1);
    r.submit(create_cq(1, 2, base, true), 2);
    r.run();
    assert_eq!(r.q.served_internally(), 3);
    r.submit(delete(OP_DELETE_CQ, 1), 3);
    r.run();
    assert_eq!(r.q.served_internally(), 3, "no fetch while the CQ is full");
    for cid in 0..3 {
        assert_eq!(r.pop().cid, cid);
    }
    r.run();
    assert_eq!(r.q.served_internally(), 4);
    let c = r.cqe(3);
    assert_eq!((c.cid, c.phase()), (3, true));
    assert!(!r.q.fatal());
}

#[test]
fn complete_would_block_on_full_cq() {
    let mut r = Rig::new(4);
    let cq = r.mem.alloc_contiguous(4096);
    let sq = r.mem.alloc_contiguous(4096);
    r.submit(create_cq(1, 2, cq, true), 0);
    r.submit(create_sq(1, 4, sq, 1), 1);
    r.run();
    for slot in 0..2u16 {
        let mut io = Sqe::new(Opcode::KV_APPEND);
        io.set_cid(10 + slot);
        r.mem
            .write(sq + u64::from(slot) * 64, &io.to_bytes())
            .unwrap();
    }
    r.q.ring_sq(1, 2);
    // A 2-entry CQ holds one completion: only one command is fetched.
    let subs = r.run();
    assert_eq!(subs.len(), 1);
    r.complete(&subs[0], 0).unwrap();
    assert!(matches!(
        r.complete(&subs[0], 0),
        Err(nb::Error::WouldBlock)
    ));
    assert!(r.run().is_empty(), "still full");
    r.q.ring_cq(1, 1);
    let subs = r.run();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].sqe.cid(), 11);
}

#[test]
fn bad_doorbells_set_fatal_without_panicking() {
    let mut r = Rig::new(4);
    r.q.ring_sq(0, 4);
    assert!(r.q.fatal());
    assert!(r.run().is_empty(), "a dead controller fetches nothing");

    for f in [
        |q: &mut QueueEngine| q.ring_sq(9, 0),
        |q: &mut QueueEngine| q.ring_sq(u16::MAX, 0),
        |q: &mut QueueEngine| q.ring_cq(3, 0),
        |q: &mut QueueEngine| q.ring_cq(0, 7),
        // Consuming CQ entries never posted.
        |q: &mut QueueEngine| q.ring_cq(0, 1),
    ] {
        let mut r = Rig::new(4);
        f(&mut r.q);
        assert!(r.q.fatal());
    }
    // Re-enabling clears it.
    let (asq, acq) = (r.asq, r.acq);
    r.q.enable(asq, acq, 4).unwrap();
    assert!(!r.q.fatal());
}

#[test]
fn enable_checks_its_arguments() {
    let mut q = QueueEngine::new(QueueLimits::default());
    assert!(matches!(
        q.enable(0x1000, 0x2000, 1),
        Err(SimError::InvalidQueueSize(1))
    ));
    assert!(matches!(
        q.enable(0x1000, 0x2000, 4097),
        Err(SimError::InvalidQueueSize(_))
    ));
    assert!(matches!(
        q.enable(0x1008, 0x2000, 4),
        Err(SimError::MisalignedQueue(0x1008))
    ));
    assert!(!q.ready());
}

#[test]
fn sq_in_unmapped_memory_is_fatal() {
    let mut r = Rig::new(4);
    r.mem.free_range(r.asq, 4 * 64);
    r.q.ring_sq(0, 1);
    assert!(r.run().is_empty());
    assert!(r.q.fatal());
}
