//! Identify Controller: reading it and turning it into [`DeviceInfo`]
//! (capability block, strings, the effective transfer limit).

use proto::{CapabilityBlock, IdentifyController};

use super::CsdError;
use super::reply::{bad_reply, check_status};
use crate::transport::{IoData, IoRequest, Transport};

const IDENTIFY: &str = "Identify";

/// What Identify says about the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The InstCSD capability block.
    pub caps: CapabilityBlock,
    /// Model number.
    pub model: String,
    /// Serial number.
    pub serial: String,
    /// Firmware revision.
    pub firmware: String,
    /// Largest data transfer of one command in bytes (the smaller of the
    /// NVMe MDTS field and the capability block's `mdts_bytes`).
    pub max_transfer: usize,
}

/// Reads Identify Controller; a drive without the InstCSD block is
/// [`CsdError::NotInstCsd`].
pub(super) fn identify<T: Transport>(transport: &mut T) -> Result<DeviceInfo, CsdError> {
    let req = IoRequest {
        sqe: proto::identify_controller(),
        data: IoData::FromDevice(IdentifyController::SIZE),
    };
    let res = transport.admin(req)?;
    check_status(&res, IDENTIFY)?;
    let id = IdentifyController::from_bytes(&res.data)
        .map_err(|e| bad_reply(IDENTIFY, e.to_string()))?;
    let caps = *id.instcsd().map_err(|_| CsdError::NotInstCsd)?;
    // MDTS is a power of two in 4 KiB units (0: no limit).
    let nvme_limit = match id.mdts {
        0 => usize::MAX,
        n => 4096usize.checked_shl(u32::from(n)).unwrap_or(usize::MAX),
    };
    let cap_limit = match caps.mdts_bytes {
        0 => usize::MAX,
        n => n as usize,
    };
    let max_transfer = nvme_limit.min(cap_limit).min(proto::prp::MAX_LEN);
    Ok(DeviceInfo {
        caps,
        model: id.model().to_string(),
        serial: id.serial().to_string(),
        firmware: id.firmware().to_string(),
        max_transfer,
    })
}
