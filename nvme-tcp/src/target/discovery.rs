//! The discovery controller: a host that connects to the well-known
//! discovery NQN gets a controller that answers Identify (a discovery
//! controller's page, CNTRLTYPE 2), the Discovery Log Page (LID 70h: the
//! target's NVM subsystem at the address the host reached, and the
//! discovery subsystem itself), keep-alive and its timer, and refuses
//! everything else; it reaches neither the firmware nor the namespace.

use std::sync::atomic::Ordering;
use std::time::Instant;

use proto::discovery::{self, DiscoveryEntry};
use proto::fabrics::FabricsIdentify;
use proto::{Sqe, Status};

use super::admin::{
    self, FID_KATO, GET_FEATURES, GET_LOG_PAGE, IDENTIFY, KEEP_ALIVE, SET_FEATURES,
};
use super::conn::Conn;
use super::controller::{KAS, VERSION};

const ASYNC_EVENT: u8 = 0x0C;
/// The one port the target has.
const PORT_ID: u16 = 1;

pub(crate) fn command(c: &mut Conn, sqe: Sqe, want: usize) {
    match sqe.opcode().0 {
        IDENTIFY => identify(c, &sqe, want),
        GET_LOG_PAGE => log_page(c, &sqe, want),
        KEEP_ALIVE => {
            c.shared.stats.keep_alives.fetch_add(1, Ordering::Relaxed);
            c.with_ctrl(|k| k.last_keep_alive = Instant::now());
            c.status(&sqe, Status::SUCCESS);
        }
        GET_FEATURES | SET_FEATURES if sqe.cdw10 as u8 == FID_KATO => {
            admin::features(c, &sqe, sqe.opcode().0 == SET_FEATURES);
        }
        // Held: no discovery log change is ever reported.
        ASYNC_EVENT => {}
        _ => c.status(&sqe, Status::INVALID_OPCODE),
    }
}

fn identify(c: &mut Conn, sqe: &Sqe, want: usize) {
    let (cns, Some(cntlid)) = (sqe.cdw10 as u8, c.cntlid) else {
        return c.status(sqe, Status::INTERNAL_ERROR);
    };
    if cns != 0x01 {
        return c.status(sqe, Status::INVALID_FIELD);
    }
    let mut page = [0u8; 4096];
    page[4..24].fill(b' ');
    page[4..12].copy_from_slice(b"DISCOVER");
    page[24..64].fill(b' ');
    page[24..43].copy_from_slice(b"InstInfer discovery");
    page[64..72].copy_from_slice(b"fabric01");
    let f = FabricsIdentify {
        cntlid,
        ver: VERSION,
        kas: KAS,
        maxcmd: c.shared.cfg.queue_entries,
        ioccsz: 4,
        subnqn: discovery::DISCOVERY_NQN,
    };
    if f.patch(&mut page).is_err() {
        return c.status(sqe, Status::INTERNAL_ERROR);
    }
    page[111] = discovery::CNTRLTYPE_DISCOVERY;
    // LPA: Get Log Page takes offsets (extended data).
    page[261] = 0x04;
    // NN: a discovery controller has no namespaces.
    page[516..520].fill(0);
    c.respond(sqe, Status::SUCCESS, 0, 0, admin::sized(&page, want));
}

fn log_page(c: &mut Conn, sqe: &Sqe, want: usize) {
    if sqe.cdw10 as u8 != discovery::LID_DISCOVERY {
        return c.status(sqe, Status::INVALID_LOG_PAGE);
    }
    let offset = u64::from(sqe.cdw12) | u64::from(sqe.cdw13) << 32;
    let Some(local) = c.local_addr() else {
        return c.status(sqe, Status::INTERNAL_ERROR);
    };
    let (traddr, trsvcid) = (local.ip().to_string(), local.port().to_string());
    let adrfam = if local.is_ipv6() {
        discovery::ADRFAM_IPV6
    } else {
        discovery::ADRFAM_IPV4
    };
    let entry = |subtype: u8, subnqn: &str| {
        DiscoveryEntry {
            trtype: discovery::TRTYPE_TCP,
            adrfam,
            subtype,
            treq: discovery::TREQ_NOT_REQUIRED,
            portid: PORT_ID,
            cntlid: proto::fabrics::CNTLID_DYNAMIC,
            asqsz: c.shared.cfg.queue_entries,
            eflags: 0,
            trsvcid: &trsvcid,
            subnqn,
            traddr: &traddr,
        }
        .to_bytes()
    };
    let records = [
        entry(discovery::SUBTYPE_NVM, &c.shared.cfg.nqn),
        entry(
            discovery::SUBTYPE_CURRENT_DISCOVERY,
            discovery::DISCOVERY_NQN,
        ),
    ];
    let mut page = discovery::header(1, records.len() as u64).to_vec();
    for r in records {
        match r {
            Ok(b) => page.extend_from_slice(&b),
            Err(_) => return c.status(sqe, Status::INTERNAL_ERROR),
        }
    }
    if offset > page.len() as u64 || offset % 4 != 0 {
        return c.status(sqe, Status::INVALID_FIELD);
    }
    c.respond(
        sqe,
        Status::SUCCESS,
        0,
        0,
        admin::sized(&page[offset as usize..], want),
    );
}
