//! Controllers of the target: created by an admin-queue Connect (dynamic
//! model), found by I/O-queue Connects, with their properties (CAP, VS,
//! CC, CSTS), granted queues and keep-alive timer.

use std::collections::{BTreeSet, HashMap};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use proto::Status;
use proto::fabrics::{self, PROP_CAP, PROP_CC, PROP_CSTS, PROP_VS};

use super::Shared;

/// The version the controller reports: NVMe 1.3.
pub(crate) const VERSION: u32 = 0x0001_0300;
/// CAP.TO: 5 s to become ready (in 500 ms units).
const TIMEOUT_500MS: u8 = 10;
/// Keep-alive granularity reported in Identify (KAS, 100 ms units).
pub(crate) const KAS: u16 = 1;

/// One controller.
#[derive(Debug)]
pub(crate) struct Ctrl {
    pub hostnqn: String,
    pub hostid: [u8; 16],
    pub cc: u32,
    pub csts: u32,
    /// Keep-alive timeout (0: none).
    pub kato: Duration,
    pub last_keep_alive: Instant,
    /// I/O queues granted by Set Features (Number of Queues).
    pub io_queues: u16,
    /// I/O queues connected.
    pub connected: BTreeSet<u16>,
    /// The controller's connections (admin first), closed when it goes.
    pub streams: Vec<TcpStream>,
    /// A discovery controller (connected to the discovery NQN): it serves
    /// the Discovery Log Page and nothing of the subsystem.
    pub discovery: bool,
}

impl Ctrl {
    pub(crate) fn enabled(&self) -> bool {
        self.cc & 1 == 1 && self.csts & 1 == 1
    }
}

/// Every controller of the target.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    next: u16,
    pub ctrls: HashMap<u16, Ctrl>,
}

impl Registry {
    /// A new controller (ids 1..=0xFFEF, reused after 65519).
    pub(crate) fn create(&mut self, ctrl: Ctrl) -> Option<u16> {
        for _ in 0..0xFFEF {
            self.next = if self.next >= 0xFFEF {
                1
            } else {
                self.next + 1
            };
            if !self.ctrls.contains_key(&self.next) {
                self.ctrls.insert(self.next, ctrl);
                return Some(self.next);
            }
        }
        None
    }

    /// Removes a controller and closes its connections.
    pub(crate) fn remove(&mut self, cntlid: u16) {
        if let Some(c) = self.ctrls.remove(&cntlid) {
            for s in c.streams {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// CAP of every controller.
pub(crate) fn cap(shared: &Shared) -> u64 {
    fabrics::cap(shared.cfg.queue_entries - 1, TIMEOUT_500MS)
}

/// Property Get.
pub(crate) fn get(shared: &Shared, c: &Ctrl, wide: bool, offset: u32) -> Result<u64, Status> {
    match (offset, wide) {
        (PROP_CAP, true) => Ok(cap(shared)),
        (PROP_VS, false) => Ok(u64::from(VERSION)),
        (PROP_CC, false) => Ok(u64::from(c.cc)),
        (PROP_CSTS, false) => Ok(u64::from(c.csts)),
        _ => Err(Status::INVALID_FIELD),
    }
}

/// Property Set: only CC is writable. Enabling makes the controller
/// ready at once; disabling resets it (its I/O queues are closed); a
/// shutdown request completes at once.
pub(crate) fn set(c: &mut Ctrl, wide: bool, offset: u32, value: u64) -> Result<(), Status> {
    if offset != PROP_CC || wide {
        return Err(Status::INVALID_FIELD);
    }
    let cc = value as u32;
    let was = c.cc & 1;
    c.cc = cc;
    if cc & 1 == 1 && was == 0 {
        c.csts |= 1;
    } else if cc & 1 == 0 && was == 1 {
        c.csts &= !1;
        c.connected.clear();
        // Keep the admin connection; close the I/O ones.
        for s in c.streams.drain(1..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
    // CC.SHN (15:14) → CSTS.SHST (3:2) = complete.
    if (cc >> 14) & 3 != 0 {
        c.csts = (c.csts & !(3 << 2)) | 2 << 2;
    } else {
        c.csts &= !(3 << 2);
    }
    Ok(())
}

/// Removes controllers whose keep-alive timer ran out.
pub(crate) fn expire(shared: &Shared) {
    let Ok(mut reg) = shared.registry.lock() else {
        return;
    };
    let expired: Vec<u16> = reg
        .ctrls
        .iter()
        .filter(|(_, c)| !c.kato.is_zero() && c.last_keep_alive.elapsed() > c.kato)
        .map(|(&id, _)| id)
        .collect();
    for id in expired {
        if let Some(c) = reg.ctrls.get(&id) {
            shared.log(format_args!(
                "controller {id} of {}: no Keep Alive for {} ms (KATO): closing its connections",
                c.hostnqn,
                c.kato.as_millis()
            ));
        }
        reg.remove(id);
        shared
            .stats
            .keep_alive_expiries
            .fetch_add(1, Ordering::Relaxed);
    }
}
