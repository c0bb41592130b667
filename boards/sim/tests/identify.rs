//! End to end: Identify Controller through a hand-built admin queue in host
//! memory, served by the real firmware core on the simulated board.

use board_sim::{SimConfig, SimCsd};
use proto::{CapabilityBlock, Cqe, IdentifyController, Status};

#[test]
fn identify_controller_reports_the_instcsd_capability_block() {
    let mut csd = SimCsd::new(SimConfig::new(16384)).unwrap();
    let mem = csd.host_memory();
    let asq = mem.alloc_contiguous(16 * 64);
    let acq = mem.alloc_contiguous(16 * 16);
    let buf = mem.alloc(4096)[0];
    csd.enable(asq, acq, 16).unwrap();

    let mut sqe = proto::identify_controller();
    sqe.set_cid(0x42);
    sqe.prp1 = buf;
    csd.host_memory().write(asq, &sqe.to_bytes()).unwrap();
    csd.ring_sq(0, 1);
    assert_eq!(csd.process().unwrap(), 1);

    let mut raw = [0u8; 16];
    csd.host_memory().read(acq, &mut raw).unwrap();
    let cqe = Cqe::from_bytes(&raw).unwrap();
    assert_eq!(cqe.status(), Status::SUCCESS);
    assert!(cqe.phase());
    assert_eq!((cqe.cid, cqe.sq_id, cqe.sq_head), (0x42, 0, 1));
    csd.ring_cq(0, 1);

    let mut page = vec![0u8; 4096];
    csd.host_memory().read(buf, &mut page).unwrap();
    let off = CapabilityBlock::OFFSET;
    assert_eq!(off, 3072);
    assert_eq!(&page[off..off + 4], b"ICSD");
    let id = IdentifyController::from_bytes(&page).unwrap();
    assert_eq!(id.vid, 0x1d1d);
    assert_eq!(id.serial(), "SIM-0001");
    assert_eq!(id.model(), "InstCSD simulated board");
    let cap = id.instcsd().unwrap();
    assert_eq!(cap.magic, CapabilityBlock::MAGIC);
    assert_eq!((cap.channels, cap.ways, cap.page_size), (8, 4, 16384));
    assert_eq!((cap.engine_clock_khz, cap.engine_lanes), (285_000, 64));

    assert!(!csd.fatal());
    assert!(
        csd.now_ns() > 0,
        "the fetch, data and completion DMAs take virtual time"
    );
    let pcie = csd.pcie_counters();
    assert!(pcie.bytes_in >= 64);
    assert!(pcie.bytes_out >= 4096 + 16);
    assert!(csd.breakdown().dma_busy > 0);
}
