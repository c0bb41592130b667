//! [`NvmeHost`] against a model of the controller: the command FIFO and
//! SRAM, the completion FIFO, the direct DMA engine over a fake host
//! memory, CC.EN.

use std::vec;
use std::vec::Vec;

use firmware::hal::HostInterface;
use proto::{Opcode, Sqe, Status};

use super::regs::{COSMOS_PLUS, DAISYPLUS, DmaCounts, HostLayout, off};
use super::*;
use crate::fake::{NvmeModel, Recorder, SharedMem};

/// Host memory the fake DMA engine reaches: `[HOST_BASE, HOST_BASE + 1 MiB)`.
const HOST_BASE: u64 = 0x1_0000_0000 - 0x10_0000;
const BOUNCE_BUS: u64 = 0x4000_0000;

struct Rig {
    host: NvmeHost<Recorder<NvmeModel>, SharedMem>,
}

fn rig(layout: &'static HostLayout) -> Rig {
    let bounce = SharedMem::new(BOUNCE_BUS, 4096);
    let mut model = NvmeModel::new(layout, HOST_BASE, 0x10_0000, bounce.clone());
    for (i, b) in model.host.iter_mut().enumerate() {
        *b = (i * 7) as u8;
    }
    // Counters start somewhere other than zero: the driver must adopt
    // them, not assume them.
    model.done = DmaCounts::decode(0x0403_FF05);
    let host = NvmeHost::new(Recorder::new(model), layout, bounce)
        .expect("host")
        .with_dma_spins(100);
    Rig { host }
}

impl Rig {
    fn model(&mut self) -> &mut NvmeModel {
        &mut self.host.regs_mut().model
    }

    fn enable(&mut self) {
        self.model().enable();
        assert_eq!(self.host.controller(), ControllerState::Ready);
    }

    fn submit(&mut self, queue: u16, slot: u16, sqe: &Sqe) {
        self.model().submit(queue, slot, sqe);
    }
}

fn io_cmd(cid: u16) -> Sqe {
    let mut s = Sqe::new(Opcode::DECODE_SUBMIT);
    s.set_cid(cid);
    s
}

#[test]
fn enable_sets_ready_and_validates_the_admin_queue() {
    let mut r = rig(&COSMOS_PLUS);
    assert_eq!(r.host.controller(), ControllerState::Disabled);
    assert!(matches!(r.host.fetch(), Err(nb::Error::WouldBlock)));
    r.enable();
    assert_ne!(r.model().status & regs::status::CSTS_RDY, 0, "CSTS.RDY");
    assert_eq!(r.model().other[&off::ADMIN_QUEUE], 0b111);
    // The host shuts down: SHST goes to complete.
    r.model().status |= 1 << regs::status::CC_SHN_SHIFT;
    assert_eq!(r.host.controller(), ControllerState::ShutDown);
    assert_eq!((r.model().status >> regs::status::CSTS_SHST_SHIFT) & 3, 2);
    // Disable: ready drops, the admin pair is invalidated.
    r.model().status = 0;
    assert_eq!(r.host.controller(), ControllerState::Disabled);
    assert_eq!(r.model().status & regs::status::CSTS_RDY, 0);
    assert_eq!(r.model().other[&off::ADMIN_QUEUE], 0);
}

#[test]
fn io_commands_go_to_the_core_and_complete_by_their_slot() {
    for layout in [&COSMOS_PLUS, &DAISYPLUS] {
        let mut r = rig(layout);
        r.enable();
        let slot = if layout.slot_bits == 10 { 900 } else { 100 };
        r.submit(1, slot, &io_cmd(0x1234));
        let sub = r.host.fetch().expect("a command");
        assert_eq!((sub.queue, sub.sqe.cid()), (1, 0x1234));
        assert_eq!(sub.sqe.opcode(), Opcode::DECODE_SUBMIT);
        assert!(matches!(r.host.fetch(), Err(nb::Error::WouldBlock)));
        r.host
            .complete(&sub, Status::RESULT_NOT_READY, 42)
            .expect("complete");
        let (s, kind, field, dw0) = r.model().completions[0];
        assert_eq!((s, kind, dw0), (slot, 1, 42), "{}", layout.name);
        assert_eq!(Status::from_field(field >> 1), Status::RESULT_NOT_READY);
        // A second completion of the same command is refused.
        assert_eq!(
            r.host.complete(&sub, Status::SUCCESS, 0),
            Err(nb::Error::Other(HostError::UnknownCommand {
                queue: 1,
                cid: 0x1234
            }))
        );
    }
}

