//! Errors of the device core, and their NVMe statuses.
//!
//! A command never fails the device: whatever goes wrong inside a command
//! becomes a [`Status`] in its completion. Only start-up problems and a dead
//! host link are [`DeviceError`]s.

use core::fmt;
use ftl::FtlError;
use proto::{ProtoError, Status};

/// Failures that stop the core itself.
#[derive(Debug)]
pub enum DeviceError {
    /// The FTL refused the configuration.
    Ftl(FtlError),
    /// The configuration is inconsistent.
    Config(&'static str),
    /// The host interface failed outside any command (fetch or completion
    /// post); the debug text of the board's error.
    HostLink,
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ftl(e) => write!(f, "flash translation layer: {e}"),
            Self::Config(what) => write!(f, "bad device configuration: {what}"),
            Self::HostLink => f.write_str("host interface failed"),
        }
    }
}

impl core::error::Error for DeviceError {}

/// The status a malformed or impossible command gets.
pub(crate) fn proto_status(e: ProtoError) -> Status {
    e.status()
}

/// The status an FTL failure inside a command maps to.
pub(crate) fn ftl_status(e: FtlError) -> Status {
    match e {
        FtlError::NoSpace => Status::CAPACITY_EXCEEDED,
        FtlError::DramBudget => Status::DRAM_BUDGET,
        FtlError::DataLost => Status::MEDIA_ERROR,
        _ => Status::INTERNAL_ERROR,
    }
}

/// A failed command: its status and the completion's DW0 (for example the
/// layer's current length with `POSITION_MISMATCH`, so the host can resync).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fail {
    pub status: Status,
    pub dw0: u32,
}

impl From<Status> for Fail {
    fn from(status: Status) -> Self {
        Self { status, dw0: 0 }
    }
}
