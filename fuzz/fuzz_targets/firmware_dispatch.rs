//! The firmware on the simulated board under arbitrary command streams:
//! admin and I/O commands with arbitrary opcodes and dwords, data of
//! arbitrary length and content, and raw PRPs pointing anywhere. Every
//! command must complete with a status (never a panic, never a lost
//! completion, never a controller fatal state).
//!
//! Input: a sequence of commands, each
//! `flags u8, opcode u8, len u16, nsid u32, cdw10..cdw15 6×u32` (32 bytes),
//! then with `flags & 2` two raw PRP u64s (no data), else `len` bytes of
//! data for a host-to-device opcode (`len` bytes read back otherwise).
//! `flags & 1`: admin queue; `flags & 4`: reap everything in flight first.
#![no_main]

use board_sim::{SimConfig, SimCsd};
use host_driver::transport::{IoData, IoRequest, SimTransport, Transport};
use libfuzzer_sys::fuzz_target;
use proto::{Opcode, Sqe};

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    for (i, x) in a.iter_mut().enumerate() {
        *x = b.get(at + i).copied().unwrap_or(0);
    }
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

fn board() -> SimTransport {
    // A small flash array (2 channels × 2 ways × 16 blocks × 16 pages):
    // capacity and bad-block paths are reached, and set-up stays cheap.
    let mut cfg = SimConfig::new(4096);
    cfg.geometry = ftl::Geometry {
        channels: 2,
        ways: 2,
        blocks_per_die: 16,
        pages_per_block: 16,
        page_size: 4096,
    };
    cfg.max_sequences = 16;
    cfg.max_streams = 256;
    cfg.dram_budget = 4 << 20;
    let dev = SimCsd::new(cfg).expect("board");
    SimTransport::with_device(dev, 16).expect("queues")
}

fn reap_all(t: &mut SimTransport) {
    while t.in_flight() > 0 {
        let r = t.reap();
        assert!(r.is_ok(), "a command got no completion: {r:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut t = board();
    let mut at = 0;
    let mut commands = 0;
    while at + 32 <= data.len() && commands < 64 {
        commands += 1;
        let flags = data[at];
        let mut sqe = Sqe::new(Opcode(data[at + 1]));
        let len = usize::from(u16::from_le_bytes([data[at + 2], data[at + 3]]));
        sqe.nsid = u32_at(data, at + 4);
        sqe.cdw10 = u32_at(data, at + 8);
        sqe.cdw11 = u32_at(data, at + 12);
        sqe.cdw12 = u32_at(data, at + 16);
        sqe.cdw13 = u32_at(data, at + 20);
        sqe.cdw14 = u32_at(data, at + 24);
        sqe.cdw15 = u32_at(data, at + 28);
        at += 32;
        let io = if flags & 2 != 0 {
            sqe.prp1 = u64_at(data, at);
            sqe.prp2 = u64_at(data, at + 8);
            at += 16;
            IoData::None
        } else if len == 0 {
            IoData::None
        } else if sqe.opcode().0 & 1 == 1 {
            let end = (at + len).min(data.len());
            let bytes = data[at..end].to_vec();
            at = end;
            IoData::ToDevice(bytes)
        } else {
            IoData::FromDevice(len)
        };
        // Queue management is the transport's own business.
        if flags & 1 != 0 && matches!(sqe.opcode().0, 0x00 | 0x01 | 0x04 | 0x05) {
            continue;
        }
        if flags & 4 != 0 {
            reap_all(&mut t);
        }
        let req = IoRequest { sqe, data: io };
        if flags & 1 != 0 {
            let r = t.admin(req);
            assert!(r.is_ok(), "admin command got no completion: {r:?}");
        } else if t.submit(req).is_err() {
            reap_all(&mut t);
        }
        assert!(
            !t.device().fatal(),
            "controller fatal after {commands} commands"
        );
    }
    reap_all(&mut t);
    assert!(!t.device().fatal());
});
