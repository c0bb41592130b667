//! Completion status codes: the generic NVMe codes InstCSD uses plus the
//! InstCSD vendor-specific codes (status code type 7).
//!
//! [`Status`] is open: any `(sct, sc)` pair round-trips, known ones get a name.
//! The 15-bit *status field* of a CQE (CQE bits 17..31 of dword 3, i.e. the
//! `status` u16 without the phase tag) is laid out as: SC bits 0-7, SCT bits
//! 8-10, CRD bits 11-12, More bit 13, DNR bit 14. CRD and More are not used by
//! InstCSD: they are written as zero and ignored when read.

use core::fmt;

/// A completion status: status code type, status code and Do Not Retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Status {
    /// Status code type (3 bits).
    pub sct: u8,
    /// Status code.
    pub sc: u8,
    /// Do Not Retry: the same command would fail again.
    pub dnr: bool,
}

const fn st(sct: u8, sc: u8, dnr: bool) -> Status {
    Status { sct, sc, dnr }
}

impl Status {
    /// SCT 0: generic command status.
    pub const SCT_GENERIC: u8 = 0;
    /// SCT 1: command specific status.
    pub const SCT_COMMAND_SPECIFIC: u8 = 1;
    /// SCT 2: media and data integrity errors.
    pub const SCT_MEDIA: u8 = 2;
    /// SCT 7: vendor specific (InstCSD codes).
    pub const SCT_VENDOR: u8 = 7;

    /// Successful completion (0/0x00).
    pub const SUCCESS: Status = st(0, 0x00, false);
    /// Invalid command opcode (0/0x01).
    pub const INVALID_OPCODE: Status = st(0, 0x01, true);
    /// Invalid field in command (0/0x02); also the answer to any vendor
    /// command that fails [`crate::VendorCommand::parse`].
    pub const INVALID_FIELD: Status = st(0, 0x02, true);
    /// Data transfer error (0/0x04): a DMA to/from host memory failed.
    pub const DATA_TRANSFER_ERROR: Status = st(0, 0x04, false);
    /// Internal error (0/0x06).
    pub const INTERNAL_ERROR: Status = st(0, 0x06, false);
    /// Transient transport error (0/0x22): the transport lost the
    /// command's data (an NVMe/TCP data digest mismatch); the same
    /// command may succeed again.
    pub const TRANSIENT_TRANSPORT_ERROR: Status = st(0, 0x22, false);
    /// Invalid namespace or format (0/0x0B).
    pub const INVALID_NAMESPACE: Status = st(0, 0x0B, true);
    /// PRP offset invalid (0/0x13): see [`crate::ProtoError::PrpOffset`].
    pub const PRP_OFFSET_INVALID: Status = st(0, 0x13, true);
    /// Capacity exceeded (0/0x81, NVM command set generic code): no free
    /// flash blocks left for KV data.
    pub const CAPACITY_EXCEEDED: Status = st(0, 0x81, true);
    /// Invalid queue identifier (1/0x01).
    pub const INVALID_QUEUE_ID: Status = st(1, 0x01, true);
    /// Invalid log page (1/0x09).
    pub const INVALID_LOG_PAGE: Status = st(1, 0x09, true);
    /// Unrecovered read error (2/0x81): flash media error.
    pub const MEDIA_ERROR: Status = st(2, 0x81, false);

    /// The sequence id is not open (7/0x80).
    pub const SEQ_NOT_OPEN: Status = st(7, 0x80, true);
    /// The sequence id is already open (7/0x81).
    pub const SEQ_EXISTS: Status = st(7, 0x81, true);
    /// No free slot in the sequence table (7/0x82).
    pub const SEQ_TABLE_FULL: Status = st(7, 0x82, true);
    /// DECODE_FETCH before the matching DECODE_SUBMIT completed (7/0x83).
    pub const RESULT_NOT_READY: Status = st(7, 0x83, true);
    /// The command does not fit the sequence shape (7/0x84): layer out of
    /// range, NDT not matching the payload, sparf `r` above `head_dim`.
    pub const SHAPE_MISMATCH: Status = st(7, 0x84, true);
    /// A position is not the one the layer expects (7/0x85): KV_APPEND gaps
    /// or duplicates, DECODE_SUBMIT position not at the layer's end.
    pub const POSITION_MISMATCH: Status = st(7, 0x85, true);
    /// The device DRAM budget would be exceeded (7/0x86).
    pub const DRAM_BUDGET: Status = st(7, 0x86, true);
    /// The decode method is unknown or not offered by this device (7/0x87).
    pub const UNSUPPORTED_METHOD: Status = st(7, 0x87, true);

    /// The sequence was open when the drive lost power: its KV is gone.
    /// Every command naming it gets this status until a SEQ_CLOSE
    /// acknowledges the loss (7/0x88).
    pub const SEQ_LOST: Status = st(7, 0x88, true);

    /// A host of an NVMe/TCP target reached its quota of open sequences
    /// or of KV bytes (7/0x89): nothing was done; another host's use is
    /// untouched. Closing a sequence frees its share.
    pub const HOST_QUOTA: Status = st(7, 0x89, true);