#[test]
fn queue_management_is_served_on_the_board() {
    let mut r = rig(&COSMOS_PLUS);
    r.enable();
    let mut cq = Sqe::new(admin::CREATE_CQ);
    cq.cdw10 = 63 << 16 | 2;
    cq.cdw11 = 1 << 16 | 0b11;
    cq.prp1 = 0x8_0000_0000;
    let mut aer = Sqe::new(admin::ASYNC_EVENT);
    aer.set_cid(9);
    let mut ident = Sqe::new(Opcode::IDENTIFY);
    ident.set_cid(3);
    r.submit(0, 5, &cq);
    r.submit(0, 6, &aer);
    r.submit(0, 7, &ident);
    let sub = r.host.fetch().expect("identify reaches the core");
    assert_eq!(sub.sqe.opcode(), Opcode::IDENTIFY);
    // CQ 2 → register pair 1, programmed before its completion.
    let q = r.model().other.clone();
    assert_eq!(q[&(off::IO_CQ + 8)], 0);
    assert_eq!(
        q[&(off::IO_CQ + 12)],
        8 | 1 << 15 | 1 << 16 | 1 << 19 | 63 << 24
    );
    let c = r.model().completions.clone();
    assert_eq!(c[0].0, 5);
    assert_eq!(c[0].1, 1, "completed");
    assert!(Status::from_field(c[0].2 >> 1).is_success());
    assert_eq!((c[1].0, c[1].1), (6, 2), "the AER's slot released, no CQE");
}

#[test]
fn reads_and_writes_move_exactly_the_callers_bytes() {
    let mut r = rig(&COSMOS_PLUS);
    r.enable();
    // 5000 bytes from an unaligned host address that crosses a page.
    let addr = HOST_BASE + 0x0FF4;
    let mut buf = vec![0u8; 5000];
    r.host.dma_read(addr, &mut buf).expect("read");
    assert_eq!(buf, r.model().host_at(addr, 5000));
    assert!(
        r.model()
            .ran
            .iter()
            .all(|&(tx, a, n)| !tx && a % 16 == 0 && n <= 4096)
    );

    // Write 20 bytes at an unaligned address: the bytes around them in the
    // 16-byte granules come back unchanged.
    let before = r.model().host.clone();
    let data: Vec<u8> = (0..20).map(|i| 0xA0 + i).collect();
    let at = HOST_BASE + 0x2003;
    r.host.dma_write(at, &data).expect("write");
    let after = r.model().host.clone();
    let w = (at - HOST_BASE) as usize;
    assert_eq!(&after[w..w + 20], &data[..]);
    assert_eq!(after[..w], before[..w]);
    assert_eq!(after[w + 20..], before[w + 20..]);
    // Read-back then write for the partial window.
    let tail: Vec<_> = r.model().ran.iter().rev().take(2).copied().collect();
    assert_eq!(
        tail,
        [
            (true, HOST_BASE + 0x2000, 32),
            (false, HOST_BASE + 0x2000, 32)
        ]
    );
}

#[test]
fn aligned_writes_need_no_read_back() {
    let mut r = rig(&DAISYPLUS);
    r.enable();
    r.model().ran.clear();
    r.host
        .dma_write(HOST_BASE + 0x3004, &[1, 2, 3, 4, 5, 6, 7, 8])
        .expect("write");
    assert_eq!(r.model().ran, [(true, HOST_BASE + 0x3004, 8)]);
}

#[test]
fn dma_failures_are_errors_not_hangs() {
    let mut r = rig(&COSMOS_PLUS);
    let mut buf = [0u8; 8];
    assert_eq!(
        r.host.dma_read(HOST_BASE, &mut buf),
        Err(HostError::NotEnabled)
    );
    r.enable();
    assert_eq!(
        r.host.dma_read(1 << 40, &mut buf),
        Err(HostError::AddressTooWide(1 << 40))
    );
    r.model().stuck = true;
    assert_eq!(
        r.host.dma_read(HOST_BASE, &mut buf),
        Err(HostError::DmaTimeout {
            direction: Direction::FromHost,
            host: HOST_BASE
        })
    );
}

#[test]
fn the_bounce_buffer_must_hold_a_dma_below_4_gib() {
    let small = SharedMem::new(BOUNCE_BUS, 1024);
    let high = SharedMem::new(0xFFFF_F800, 4096);
    for mem in [small, high] {
        let r = NvmeHost::new(
            Recorder::new(crate::fake::Plain::default()),
            &COSMOS_PLUS,
            mem,
        );
        assert!(matches!(r, Err(HostError::BadBounceBuffer { .. })));
    }
}
