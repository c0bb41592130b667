//! The host's view of the simulated drive: queue set-up through admin
//! commands, doorbell misuse, counters. None of these commands reach the
//! firmware core: the queue engine serves them.

use board_sim::queues::{OP_CREATE_CQ, OP_CREATE_SQ, OP_DELETE_CQ, OP_DELETE_SQ};
use board_sim::{SimConfig, SimCsd};
use proto::{Cqe, Opcode, Sqe};

struct Host {
    csd: SimCsd,
    asq: u64,
    acq: u64,
    tail: u16,
    head: u16,
}

const ENTRIES: u16 = 8;

impl Host {
    fn new() -> Self {
        let mut csd = SimCsd::new(SimConfig::new(4096)).unwrap();
        let asq = csd
            .host_memory()
            .alloc_contiguous(usize::from(ENTRIES) * 64);
        let acq = csd
            .host_memory()
            .alloc_contiguous(usize::from(ENTRIES) * 16);
        csd.enable(asq, acq, ENTRIES).unwrap();
        Self {
            csd,
            asq,
            acq,
            tail: 0,
            head: 0,
        }
    }

    fn admin(&mut self, op: Opcode, cdw10: u32, cdw11: u32, prp1: u64) -> Cqe {
        let mut sqe = Sqe::new(op);
        sqe.set_cid(self.tail);
        sqe.cdw10 = cdw10;
        sqe.cdw11 = cdw11;
        sqe.prp1 = prp1;
        let at = self.asq + u64::from(self.tail) * 64;
        self.csd.host_memory().write(at, &sqe.to_bytes()).unwrap();
        self.tail = (self.tail + 1) % ENTRIES;
        self.csd.ring_sq(0, self.tail);
        assert_eq!(self.csd.process().unwrap(), 1);
        let mut raw = [0u8; 16];
        let at = self.acq + u64::from(self.head) * 16;
        self.csd.host_memory().read(at, &mut raw).unwrap();
        self.head = (self.head + 1) % ENTRIES;
        self.csd.ring_cq(0, self.head);
        Cqe::from_bytes(&raw).unwrap()
    }
}

#[test]
fn io_queue_pair_lifecycle() {
    let mut h = Host::new();
    let cq = h.csd.host_memory().alloc_contiguous(64 * 16);
    let sq = h.csd.host_memory().alloc_contiguous(64 * 64);
    let t0 = h.csd.now_ns();
    assert!(
        h.admin(OP_CREATE_CQ, (63 << 16) | 1, 1, cq)
            .status()
            .is_success()
    );
    assert!(
        h.admin(OP_CREATE_SQ, (63 << 16) | 1, (1 << 16) | 1, sq)
            .status()
            .is_success()
    );
    assert!(h.admin(OP_DELETE_SQ, 1, 0, 0).status().is_success());
    assert!(h.admin(OP_DELETE_CQ, 1, 0, 0).status().is_success());
    assert!(h.csd.now_ns() > t0);
    let p = h.csd.pcie_counters();
    assert_eq!((p.bytes_in, p.bytes_out), (4 * 64, 4 * 16));
    assert!(!h.csd.fatal());
}

#[test]
fn bad_doorbell_is_fatal_not_a_panic() {
    let mut h = Host::new();
    h.csd.ring_sq(3, 0);
    assert!(h.csd.fatal());
    assert_eq!(h.csd.process().unwrap(), 0);
}

#[test]
fn fresh_drive_counters() {
    let csd = SimCsd::new(SimConfig::new(16384)).unwrap();
    let n = csd.nand_counters();
    assert_eq!(n.reads_per_channel.len(), 8);
    // Booting through the journal reads the first page of each of the
    // 8 192 blocks, 32 dies at a time (256 rounds of tR and a 64-byte
    // transfer), finds no journal and writes one page into a block it
    // erases; nothing else (the other blocks are erased when first used).
    assert!(
        csd.now_ns() > 256 * 75_000 && csd.now_ns() < 30_000_000,
        "{}",
        csd.now_ns()
    );
    assert_eq!(csd.breakdown().total, csd.now_ns());
    let mut c = SimConfig::new(16384);
    c.journal = false;
    let plain = SimCsd::new(c).unwrap();
    assert_eq!(plain.now_ns(), 0);
}
