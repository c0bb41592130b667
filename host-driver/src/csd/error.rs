//! [`CsdError`]: what can go wrong talking to one InstCSD.

use thiserror::Error;

use crate::transport::TransportError;

/// A failed device operation.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CsdError {
    /// The command could not be moved.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The device completed the command with an error status.
    #[error("{command} failed: {status}")]
    Status {
        /// The completion status (its `Display` is the status name).
        status: proto::Status,
        /// The command that failed.
        command: &'static str,
    },
    /// The device is a plain NVMe drive (no InstCSD capability block).
    #[error("not an InstCSD device (no InstCSD capability block in Identify data)")]
    NotInstCsd,
    /// A reply from the device that does not make sense.
    #[error("bad reply to {command}: {reason}")]
    BadReply {
        /// The command answered.
        command: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The sequence is not open on this handle.
    #[error("sequence {0} is not open")]
    UnknownSequence(u32),
    /// The sequence is already open on this handle.
    #[error("sequence {0} is already open")]
    SequenceExists(u32),
    /// A caller buffer does not fit the sequence shape.
    #[error("{what} has {actual} elements, expected {expected}")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// Elements the shape implies.
        expected: usize,
        /// Elements given.
        actual: usize,
    },
    /// An argument out of range for the protocol.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A malformed command or structure.
    #[error("protocol: {0}")]
    Proto(#[from] proto::ProtoError),
}
