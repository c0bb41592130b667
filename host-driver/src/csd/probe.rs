//! [`probe`]: what is behind a transport. A drive whose Identify data
//! carries the InstCSD capability block is an InstCSD ([`Csd`]); any other
//! NVMe drive is plain storage: its namespace 1's block size and count and
//! its transfer limit, for the host to keep the KV cache on it
//! ([`crate::backend::SsdOffload`]).

use proto::{IdentifyController, Opcode, Sqe};

use super::reply::{bad_reply, check_status};
use super::{Csd, CsdError};
use crate::transport::{IoData, IoRequest, Transport};

/// A plain NVMe drive's namespace 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainDrive {
    /// Model number.
    pub model: String,
    /// Bytes per logical block.
    pub lba_size: usize,
    /// Logical blocks.
    pub lbas: u64,
    /// Largest transfer of one command (MDTS; the PRP limit if none).
    pub max_transfer: usize,
}

/// What [`probe`] found.
#[derive(Debug)]
pub enum Drive<T: Transport> {
    /// An InstCSD: attention runs in the drive.
    InstCsd(Box<Csd<T>>),
    /// A plain NVMe drive: KV on it, attention on the host.
    Plain(T, PlainDrive),
}

const IDENTIFY_NS: &str = "Identify Namespace";

/// Reads Identify and decides; see the module docs.
pub fn probe<T: Transport>(mut transport: T) -> Result<Drive<T>, CsdError> {
    match super::identify::identify(&mut transport) {
        Ok(info) => return Ok(Drive::InstCsd(Box::new(Csd::with_info(transport, info)))),
        Err(CsdError::NotInstCsd) => {}
        Err(e) => return Err(e),
    }
    let res = transport.admin(IoRequest {
        sqe: proto::identify_controller(),
        data: IoData::FromDevice(IdentifyController::SIZE),
    })?;
    check_status(&res, "Identify")?;
    let id = IdentifyController::from_bytes(&res.data)
        .map_err(|e| bad_reply("Identify", e.to_string()))?;
    let max_transfer = match id.mdts {
        0 => proto::prp::MAX_LEN,
        n => 4096usize
            .checked_shl(u32::from(n))
            .unwrap_or(usize::MAX)
            .min(proto::prp::MAX_LEN),
    };
    let mut sqe = Sqe::new(Opcode(0x06));
    sqe.nsid = 1;
    sqe.cdw10 = 0;
    let ns = transport.admin(IoRequest {
        sqe,
        data: IoData::FromDevice(4096),
    })?;
    check_status(&ns, IDENTIFY_NS)?;
    let b = &ns.data;
    if b.len() < 4096 {
        return Err(bad_reply(IDENTIFY_NS, format!("{} bytes", b.len())));
    }
    let lbas = u64::from_le_bytes(b[0..8].try_into().unwrap_or_default());
    let lbaf = usize::from(b[26] & 0x0f);
    let lbads = b[128 + 4 * lbaf + 2];
    if !(9..=16).contains(&lbads) || lbas == 0 {
        return Err(bad_reply(
            IDENTIFY_NS,
            format!("block size 2^{lbads}, {lbas} blocks"),
        ));
    }
    Ok(Drive::Plain(
        transport,
        PlainDrive {
            model: id.model().to_string(),
            lba_size: 1 << lbads,
            lbas,
            max_transfer,
        },
    ))
}
