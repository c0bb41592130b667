//! The 64-byte submission queue entry.
//!
//! Byte layout (little-endian): `cdw0` 0, `nsid` 4, `cdw2` 8, `cdw3` 12,
//! `mptr` 16, `prp1` 24, `prp2` 32, `cdw10`..`cdw15` 40..64. `cdw0` holds the
//! opcode (bits 0-7), fused operation (8-9), PSDT (14-15) and command id
//! (16-31); bits 10-13 are reserved.

use bytemuck::{Pod, Zeroable};

use crate::wire::{check_len, get_u32, get_u64, put_u32, put_u64};
use crate::{Opcode, ProtoError};

/// A submission queue entry. Fields are host values; [`Sqe::to_bytes`] and
/// [`Sqe::from_bytes`] do the little-endian wire encoding.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
pub struct Sqe {
    /// Command dword 0: opcode, fuse, PSDT, CID.
    pub cdw0: u32,
    /// Namespace id.
    pub nsid: u32,
    /// Command dword 2 (reserved for InstCSD commands).
    pub cdw2: u32,
    /// Command dword 3 (reserved for InstCSD commands).
    pub cdw3: u32,
    /// Metadata pointer (unused by InstCSD, zero).
    pub mptr: u64,
    /// PRP entry 1.
    pub prp1: u64,
    /// PRP entry 2 (second page or PRP list pointer).
    pub prp2: u64,
    /// Command dword 10.
    pub cdw10: u32,
    /// Command dword 11.
    pub cdw11: u32,
    /// Command dword 12.
    pub cdw12: u32,
    /// Command dword 13.
    pub cdw13: u32,
    /// Command dword 14.
    pub cdw14: u32,
    /// Command dword 15.
    pub cdw15: u32,
}

const _: () = assert!(core::mem::size_of::<Sqe>() == Sqe::SIZE);
const _: () = assert!(core::mem::offset_of!(Sqe, cdw10) == 40);

impl Sqe {
    /// Wire size in bytes.
    pub const SIZE: usize = 64;

    /// An all-zero SQE with the given opcode.
    pub const fn new(opcode: Opcode) -> Self {
        Sqe {
            cdw0: opcode.0 as u32,
            nsid: 0,
            cdw2: 0,
            cdw3: 0,
            mptr: 0,
            prp1: 0,
            prp2: 0,
            cdw10: 0,
            cdw11: 0,
            cdw12: 0,
            cdw13: 0,
            cdw14: 0,
            cdw15: 0,
        }
    }

    /// Opcode (cdw0 bits 0-7).
    pub const fn opcode(&self) -> Opcode {
        Opcode(self.cdw0 as u8)
    }

    /// Replaces the opcode.
    pub fn set_opcode(&mut self, opcode: Opcode) {
        self.cdw0 = (self.cdw0 & !0xFF) | opcode.0 as u32;
    }

    /// Fused operation (cdw0 bits 8-9).
    pub const fn fuse(&self) -> u8 {
        ((self.cdw0 >> 8) & 0x3) as u8
    }

    /// PRP or SGL data transfer selector (cdw0 bits 14-15; 0 = PRP).
    pub const fn psdt(&self) -> u8 {
        ((self.cdw0 >> 14) & 0x3) as u8
    }

    /// Command identifier (cdw0 bits 16-31).
    pub const fn cid(&self) -> u16 {
        (self.cdw0 >> 16) as u16
    }

    /// Replaces the command identifier.
    pub fn set_cid(&mut self, cid: u16) {
        self.cdw0 = (self.cdw0 & 0xFFFF) | (cid as u32) << 16;
    }

