//! The 16-byte completion queue entry.
//!
//! Byte layout (little-endian): `dw0` 0, `dw1` 4, `sq_head` 8, `sq_id` 10,
//! `cid` 12, `status` 14. `status` bit 0 is the phase tag, bits 1-15 the
//! status field decoded by [`Status::from_field`].

use bytemuck::{Pod, Zeroable};

use crate::wire::{check_len, get_u16, get_u32, put_u16, put_u32};
use crate::{ProtoError, Status};

/// A completion queue entry. Fields are host values; [`Cqe::to_bytes`] and
/// [`Cqe::from_bytes`] do the little-endian wire encoding.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
pub struct Cqe {
    /// Command specific result (dword 0).
    pub dw0: u32,
    /// Command specific result (dword 1).
    pub dw1: u32,
    /// Submission queue head pointer after this command was consumed.
    pub sq_head: u16,
    /// Submission queue the command came from.
    pub sq_id: u16,
    /// Command identifier of the completed command.
    pub cid: u16,
    /// Phase tag (bit 0) and status field (bits 1-15).
    pub status: u16,
}

const _: () = assert!(core::mem::size_of::<Cqe>() == Cqe::SIZE);
const _: () = assert!(core::mem::offset_of!(Cqe, status) == 14);

impl Cqe {
    /// Wire size in bytes.
    pub const SIZE: usize = 16;

    /// A completion with `dw1` zero.
    pub const fn new(
        cid: u16,
        sq_id: u16,
        sq_head: u16,
        status: Status,
        dw0: u32,
        phase: bool,
    ) -> Self {
        Cqe {
            dw0,
            dw1: 0,
            sq_head,
            sq_id,
            cid,
            status: status.to_field() << 1 | phase as u16,
        }
    }

    /// Phase tag.
    pub const fn phase(&self) -> bool {
        self.status & 1 == 1
    }

    /// Decoded status field.
    pub const fn status(&self) -> Status {
        Status::from_field(self.status >> 1)
    }

    /// Little-endian wire encoding.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_u32(&mut b, 0, self.dw0);
        put_u32(&mut b, 4, self.dw1);
        put_u16(&mut b, 8, self.sq_head);
        put_u16(&mut b, 10, self.sq_id);
        put_u16(&mut b, 12, self.cid);
        put_u16(&mut b, 14, self.status);
        b
    }

    /// Decodes exactly 16 bytes ([`ProtoError::Length`] otherwise).
    pub fn from_bytes(bytes: &[u8]) -> Result<Cqe, ProtoError> {
        check_len(bytes, Self::SIZE)?;
        Ok(Cqe {
            dw0: get_u32(bytes, 0),
            dw1: get_u32(bytes, 4),
            sq_head: get_u16(bytes, 8),
            sq_id: get_u16(bytes, 10),
            cid: get_u16(bytes, 12),
            status: get_u16(bytes, 14),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;
    use proptest::prelude::*;

    #[test]
    fn layout() {
        assert_eq!(offset_of!(Cqe, dw0), 0);
        assert_eq!(offset_of!(Cqe, dw1), 4);
        assert_eq!(offset_of!(Cqe, sq_head), 8);
        assert_eq!(offset_of!(Cqe, sq_id), 10);
        assert_eq!(offset_of!(Cqe, cid), 12);
        assert_eq!(offset_of!(Cqe, status), 14);
    }

    #[test]
    fn status_bits() {
        let c = Cqe::new(0x1234, 1, 9, Status::SEQ_NOT_OPEN, 0xDEAD_BEEF, true);
        let b = c.to_bytes();
        assert_eq!(b[0..4], [0xEF, 0xBE, 0xAD, 0xDE]);
        assert_eq!(b[8..10], [9, 0]);
        assert_eq!(b[10..12], [1, 0]);
        assert_eq!(b[12..14], [0x34, 0x12]);
        // phase 1, SC 0x80 at bits 1-8, SCT 7 at bits 9-11, DNR bit 15.
        let expect: u16 = 1 | 0x80 << 1 | 7 << 9 | 1 << 15;
        assert_eq!(b[14..16], expect.to_le_bytes());
        assert!(c.phase());
        assert_eq!(c.status(), Status::SEQ_NOT_OPEN);
        let ok = Cqe::new(1, 0, 0, Status::SUCCESS, 0, false);
        assert_eq!(ok.status, 0);
        assert!(ok.status().is_success());
    }

    #[test]
    fn length_checked() {
        assert_eq!(
            Cqe::from_bytes(&[0; 15]),
            Err(ProtoError::Length {
                expected: 16,
                actual: 15
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(raw in proptest::array::uniform16(any::<u8>())) {
            prop_assert_eq!(Cqe::from_bytes(&raw).unwrap().to_bytes(), raw);
        }

        #[test]
        fn new_round_trip(cid: u16, sq: u16, head: u16, sct in 0u8..8, sc: u8, dnr: bool, dw0: u32, phase: bool) {
            let s = Status { sct, sc, dnr };
            let c = Cqe::from_bytes(&Cqe::new(cid, sq, head, s, dw0, phase).to_bytes()).unwrap();
            prop_assert_eq!((c.cid, c.sq_id, c.sq_head, c.status(), c.dw0, c.phase()), (cid, sq, head, s, dw0, phase));
        }
    }
}
