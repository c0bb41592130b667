//! Admin commands on a fabrics controller: Identify (the controller page
//! comes from the firmware, with the fabrics fields set here; namespace
//! pages from the target's namespace), Get Log Page (the InstCSD
//! statistics log from the firmware; error, SMART and firmware-slot logs
//! here), Set / Get Features (number of queues, keep-alive timer), Keep
//! Alive, Asynchronous Event Request (held), Abort; every other opcode
//! goes to the firmware, which answers it.

use std::sync::atomic::Ordering;
use std::time::Instant;

use proto::fabrics::FabricsIdentify;
use proto::{Sqe, Status};

use super::conn::{Conn, Payload};
use super::controller::{KAS, VERSION};
use crate::namespace::RamNamespace;
use host_driver::transport::IoResult;

pub(crate) const IDENTIFY: u8 = 0x06;
pub(crate) const GET_LOG_PAGE: u8 = 0x02;
pub(crate) const SET_FEATURES: u8 = 0x09;
pub(crate) const GET_FEATURES: u8 = 0x0A;
const ABORT: u8 = 0x08;
const ASYNC_EVENT: u8 = 0x0C;
pub(crate) const KEEP_ALIVE: u8 = 0x18;
const FID_QUEUES: u8 = 0x07;
pub(crate) const FID_KATO: u8 = 0x0F;

/// The namespace's NGUID: fixed per subsystem NQN.
fn nguid(nqn: &str) -> [u8; 16] {
    let a = proto::tcp::crc32c(nqn.as_bytes());
    let b = proto::tcp::crc32c(&a.to_le_bytes());
    let mut g = [0u8; 16];
    g[..4].copy_from_slice(b"ICSD");
    g[4..8].copy_from_slice(&a.to_le_bytes());
    g[8..12].copy_from_slice(&b.to_le_bytes());
    g[15] = 1;
    g
}

/// `page` cut or zero-padded to the `len` bytes the host asked for.
pub(crate) fn sized(page: &[u8], len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    let n = len.min(page.len());
    v[..n].copy_from_slice(&page[..n]);
    v
}

pub(crate) fn command(c: &mut Conn, sqe: Sqe, payload: Payload) {
    let op = sqe.opcode().0;
    let want = match payload {
        Payload::In(n) => n,
        _ => 0,
    };
    let enabled = c.with_ctrl(|k| k.enabled()) == Some(true);
    if !enabled && op != KEEP_ALIVE {
        return c.status(&sqe, proto::fabrics::COMMAND_SEQUENCE_ERROR);
    }
    if c.with_ctrl(|k| k.discovery) == Some(true) {
        return super::discovery::command(c, sqe, want);
    }
    match op {
        IDENTIFY => identify(c, sqe, want),
        GET_LOG_PAGE => log_page(c, sqe, payload, want),
        SET_FEATURES | GET_FEATURES => features(c, &sqe, op == SET_FEATURES),
        KEEP_ALIVE => {
            c.shared.stats.keep_alives.fetch_add(1, Ordering::Relaxed);
            c.with_ctrl(|k| k.last_keep_alive = Instant::now());
            c.status(&sqe, Status::SUCCESS);
        }
        // Held until the connection ends: no event is ever reported
        // (OAES is 0), the command just stays outstanding.
        ASYNC_EVENT => {}
        // Commands complete in order here; nothing is ever aborted
        // (dw0 bit 0 set: "not aborted").
        ABORT => c.respond(&sqe, Status::SUCCESS, 1, 0, Vec::new()),
        _ => c.to_board(true, sqe, payload, None),
    }
}

