//! [`OffloadError`]: why a call failed. Each variant has a stable
//! [`OffloadError::code`] (the C API's error numbers, the Python
//! exceptions' `code`), and a drive's refusal keeps its NVMe status.

use host_driver::backend::BackendError;
use host_driver::csd::CsdError;
use host_driver::transport::TransportError;

/// A failed offload call. Nothing is half done unless the variant says so.
#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    /// A bad argument: a device spec, a shape, a length, a method name.
    #[error("{0}")]
    Invalid(String),
    /// The sequence is not open.
    #[error("sequence {0} is not open")]
    UnknownSequence(u32),
    /// The sequence is already open.
    #[error("sequence {0} is already open")]
    SequenceExists(u32),
    /// A submitted batch that is not (or no longer) pending.
    #[error("no pending batch {0}")]
    UnknownBatch(u64),
    /// The drive completed a command with an error status.
    #[error("{command} failed: {status}")]
    Status {
        /// The completion status.
        status: proto::Status,
        /// The command.
        command: &'static str,
    },
    /// The command could not be moved to or from the drive.
    #[error("transport: {0}")]
    Transport(String),
    /// The device is not an InstCSD drive, or answered nonsense.
    #[error("device: {0}")]
    Device(String),
    /// The SSD store failed (I/O, a damaged file).
    #[error("storage: {0}")]
    Storage(String),
}

impl OffloadError {
    /// Every code [`Self::code`] returns, with its name (the C header's
    /// `INSTINFER_E*` constants, in this order from 1).
    pub const CODES: [&'static str; 8] = [
        "INVALID",
        "UNKNOWN_SEQUENCE",
        "SEQUENCE_EXISTS",
        "UNKNOWN_BATCH",
        "STATUS",
        "TRANSPORT",
        "DEVICE",
        "STORAGE",
    ];

    /// A small positive number per variant (0 is success in the C API).
    pub fn code(&self) -> i32 {
        match self {
            Self::Invalid(_) => 1,
            Self::UnknownSequence(_) => 2,
            Self::SequenceExists(_) => 3,
            Self::UnknownBatch(_) => 4,
            Self::Status { .. } => 5,
            Self::Transport(_) => 6,
            Self::Device(_) => 7,
            Self::Storage(_) => 8,
        }
    }

    /// The NVMe status field (SCT << 8 | SC, DNR in bit 14) of a drive's
    /// refusal.
    pub fn nvme_status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(status.to_field()),
            _ => None,
        }
    }

    /// The failed command of a drive's refusal.
    pub fn command(&self) -> Option<&'static str> {
        match self {
            Self::Status { command, .. } => Some(command),
            _ => None,
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }
}

impl From<CsdError> for OffloadError {
    fn from(e: CsdError) -> Self {
        match e {
            CsdError::Transport(t) => t.into(),
            CsdError::Status { status, command } => Self::Status { status, command },
            CsdError::UnknownSequence(s) => Self::UnknownSequence(s),
            CsdError::SequenceExists(s) => Self::SequenceExists(s),
            e @ (CsdError::Length { .. } | CsdError::InvalidArgument(_)) => {
                Self::Invalid(e.to_string())
            }
            e => Self::Device(e.to_string()),
        }
    }
}

impl From<TransportError> for OffloadError {
    fn from(e: TransportError) -> Self {
        Self::Transport(e.to_string())
    }
}

impl From<BackendError> for OffloadError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Device(d) => d.into(),
            BackendError::UnknownSequence(s) => Self::UnknownSequence(s),
            BackendError::SequenceExists(s) => Self::SequenceExists(s),
            BackendError::Storage(s) => Self::Storage(s),
            other => Self::Invalid(other.to_string()),
        }
    }
}