    /// Every status with a name, for tables and tests.
    pub const KNOWN: [Status; 22] = [
        Self::SUCCESS,
        Self::INVALID_OPCODE,
        Self::INVALID_FIELD,
        Self::DATA_TRANSFER_ERROR,
        Self::INTERNAL_ERROR,
        Self::INVALID_NAMESPACE,
        Self::TRANSIENT_TRANSPORT_ERROR,
        Self::PRP_OFFSET_INVALID,
        Self::CAPACITY_EXCEEDED,
        Self::INVALID_QUEUE_ID,
        Self::INVALID_LOG_PAGE,
        Self::MEDIA_ERROR,
        Self::SEQ_NOT_OPEN,
        Self::SEQ_EXISTS,
        Self::SEQ_TABLE_FULL,
        Self::RESULT_NOT_READY,
        Self::SHAPE_MISMATCH,
        Self::POSITION_MISMATCH,
        Self::DRAM_BUDGET,
        Self::UNSUPPORTED_METHOD,
        Self::SEQ_LOST,
        Self::HOST_QUOTA,
    ];

    /// A status with DNR clear.
    pub const fn new(sct: u8, sc: u8) -> Self {
        st(sct, sc, false)
    }

    /// The same status with DNR set to `dnr`.
    pub const fn with_dnr(self, dnr: bool) -> Self {
        st(self.sct, self.sc, dnr)
    }

    /// `true` for successful completion (SCT 0, SC 0), whatever DNR says.
    pub const fn is_success(&self) -> bool {
        self.sct == 0 && self.sc == 0
    }

    /// `true` if `self` and `other` are the same code, ignoring DNR.
    pub const fn same_code(&self, other: &Status) -> bool {
        self.sct == other.sct && self.sc == other.sc
    }

    /// The 15-bit status field (CRD and More zero).
    pub const fn to_field(&self) -> u16 {
        (self.sc as u16) | (((self.sct & 0x7) as u16) << 8) | ((self.dnr as u16) << 14)
    }

    /// Decodes a 15-bit status field (bit 15 ignored; CRD and More dropped).
    pub const fn from_field(field: u16) -> Self {
        st(
            ((field >> 8) & 0x7) as u8,
            (field & 0xFF) as u8,
            (field >> 14) & 1 == 1,
        )
    }

    /// Human name of a known code (DNR ignored).
    pub fn name(&self) -> Option<&'static str> {
        let name = match (self.sct, self.sc) {
            (0, 0x00) => "success",
            (0, 0x01) => "invalid opcode",
            (0, 0x02) => "invalid field",
            (0, 0x04) => "data transfer error",
            (0, 0x06) => "internal error",
            (0, 0x0B) => "invalid namespace",
            (0, 0x13) => "PRP offset invalid",
            (0, 0x22) => "transient transport error",
            (0, 0x81) => "capacity exceeded",
            (1, 0x01) => "invalid queue id",
            (1, 0x09) => "invalid log page",
            (2, 0x81) => "media error (unrecovered read)",
            (7, 0x80) => "sequence not open",
            (7, 0x81) => "sequence exists",
            (7, 0x82) => "sequence table full",
            (7, 0x83) => "result not ready",
            (7, 0x84) => "shape mismatch",
            (7, 0x85) => "position mismatch",
            (7, 0x86) => "DRAM budget exceeded",
            (7, 0x87) => "unsupported method",
            (7, 0x88) => "sequence lost to a power failure",
            (7, 0x89) => "host quota exceeded",
            _ => return None,
        };
        Some(name)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n)?,
            None => write!(f, "status sct={} sc={:#04x}", self.sct, self.sc)?,
        }
        if self.dnr && !self.is_success() {
            f.write_str(" (dnr)")
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::string::ToString;

    #[test]
    fn codes() {
        assert_eq!(
            (Status::INVALID_FIELD.sct, Status::INVALID_FIELD.sc),
            (0, 0x02)
        );
        assert_eq!(
            (Status::CAPACITY_EXCEEDED.sct, Status::CAPACITY_EXCEEDED.sc),
            (0, 0x81)
        );
        assert_eq!(
            (Status::INVALID_LOG_PAGE.sct, Status::INVALID_LOG_PAGE.sc),
            (1, 0x09)
        );
        assert_eq!((Status::MEDIA_ERROR.sct, Status::MEDIA_ERROR.sc), (2, 0x81));
        assert_eq!(
            (
                Status::UNSUPPORTED_METHOD.sct,
                Status::UNSUPPORTED_METHOD.sc
            ),
            (7, 0x87)
        );
        assert!(Status::SUCCESS.is_success());
        assert!(!Status::INVALID_FIELD.is_success());
    }

    #[test]
    fn vendor_codes_have_dnr_and_names_are_unique() {
        for (i, s) in Status::KNOWN.iter().enumerate() {
            assert!(s.name().is_some());
            if s.sct == Status::SCT_VENDOR {
                assert!(s.dnr, "{s}");
            }
            for t in &Status::KNOWN[i + 1..] {
                assert!(!s.same_code(t));
            }
        }
    }

    #[test]
    fn field_layout() {
        assert_eq!(Status::INVALID_FIELD.to_field(), 0x02 | 1 << 14);
        assert_eq!(Status::SEQ_NOT_OPEN.to_field(), 0x80 | 7 << 8 | 1 << 14);
        // CRD and More are dropped.
        assert_eq!(
            Status::from_field(0x3 << 11 | 1 << 13 | 0x02),
            Status::new(0, 2)
        );
    }

    #[test]
    fn display() {
        assert_eq!(Status::SUCCESS.to_string(), "success");
        assert_eq!(Status::SHAPE_MISMATCH.to_string(), "shape mismatch (dnr)");
        assert_eq!(Status::new(3, 0x42).to_string(), "status sct=3 sc=0x42");
    }

    proptest! {
        #[test]
        fn field_round_trip(sct in 0u8..8, sc: u8, dnr: bool) {
            let s = Status { sct, sc, dnr };
            prop_assert_eq!(Status::from_field(s.to_field()), s);
            prop_assert!(s.to_field() < 1 << 15);
        }
    }
}