    /// Little-endian wire encoding.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put_u32(&mut b, 0, self.cdw0);
        put_u32(&mut b, 4, self.nsid);
        put_u32(&mut b, 8, self.cdw2);
        put_u32(&mut b, 12, self.cdw3);
        put_u64(&mut b, 16, self.mptr);
        put_u64(&mut b, 24, self.prp1);
        put_u64(&mut b, 32, self.prp2);
        let cdws = [
            self.cdw10, self.cdw11, self.cdw12, self.cdw13, self.cdw14, self.cdw15,
        ];
        for (i, v) in cdws.into_iter().enumerate() {
            put_u32(&mut b, 40 + 4 * i, v);
        }
        b
    }

    /// Decodes exactly 64 bytes ([`ProtoError::Length`] otherwise).
    pub fn from_bytes(bytes: &[u8]) -> Result<Sqe, ProtoError> {
        check_len(bytes, Self::SIZE)?;
        Ok(Sqe {
            cdw0: get_u32(bytes, 0),
            nsid: get_u32(bytes, 4),
            cdw2: get_u32(bytes, 8),
            cdw3: get_u32(bytes, 12),
            mptr: get_u64(bytes, 16),
            prp1: get_u64(bytes, 24),
            prp2: get_u64(bytes, 32),
            cdw10: get_u32(bytes, 40),
            cdw11: get_u32(bytes, 44),
            cdw12: get_u32(bytes, 48),
            cdw13: get_u32(bytes, 52),
            cdw14: get_u32(bytes, 56),
            cdw15: get_u32(bytes, 60),
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
        assert_eq!(offset_of!(Sqe, cdw0), 0);
        assert_eq!(offset_of!(Sqe, nsid), 4);
        assert_eq!(offset_of!(Sqe, cdw2), 8);
        assert_eq!(offset_of!(Sqe, cdw3), 12);
        assert_eq!(offset_of!(Sqe, mptr), 16);
        assert_eq!(offset_of!(Sqe, prp1), 24);
        assert_eq!(offset_of!(Sqe, prp2), 32);
        assert_eq!(offset_of!(Sqe, cdw10), 40);
        assert_eq!(offset_of!(Sqe, cdw11), 44);
        assert_eq!(offset_of!(Sqe, cdw12), 48);
        assert_eq!(offset_of!(Sqe, cdw13), 52);
        assert_eq!(offset_of!(Sqe, cdw14), 56);
        assert_eq!(offset_of!(Sqe, cdw15), 60);
    }

    #[test]
    fn wire_offsets_are_little_endian() {
        let mut s = Sqe::new(Opcode::DECODE_SUBMIT);
        s.set_cid(0xBEEF);
        s.nsid = 0x0403_0201;
        s.prp1 = 0x1122_3344_5566_7788;
        s.cdw10 = 0xA1A2_A3A4;
        s.cdw15 = 0xF1F2_F3F4;
        let b = s.to_bytes();
        assert_eq!(b[0..4], [0x85, 0, 0xEF, 0xBE]);
        assert_eq!(b[4..8], [1, 2, 3, 4]);
        assert_eq!(b[24..32], [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        assert_eq!(b[40..44], [0xA4, 0xA3, 0xA2, 0xA1]);
        assert_eq!(b[60..64], [0xF4, 0xF3, 0xF2, 0xF1]);
        assert_eq!(s.opcode(), Opcode::DECODE_SUBMIT);
        assert_eq!(s.cid(), 0xBEEF);
        assert_eq!(s.fuse(), 0);
        assert_eq!(s.psdt(), 0);
    }

    #[test]
    fn cdw0_fields() {
        let s = Sqe {
            cdw0: 0x1234_0000 | 0b11 << 14 | 0b10 << 8 | 0x81,
            ..Sqe::default()
        };
        assert_eq!(s.opcode(), Opcode(0x81));
        assert_eq!(s.fuse(), 2);
        assert_eq!(s.psdt(), 3);
        assert_eq!(s.cid(), 0x1234);
        let mut t = s;
        t.set_cid(7);
        t.set_opcode(Opcode(0x02));
        assert_eq!(
            (t.cid(), t.opcode(), t.fuse(), t.psdt()),
            (7, Opcode(0x02), 2, 3)
        );
    }

    #[test]
    fn length_checked() {
        assert_eq!(
            Sqe::from_bytes(&[0; 63]),
            Err(ProtoError::Length {
                expected: 64,
                actual: 63
            })
        );
        assert!(Sqe::from_bytes(&[0; 65]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(words in proptest::array::uniform16(any::<u32>())) {
            let mut raw = [0u8; 64];
            for (i, w) in words.iter().enumerate() {
                raw[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
            }
            let s = Sqe::from_bytes(&raw).unwrap();
            prop_assert_eq!(s.to_bytes(), raw);
        }
    }
}