fn identify(c: &mut Conn, sqe: Sqe, want: usize) {
    let cns = sqe.cdw10 as u8;
    let nqn = c.shared.cfg.nqn.clone();
    let ns_ok = sqe.nsid == 1;
    let page: [u8; 4096] = match cns {
        0x01 => {
            let Some(cntlid) = c.cntlid else {
                return c.status(&sqe, Status::INTERNAL_ERROR);
            };
            let cfg = &c.shared.cfg;
            let entries = cfg.queue_entries;
            let ioccsz = (64 + cfg.in_capsule) / 16;
            let patch = Box::new(move |res: &mut IoResult| {
                if !res.cqe.status().is_success() || res.data.len() != 4096 {
                    return;
                }
                let f = FabricsIdentify {
                    cntlid,
                    ver: VERSION,
                    kas: KAS,
                    maxcmd: entries,
                    ioccsz,
                    subnqn: &nqn,
                };
                if f.patch(&mut res.data).is_ok() {
                    res.data = sized(&res.data, want);
                }
            });
            let mut fw = sqe;
            fw.cdw10 = 1;
            return c.to_board(true, fw, Payload::In(4096), Some(patch));
        }
        0x00 if ns_ok => match c.shared.namespace.lock() {
            Ok(ns) => ns.identify(nguid(&nqn)),
            Err(_) => return c.status(&sqe, Status::INTERNAL_ERROR),
        },
        0x03 if ns_ok => RamNamespace::descriptors(nguid(&nqn)),
        0x00 | 0x03 => return c.status(&sqe, Status::INVALID_NAMESPACE),
        0x02 => {
            let mut p = [0u8; 4096];
            if sqe.nsid < 1 {
                p[..4].copy_from_slice(&1u32.to_le_bytes());
            }
            p
        }
        // I/O command set specific Identify Controller, NVM command set:
        // no limits beyond MDTS.
        0x06 if sqe.cdw11 >> 24 == 0 => [0u8; 4096],
        _ => return c.status(&sqe, Status::INVALID_FIELD),
    };
    c.respond(&sqe, Status::SUCCESS, 0, 0, sized(&page, want))
}

fn log_page(c: &mut Conn, sqe: Sqe, payload: Payload, want: usize) {
    let lid = sqe.cdw10 as u8;
    if lid == proto::log::LID_STATS {
        return c.to_board(true, sqe, payload, None);
    }
    let offset = u64::from(sqe.cdw12) | u64::from(sqe.cdw13) << 32;
    let mut page = vec![0u8; 512];
    match lid {
        // Error information: no entries.
        0x01 => page = vec![0u8; 64],
        // SMART / health: temperature 300 K, data units (1000 × 512 B)
        // read and written on the namespace.
        0x02 => {
            let Ok(ns) = c.shared.namespace.lock() else {
                return c.status(&sqe, Status::INTERNAL_ERROR);
            };
            page[1..3].copy_from_slice(&300u16.to_le_bytes());
            page[3] = 100;
            let units = |b: u64| b.div_ceil(512_000);
            page[32..40].copy_from_slice(&units(ns.read_bytes).to_le_bytes());
            page[48..56].copy_from_slice(&units(ns.written_bytes).to_le_bytes());
        }
        // Firmware slot: slot 1 active, its revision.
        0x03 => {
            page[0] = 1;
            page[8..16].copy_from_slice(b"fabric01");
        }
        _ => return c.status(&sqe, Status::INVALID_LOG_PAGE),
    }
    if offset > page.len() as u64 {
        return c.status(&sqe, Status::INVALID_FIELD);
    }
    c.respond(
        &sqe,
        Status::SUCCESS,
        0,
        0,
        sized(&page[offset as usize..], want),
    )
}

pub(crate) fn features(c: &mut Conn, sqe: &Sqe, set: bool) {
    let fid = sqe.cdw10 as u8;
    let max = c.shared.cfg.max_io_queues;
    let r = c.with_ctrl(|k| match (fid, set) {
        (FID_QUEUES, true) => {
            let asked = (sqe.cdw11 as u16).min(sqe.cdw11.wrapping_shr(16) as u16);
            if asked == u16::MAX {
                return Err(Status::INVALID_FIELD);
            }
            // Granted once: the count stays fixed for the controller.
            if k.io_queues == 0 {
                k.io_queues = (asked + 1).min(max);
            }
            let n = u32::from(k.io_queues - 1);
            Ok(n << 16 | n)
        }
        (FID_QUEUES, false) => {
            let n = u32::from(k.io_queues.max(1) - 1);
            Ok(n << 16 | n)
        }
        (FID_KATO, true) => {
            k.kato = std::time::Duration::from_millis(u64::from(sqe.cdw11));
            Ok(0)
        }
        (FID_KATO, false) => Ok(k.kato.as_millis() as u32),
        _ => Err(Status::INVALID_FIELD),
    });
    match r {
        Some(Ok(dw0)) => c.respond(sqe, Status::SUCCESS, dw0, 0, Vec::new()),
        Some(Err(s)) => c.status(sqe, s),
        None => c.status(sqe, Status::INTERNAL_ERROR),
    }
}
