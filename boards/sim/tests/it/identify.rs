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

/// Writes `sqe` to admin slot `slot`, runs the device and returns the CQE.
fn admin(csd: &mut SimCsd, asq: u64, acq: u64, slot: u16, sqe: proto::Sqe) -> Cqe {
    let at = u64::from(slot);
    csd.host_memory()
        .write(asq + at * 64, &sqe.to_bytes())
        .unwrap();
    csd.ring_sq(0, slot + 1);
    csd.process().unwrap();
    let mut raw = [0u8; 16];
    csd.host_memory().read(acq + at * 16, &mut raw).unwrap();
    csd.ring_cq(0, slot + 1);
    Cqe::from_bytes(&raw).unwrap()
}

#[test]
fn bad_data_pointers_get_a_status_and_the_device_keeps_serving() {
    let mut csd = SimCsd::new(SimConfig::new(4096)).unwrap();
    let mem = csd.host_memory();
    let asq = mem.alloc_contiguous(16 * 64);
    let acq = mem.alloc_contiguous(16 * 16);
    let list = mem.alloc(4096)[0];
    let good = mem.alloc(4096)[0];
    csd.enable(asq, acq, 16).unwrap();

    // PRP1 into unmapped host memory.
    let mut sqe = proto::identify_controller();
    sqe.prp1 = 0xdead_0000;
    let cqe = admin(&mut csd, asq, acq, 0, sqe);
    assert!(
        cqe.status().same_code(&Status::DATA_TRANSFER_ERROR),
        "{}",
        cqe.status()
    );

    // PRP1 not dword aligned.
    let mut sqe = proto::identify_controller();
    sqe.prp1 = good + 2;
    let cqe = admin(&mut csd, asq, acq, 1, sqe);
    assert!(
        cqe.status().same_code(&Status::PRP_OFFSET_INVALID),
        "{}",
        cqe.status()
    );

    // A 512-byte log page starting 3.9 KiB into a page spans two pages: PRP2
    // must be page aligned.
    let mut sqe = proto::get_log_page(proto::log::LID_STATS, 512);
    sqe.prp1 = good + 4000;
    sqe.prp2 = list + 8;
    let cqe = admin(&mut csd, asq, acq, 2, sqe);
    assert!(
        cqe.status().same_code(&Status::PRP_OFFSET_INVALID),
        "{}",
        cqe.status()
    );

    // Still serving.
    let mut sqe = proto::identify_controller();
    sqe.prp1 = good;
    let cqe = admin(&mut csd, asq, acq, 3, sqe);
    assert_eq!(cqe.status(), Status::SUCCESS);
    assert!(!csd.fatal());
    assert_eq!(csd.device().stats().errors, 3);
}
