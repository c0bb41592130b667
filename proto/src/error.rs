//! [`ProtoError`]: everything that can be wrong with bytes on the wire.
//!
//! The firmware turns a `ProtoError` into a completion status with
//! [`ProtoError::status`]; the host uses it to report malformed device data.

use core::fmt;

use crate::Status;

/// A malformed command, structure or PRP chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtoError {
    /// A buffer (or a list of pages) had the wrong length.
    Length {
        /// The length required.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// The opcode is not one of the InstCSD vendor commands.
    UnknownOpcode(u8),
    /// A command-specific parser was handed an SQE with another opcode.
    WrongOpcode {
        /// The opcode the parser handles.
        expected: u8,
        /// The opcode in the SQE.
        actual: u8,
    },
    /// A field holds a value outside its allowed range.
    InvalidField {
        /// Name of the field (the struct field name, or `cdwN`).
        field: &'static str,
        /// The offending value.
        value: u64,
    },
    /// Reserved bits are not zero.
    Reserved {
        /// Where the reserved bits are (e.g. `"cdw13[31:24]"`).
        field: &'static str,
        /// The whole value holding them.
        value: u64,
    },
    /// The decode method is not known to this protocol version.
    UnsupportedMethod(u8),
    /// The command does not fit the shape of its sequence (layer out of
    /// range, NDT not matching the payload, sparf `r` above `head_dim`, ...).
    ShapeMismatch {
        /// The field that does not fit.
        field: &'static str,
        /// What the sequence shape implies.
        expected: u64,
        /// What the command says.
        actual: u64,
    },
    /// Identify data carries no InstCSD capability block (a plain NVMe SSD),
    /// or one of an unknown version.
    NotInstCsd,
    /// A PRP entry has a forbidden offset: PRP1 not dword-aligned, a later
    /// data entry not page-aligned, or a PRP list pointer not qword-aligned.
    PrpOffset {
        /// The offending entry.
        addr: u64,
    },
    /// A PRP transfer length of zero or above the allowed maximum.
    PrpLength {
        /// The requested length.
        len: usize,
        /// The maximum allowed.
        max: usize,
    },
}

impl ProtoError {
    /// The completion status the device answers this error with.
    pub fn status(&self) -> Status {
        match self {
            Self::UnknownOpcode(_) | Self::WrongOpcode { .. } => Status::INVALID_OPCODE,
            Self::UnsupportedMethod(_) => Status::UNSUPPORTED_METHOD,
            Self::ShapeMismatch { .. } => Status::SHAPE_MISMATCH,
            Self::PrpOffset { .. } => Status::PRP_OFFSET_INVALID,
            Self::NotInstCsd => Status::INTERNAL_ERROR,
            Self::Length { .. }
            | Self::InvalidField { .. }
            | Self::Reserved { .. }
            | Self::PrpLength { .. } => Status::INVALID_FIELD,
        }
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length { expected, actual } => {
                write!(f, "wrong length: expected {expected}, got {actual}")
            }
            Self::UnknownOpcode(op) => write!(f, "unknown opcode {op:#04x}"),
            Self::WrongOpcode { expected, actual } => {
                write!(
                    f,
                    "wrong opcode: expected {expected:#04x}, got {actual:#04x}"
                )
            }
            Self::InvalidField { field, value } => {
                write!(f, "invalid value {value:#x} in field {field}")
            }
            Self::Reserved { field, value } => {
                write!(f, "reserved bits set in {field} (value {value:#x})")
            }
            Self::UnsupportedMethod(m) => write!(f, "unsupported decode method {m}"),
            Self::ShapeMismatch {
                field,
                expected,
                actual,
            } => write!(
                f,
                "{field} does not match the sequence shape: expected {expected}, got {actual}"
            ),
            Self::NotInstCsd => f.write_str("not an InstCSD device (no capability block)"),
            Self::PrpOffset { addr } => write!(f, "PRP entry {addr:#x} has an invalid offset"),
            Self::PrpLength { len, max } => {
                write!(f, "PRP transfer length {len} not in 1..={max}")
            }
        }
    }
}

impl core::error::Error for ProtoError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn display_and_status() {
        let e = ProtoError::InvalidField {
            field: "layers",
            value: 0,
        };
        assert_eq!(e.to_string(), "invalid value 0x0 in field layers");
        assert_eq!(e.status(), Status::INVALID_FIELD);
        assert_eq!(
            ProtoError::UnknownOpcode(0x99).status(),
            Status::INVALID_OPCODE
        );
        assert_eq!(
            ProtoError::UnsupportedMethod(7).status(),
            Status::UNSUPPORTED_METHOD
        );
        assert_eq!(
            ProtoError::PrpOffset { addr: 1 }.status(),
            Status::PRP_OFFSET_INVALID
        );
        let _: &dyn core::error::Error = &e;
    }
}
