use super::*;
use crate::clock::CommandClock;
use crate::host::DmaError;
use crate::testmem::{EFAULT, SparseMemory};
use alloc::vec::Vec;
use proto::prp::{self, PrpPair};
use proto::{
    DecodeFetch, DecodeFlags, DecodeReport, DecodeSubmit, IdentifyController, KvAppend, Opcode,
    SeqOpen, SeqShape,
};

fn instance(page: u32) -> Instance<SparseMemory, CommandClock> {
    let cfg = Config::new(page).unwrap();
    Instance::new(SparseMemory::default(), CommandClock::default(), &cfg).unwrap()
}

fn with(mut sqe: Sqe, cid: u16, prp: PrpPair) -> [u8; 64] {
    sqe.set_cid(cid);
    sqe.prp1 = prp.prp1;
    sqe.prp2 = prp.prp2;
    sqe.to_bytes()
}

/// Maps `pages` and `lists`, describes `len` bytes at `offset` into the
/// first page and stores `data` (if any) there.
fn place(
    mem: &mut SparseMemory,
    len: usize,
    offset: usize,
    pages: &[u64],
    lists: &[u64],
    data: Option<&[u8]>,
) -> PrpPair {
    for &a in pages.iter().chain(lists) {
        mem.map(a);
    }
    let pair = prp::build::<proto::ProtoError>(len, offset, pages, lists, |addr, entries| {
        let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_le_bytes()).collect();
        mem.write(addr, &bytes).unwrap();
        Ok(())
    })
    .unwrap();
    if let Some(data) = data {
        let mut at = offset;
        for (i, &p) in pages.iter().enumerate() {
            let start = i * 4096 + at - offset;
            let n = (4096 - at).min(len - start);
            mem.write(p + at as u64, &data[start..start + n]).unwrap();
            at = 0;
        }
    }
    pair
}

#[test]
fn identify_reports_the_configured_device() {
    let mut d = instance(16384);
    let mem = d.board_mut().host.dma_mut();
    let prp = place(mem, 4096, 0, &[0x1_0000], &[], None);
    let cqe = d.submit(0, &with(proto::identify_controller(), 5, prp));
    assert_eq!(cqe.status(), Status::SUCCESS);
    assert_eq!(
        (cqe.cid, cqe.sq_id, cqe.sq_head, cqe.phase()),
        (5, 0, 0, false)
    );
    let page = d.board_mut().host.dma_mut().bytes(0x1_0000, 4096).to_vec();
    let id = IdentifyController::from_bytes(&page).unwrap();
    assert_eq!(id.serial(), "EMU-0001");
    let caps = id.instcsd().unwrap();
    assert_eq!((caps.page_size, caps.channels, caps.ways), (16384, 8, 4));
    assert_eq!(caps.engine_clock_khz, 285_000);
}

#[test]
fn a_refused_dma_is_a_data_transfer_error() {
    let mut d = instance(4096);
    let prp = PrpPair {
        prp1: 0xdead_0000,
        prp2: 0,
    };
    let cqe = d.submit(0, &with(proto::identify_controller(), 9, prp));
    assert_eq!(cqe.status(), Status::DATA_TRANSFER_ERROR);
    assert_eq!(cqe.cid, 9);
    assert_eq!(
        d.board_mut().host.last_dma_error(),
        Some(DmaError {
            code: EFAULT,
            addr: 0xdead_0000
        })
    );
}

#[test]
fn queue_management_is_left_to_the_emulator() {
    let mut d = instance(4096);
    let none = PrpPair { prp1: 0, prp2: 0 };
    let cqe = d.submit(0, &with(Sqe::new(Opcode(0x01)), 1, none));
    assert_eq!(cqe.status(), Status::INVALID_OPCODE);
}

#[test]
fn a_decode_round_trip_walks_prp_lists_and_never_crosses_a_page() {
    let mut d = instance(4096);
    let shape = SeqShape {
        layers: 1,
        kv_heads: 2,
        group: 2,
        head_dim: 64,
        dim_group: 4,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let none = PrpPair { prp1: 0, prp2: 0 };
    let open = SeqOpen::new(1, shape).to_sqe();
    assert_eq!(d.submit(1, &with(open, 1, none)).status(), Status::SUCCESS);

    // 16 tokens of K and V: 8 KiB at offset 512 spans three pages, so PRP2
    // is a list.
    let append = KvAppend::new(1, 0, 0, 16, &shape).unwrap();
    let kv: Vec<u8> = (0..4096u16)
        .flat_map(|i| (0x3000 + i % 61).to_le_bytes())
        .collect();
    let mem = d.board_mut().host.dma_mut();
    let pages = [0x10_0000, 0x30_0000, 0x50_0000];
    let prp = place(mem, kv.len(), 512, &pages, &[0x70_0000], Some(&kv));
    assert_ne!(prp.prp2, 0x30_0000, "a PRP list");
    let cqe = d.submit(1, &with(append.to_sqe(), 2, prp));
    assert_eq!((cqe.status(), cqe.dw0, cqe.sq_id), (Status::SUCCESS, 16, 1));

    let submit = DecodeSubmit::dense(1, 0, 15, DecodeFlags::NONE, &shape);
    let q: Vec<u8> = (0..256u16)
        .flat_map(|i| (0x2c00 + i).to_le_bytes())
        .collect();
    let mem = d.board_mut().host.dma_mut();
    let prp = place(mem, q.len(), 0, &[0x90_0000], &[], Some(&q));
    let cqe = d.submit(1, &with(submit.to_sqe(), 3, prp));
    assert_eq!((cqe.status(), cqe.dw0), (Status::SUCCESS, 16));

    let fetch = DecodeFetch::new(1, 0, &shape);
    let len = DecodeFetch::payload_bytes(&shape) as usize;
    let mem = d.board_mut().host.dma_mut();
    let prp = place(mem, len, 3584, &[0xa0_0000, 0xb0_0000], &[], None);
    let cqe = d.submit(1, &with(fetch.to_sqe(), 4, prp));
    assert_eq!(cqe.status(), Status::SUCCESS);
    // The report is the last 32 bytes: 1024 + 32 = 1056 bytes from 0xa00e00,
    // the report starts 1024 - 512 = 512 bytes into the second page.
    let mem = d.board_mut().host.dma_mut();
    let report = DecodeReport::from_bytes(mem.bytes(0xb0_0000 + 512, 32)).unwrap();
    assert_eq!(report.tokens_attended, 16);
    assert_eq!(mem.crossings, 0);

    let stats = d.device().stats();
    assert_eq!((stats.commands, stats.errors), (4, 0));
    assert_eq!((stats.tokens_appended, stats.decodes), (16, 1));
    assert_eq!(stats.virtual_ns_total, 4, "one tick per command");
}
