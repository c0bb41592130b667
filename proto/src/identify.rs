//! Identify: the admin command, the 4096-byte Identify Controller data
//! structure (the standard fields InstCSD uses) and the InstCSD capability
//! block stored in its vendor-specific area.
//!
//! Identify Controller fields kept: VID 0..2, SSVID 2..4, SN 4..24, MN
//! 24..64, FR 64..72 (ASCII, space-padded), MDTS 77, and the
//! [`CapabilityBlock`] at [`CapabilityBlock::OFFSET`] (3072). Every other
//! byte is written as zero and ignored when read.

use bytemuck::{Pod, Zeroable};

use crate::vendor::Method;
use crate::wire::{check_len, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::{Opcode, ProtoError, Sqe};

/// CNS value selecting the Identify Controller data structure.
pub const CNS_CONTROLLER: u8 = 1;

/// An Identify Controller command (CNS 1), data out 4096 bytes.
pub fn identify_controller() -> Sqe {
    IdentifyCmd {
        cns: CNS_CONTROLLER,
        cntid: 0,
    }
    .to_sqe()
}

/// A parsed Identify command: cdw10 CNS bits 0-7, CNTID bits 16-31 (bits
/// 8-15 reserved). The firmware answers INVALID_FIELD for a CNS it does not
/// serve. Data is always 4096 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdentifyCmd {
    /// Controller or namespace structure.
    pub cns: u8,
    /// Controller id.
    pub cntid: u16,
}

impl IdentifyCmd {
    /// Encodes (cid, nsid and PRPs zero).
    pub fn to_sqe(&self) -> Sqe {
        Sqe {
            cdw10: self.cns as u32 | (self.cntid as u32) << 16,
            ..Sqe::new(Opcode::IDENTIFY)
        }
    }

    /// Decodes: opcode, fuse/PSDT zero, cdw10 reserved bits zero.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_admin(sqe, Opcode::IDENTIFY)?;
        if sqe.cdw10 & 0xFF00 != 0 {
            return Err(ProtoError::Reserved {
                field: "cdw10[15:8]",
                value: sqe.cdw10 as u64,
            });
        }
        Ok(IdentifyCmd {
            cns: sqe.cdw10 as u8,
            cntid: (sqe.cdw10 >> 16) as u16,
        })
    }
}

/// Shared admin-command checks: opcode, no fused op, PRPs only.
pub(crate) fn check_admin(sqe: &Sqe, op: Opcode) -> Result<(), ProtoError> {
    if sqe.opcode() != op {
        return Err(ProtoError::WrongOpcode {
            expected: op.0,
            actual: sqe.opcode().0,
        });
    }
    if sqe.fuse() != 0 {
        return Err(ProtoError::InvalidField {
            field: "fuse",
            value: sqe.fuse() as u64,
        });
    }
    if sqe.psdt() != 0 {
        return Err(ProtoError::InvalidField {
            field: "psdt",
            value: sqe.psdt() as u64,
        });
    }
    Ok(())
}

/// InstCSD capability block (128 bytes, LE) in the Identify Controller
/// vendor-specific area. A plain NVMe SSD has zeros there.
///
/// Offsets: magic 0, version 4, methods 6, page_size 8, channels 12, ways
/// 13, max_head_dim 14, blocks_per_die 16, pages_per_block 20, max_group 24,
/// max_dim_group 25, max_layers 26, max_sequences 28, engine_clock_khz 32,
/// engine_lanes 36, max_kv_heads 38, sketch_widths 39, dram_budget_bytes 40,
/// max_tokens_per_stream 48, mdts_bytes 52, pages_features 56, reserved
/// 57..128.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct CapabilityBlock {
    /// [`CapabilityBlock::MAGIC`].
    pub magic: [u8; 4],
    /// [`CapabilityBlock::VERSION`].
    pub version: u16,
    /// Supported methods: bit `n` for `Method(n)` (bit 0 dense, bit 1 sparf,
    /// bit 2 pages).
    pub methods: u16,
    /// Flash page size in bytes.
    pub page_size: u32,
    /// Flash channels.
    pub channels: u8,
    /// Dies (ways) per channel.
    pub ways: u8,
    /// Largest `head_dim` accepted.
    pub max_head_dim: u16,
    /// Erase blocks per die.
    pub blocks_per_die: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Largest `group` accepted.
    pub max_group: u8,
    /// Largest `dim_group` accepted.
    pub max_dim_group: u8,
    /// Largest `layers` accepted.
    pub max_layers: u16,
    /// Sequences open at once.
    pub max_sequences: u32,
    /// Attention engine clock in kHz.
    pub engine_clock_khz: u32,
    /// Attention engine lanes (MACs per cycle).
    pub engine_lanes: u16,
    /// Largest `kv_heads` accepted.
    pub max_kv_heads: u8,
    /// PAGES key sketches supported: bit `b` set for a `b`-bit sketch
    /// (b = 1, 2, 4; SEQ_OPEN `sketch_bits`). Zero: none.
    pub sketch_widths: u8,
    /// Device DRAM available for KV tails and results, in bytes.
    pub dram_budget_bytes: u64,
    /// Most tokens one (sequence, layer, kv head) stream may hold.
    pub max_tokens_per_stream: u32,
    /// Largest data transfer of one command, in bytes.
    pub mdts_bytes: u32,
    /// PAGES options: [`CapabilityBlock::SHORTLIST_BOUND`].
    pub pages_features: u8,
    /// Zero.
    pub reserved: [u8; 71],
}

const _: () = assert!(core::mem::size_of::<CapabilityBlock>() == CapabilityBlock::SIZE);
const _: () = assert!(CapabilityBlock::OFFSET + CapabilityBlock::SIZE <= IdentifyController::SIZE);

impl Default for CapabilityBlock {
    /// Magic and version set, every capability zero.
    fn default() -> Self {
        CapabilityBlock {
            magic: Self::MAGIC,
            version: Self::VERSION,
            ..Zeroable::zeroed()
        }
    }
}

impl CapabilityBlock {
    /// Wire size in bytes.
    pub const SIZE: usize = 128;
    /// `pages_features` bit: SEQ_OPEN `shortlist_bound` (half the key
    /// sketch's shortlist by Quest's bound) is understood.
    pub const SHORTLIST_BOUND: u8 = 1 << 0;
    /// Offset inside Identify Controller data.
    pub const OFFSET: usize = 3072;
    /// Magic bytes.
    pub const MAGIC: [u8; 4] = *b"ICSD";
    /// The version this crate speaks.
    pub const VERSION: u16 = 1;

    /// `true` if the device advertises `method`.
    pub const fn supports(&self, method: Method) -> bool {
        self.methods & method.bit() != 0
    }

    /// Little-endian wire encoding.
    pub fn to_bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&self.magic);
        put_u16(&mut b, 4, self.version);
        put_u16(&mut b, 6, self.methods);
        put_u32(&mut b, 8, self.page_size);
        b[12] = self.channels;
        b[13] = self.ways;
        put_u16(&mut b, 14, self.max_head_dim);
        put_u32(&mut b, 16, self.blocks_per_die);
        put_u32(&mut b, 20, self.pages_per_block);
        b[24] = self.max_group;
        b[25] = self.max_dim_group;
        put_u16(&mut b, 26, self.max_layers);
        put_u32(&mut b, 28, self.max_sequences);
        put_u32(&mut b, 32, self.engine_clock_khz);
        put_u16(&mut b, 36, self.engine_lanes);
        b[38] = self.max_kv_heads;
        b[39] = self.sketch_widths;
        put_u64(&mut b, 40, self.dram_budget_bytes);
        put_u32(&mut b, 48, self.max_tokens_per_stream);
        put_u32(&mut b, 52, self.mdts_bytes);
        b[56] = self.pages_features;
        b[57..].copy_from_slice(&self.reserved);
        b
    }

    /// Decodes exactly 128 bytes; [`ProtoError::NotInstCsd`] unless magic
    /// and version match.
    pub fn parse(bytes: &[u8]) -> Result<Self, ProtoError> {
        check_len(bytes, Self::SIZE)?;
        if bytes[0..4] != Self::MAGIC || get_u16(bytes, 4) != Self::VERSION {
            return Err(ProtoError::NotInstCsd);
        }
        let mut reserved = [0u8; 71];
        reserved.copy_from_slice(&bytes[57..]);
        Ok(CapabilityBlock {
            magic: Self::MAGIC,
            version: Self::VERSION,
            methods: get_u16(bytes, 6),
            page_size: get_u32(bytes, 8),
            channels: bytes[12],
            ways: bytes[13],
            max_head_dim: get_u16(bytes, 14),
            blocks_per_die: get_u32(bytes, 16),
            pages_per_block: get_u32(bytes, 20),
            max_group: bytes[24],
            max_dim_group: bytes[25],
            max_layers: get_u16(bytes, 26),
            max_sequences: get_u32(bytes, 28),
            engine_clock_khz: get_u32(bytes, 32),
            engine_lanes: get_u16(bytes, 36),
            max_kv_heads: bytes[38],
            sketch_widths: bytes[39],
            dram_budget_bytes: get_u64(bytes, 40),
            max_tokens_per_stream: get_u32(bytes, 48),
            mdts_bytes: get_u32(bytes, 52),
            pages_features: bytes[56],
            reserved,
        })
    }
}

/// The Identify Controller fields InstCSD uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdentifyController {
    /// PCI vendor id.
    pub vid: u16,
    /// PCI subsystem vendor id.
    pub ssvid: u16,
    /// Serial number, ASCII, space-padded.
    pub sn: [u8; 20],
    /// Model number, ASCII, space-padded.
    pub mn: [u8; 40],
    /// Firmware revision, ASCII, space-padded.
    pub fr: [u8; 8],
    /// Maximum data transfer size, as a power of two in units of the
    /// minimum memory page size (0 = no limit).
    pub mdts: u8,
    /// InstCSD capabilities; `None` on a plain NVMe SSD.
    pub capability: Option<CapabilityBlock>,
}

impl IdentifyController {
    /// Wire size in bytes.
    pub const SIZE: usize = 4096;

    /// Builds the structure; text fields must be ASCII and fit.
    pub fn new(
        vid: u16,
        ssvid: u16,
        sn: &str,
        mn: &str,
        fr: &str,
        mdts: u8,
        capability: Option<CapabilityBlock>,
    ) -> Result<Self, ProtoError> {
        Ok(IdentifyController {
            vid,
            ssvid,
            sn: pad_ascii("sn", sn)?,
            mn: pad_ascii("mn", mn)?,
            fr: pad_ascii("fr", fr)?,
            mdts,
            capability,
        })
    }

    /// Serial number without padding.
    pub fn serial(&self) -> &str {
        trim_ascii(&self.sn)
    }

    /// Model number without padding.
    pub fn model(&self) -> &str {
        trim_ascii(&self.mn)
    }

    /// Firmware revision without padding.
    pub fn firmware(&self) -> &str {
        trim_ascii(&self.fr)
    }

    /// The capability block, or [`ProtoError::NotInstCsd`].
    pub fn instcsd(&self) -> Result<&CapabilityBlock, ProtoError> {
        self.capability.as_ref().ok_or(ProtoError::NotInstCsd)
    }

    /// Encodes into exactly 4096 bytes (all other bytes zeroed).
    pub fn encode_into(&self, out: &mut [u8]) -> Result<(), ProtoError> {
        check_len(out, Self::SIZE)?;
        out.fill(0);
        put_u16(out, 0, self.vid);
        put_u16(out, 2, self.ssvid);
        out[4..24].copy_from_slice(&self.sn);
        out[24..64].copy_from_slice(&self.mn);
        out[64..72].copy_from_slice(&self.fr);
        out[77] = self.mdts;
        if let Some(cap) = &self.capability {
            out[CapabilityBlock::OFFSET..][..CapabilityBlock::SIZE]
                .copy_from_slice(&cap.to_bytes());
        }
        Ok(())
    }

    /// Encodes into a new 4096-byte array.
    pub fn to_bytes(&self) -> [u8; 4096] {
        let mut b = [0u8; 4096];
        // Cannot fail: the length is right.
        let _ = self.encode_into(&mut b);
        b
    }

    /// Decodes exactly 4096 bytes; `capability` is `None` when the block is
    /// absent or of another version.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProtoError> {
        check_len(bytes, Self::SIZE)?;
        let mut sn = [0u8; 20];
        let mut mn = [0u8; 40];
        let mut fr = [0u8; 8];
        sn.copy_from_slice(&bytes[4..24]);
        mn.copy_from_slice(&bytes[24..64]);
        fr.copy_from_slice(&bytes[64..72]);
        Ok(IdentifyController {
            vid: get_u16(bytes, 0),
            ssvid: get_u16(bytes, 2),
            sn,
            mn,
            fr,
            mdts: bytes[77],
            capability: CapabilityBlock::parse(
                &bytes[CapabilityBlock::OFFSET..][..CapabilityBlock::SIZE],
            )
            .ok(),
        })
    }
}

/// `s` as an ASCII field of `N` bytes, space-padded;
/// [`ProtoError::InvalidField`] if not printable ASCII or too long.
pub fn pad_ascii<const N: usize>(field: &'static str, s: &str) -> Result<[u8; N], ProtoError> {
    if s.len() > N || !s.bytes().all(|c| (0x20..0x7F).contains(&c)) {
        return Err(ProtoError::InvalidField {
            field,
            value: s.len() as u64,
        });
    }
    let mut out = [b' '; N];
    out[..s.len()].copy_from_slice(s.as_bytes());
    Ok(out)
}

/// An ASCII field without trailing spaces/NULs (empty if not UTF-8).
pub fn trim_ascii(field: &[u8]) -> &str {
    core::str::from_utf8(field)
        .unwrap_or("")
        .trim_end_matches([' ', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;
    use proptest::prelude::*;

    fn cap() -> CapabilityBlock {
        CapabilityBlock {
            methods: Method::DENSE.bit() | Method::SPARF.bit(),
            page_size: 16384,
            channels: 8,
            ways: 4,
            max_head_dim: 256,
            blocks_per_die: 1024,
            pages_per_block: 256,
            max_group: 8,
            max_dim_group: 8,
            max_layers: 128,
            max_sequences: 64,
            engine_clock_khz: 1_000_000,
            engine_lanes: 64,
            max_kv_heads: 32,
            dram_budget_bytes: 1 << 30,
            max_tokens_per_stream: 1 << 20,
            mdts_bytes: 1 << 20,
            ..CapabilityBlock::default()
        }
    }

    #[test]
    fn command() {
        let s = identify_controller();
        assert_eq!((s.opcode(), s.cdw10, s.nsid), (Opcode::IDENTIFY, 1, 0));
        assert_eq!(IdentifyCmd::parse(&s), Ok(IdentifyCmd { cns: 1, cntid: 0 }));
        let mut bad = s;
        bad.cdw10 |= 0x100;
        assert!(matches!(
            IdentifyCmd::parse(&bad),
            Err(ProtoError::Reserved { .. })
        ));
        let mut bad = s;
        bad.cdw0 |= 1 << 14;
        assert!(matches!(
            IdentifyCmd::parse(&bad),
            Err(ProtoError::InvalidField { field: "psdt", .. })
        ));
        let mut bad = s;
        bad.cdw0 |= 1 << 8;
        assert!(matches!(
            IdentifyCmd::parse(&bad),
            Err(ProtoError::InvalidField { field: "fuse", .. })
        ));
        assert!(matches!(
            IdentifyCmd::parse(&Sqe::new(Opcode(0x02))),
            Err(ProtoError::WrongOpcode { .. })
        ));
        let c = IdentifyCmd {
            cns: 0,
            cntid: 0x1234,
        };
        assert_eq!(IdentifyCmd::parse(&c.to_sqe()), Ok(c));
    }

    #[test]
    fn capability_layout() {
        assert_eq!(offset_of!(CapabilityBlock, version), 4);
        assert_eq!(offset_of!(CapabilityBlock, methods), 6);
        assert_eq!(offset_of!(CapabilityBlock, page_size), 8);
        assert_eq!(offset_of!(CapabilityBlock, channels), 12);
        assert_eq!(offset_of!(CapabilityBlock, ways), 13);
        assert_eq!(offset_of!(CapabilityBlock, max_head_dim), 14);
        assert_eq!(offset_of!(CapabilityBlock, blocks_per_die), 16);
        assert_eq!(offset_of!(CapabilityBlock, pages_per_block), 20);
        assert_eq!(offset_of!(CapabilityBlock, max_group), 24);
        assert_eq!(offset_of!(CapabilityBlock, max_dim_group), 25);
        assert_eq!(offset_of!(CapabilityBlock, max_layers), 26);
        assert_eq!(offset_of!(CapabilityBlock, max_sequences), 28);
        assert_eq!(offset_of!(CapabilityBlock, engine_clock_khz), 32);
        assert_eq!(offset_of!(CapabilityBlock, engine_lanes), 36);
        assert_eq!(offset_of!(CapabilityBlock, max_kv_heads), 38);
        assert_eq!(offset_of!(CapabilityBlock, dram_budget_bytes), 40);
        assert_eq!(offset_of!(CapabilityBlock, max_tokens_per_stream), 48);
        assert_eq!(offset_of!(CapabilityBlock, mdts_bytes), 52);
        assert_eq!(offset_of!(CapabilityBlock, pages_features), 56);
        assert_eq!(offset_of!(CapabilityBlock, reserved), 57);
        let b = cap().to_bytes();
        assert_eq!(&b[0..4], b"ICSD");
        assert_eq!(b[4..6], [1, 0]);
        assert_eq!(b[6..8], [3, 0]);
        assert_eq!(b[8..12], 16384u32.to_le_bytes());
        assert_eq!(b[40..48], (1u64 << 30).to_le_bytes());
        assert_eq!(b[52..56], (1u32 << 20).to_le_bytes());
        assert!(cap().supports(Method::SPARF));
        assert!(!cap().supports(Method(2)));
    }

    #[test]
    fn plain_ssd_is_not_instcsd() {
        assert_eq!(
            CapabilityBlock::parse(&[0; 128]),
            Err(ProtoError::NotInstCsd)
        );
        let mut b = cap().to_bytes();
        b[4] = 2;
        assert_eq!(CapabilityBlock::parse(&b), Err(ProtoError::NotInstCsd));
        assert!(matches!(
            CapabilityBlock::parse(&[0; 64]),
            Err(ProtoError::Length { .. })
        ));
        let id = IdentifyController::from_bytes(&[0; 4096]).unwrap();
        assert_eq!(id.capability, None);
        assert_eq!(id.instcsd(), Err(ProtoError::NotInstCsd));
    }

    #[test]
    fn controller_layout() {
        let id = IdentifyController::new(
            0x1b36,
            0x1af4,
            "SN0001",
            "InstCSD sim",
            "0.1.0",
            8,
            Some(cap()),
        )
        .unwrap();
        let b = id.to_bytes();
        assert_eq!(b[0..2], [0x36, 0x1b]);
        assert_eq!(b[2..4], [0xf4, 0x1a]);
        assert_eq!(&b[4..24], b"SN0001              ");
        assert_eq!(&b[24..35], b"InstCSD sim");
        assert_eq!(b[35], b' ');
        assert_eq!(&b[64..72], b"0.1.0   ");
        assert_eq!(b[77], 8);
        assert_eq!(&b[3072..3076], b"ICSD");
        let back = IdentifyController::from_bytes(&b).unwrap();
        assert_eq!(back, id);
        assert_eq!(
            (back.serial(), back.model(), back.firmware()),
            ("SN0001", "InstCSD sim", "0.1.0")
        );
        assert_eq!(back.instcsd(), Ok(&cap()));
        assert!(IdentifyController::from_bytes(&b[..4095]).is_err());
        assert!(id.encode_into(&mut [0u8; 100]).is_err());
    }

    #[test]
    fn ascii_fields_checked() {
        assert!(matches!(
            pad_ascii::<8>("fr", "123456789"),
            Err(ProtoError::InvalidField { field: "fr", .. })
        ));
        assert!(pad_ascii::<8>("fr", "é").is_err());
        assert!(pad_ascii::<8>("fr", "a\nb").is_err());
        assert_eq!(pad_ascii::<4>("x", "ab"), Ok(*b"ab  "));
        assert_eq!(trim_ascii(b"ab\0\0"), "ab");
    }

    proptest! {
        #[test]
        fn capability_round_trip(mut raw in proptest::collection::vec(any::<u8>(), 128)) {
            raw[0..4].copy_from_slice(b"ICSD");
            raw[4..6].copy_from_slice(&1u16.to_le_bytes());
            let c = CapabilityBlock::parse(&raw).unwrap();
            prop_assert_eq!(&c.to_bytes()[..], &raw[..]);
        }

        #[test]
        fn controller_round_trip(vid: u16, ssvid: u16, sn in "[ -~]{0,20}", mn in "[ -~]{0,40}", mdts: u8, has_cap: bool) {
            let id = IdentifyController::new(vid, ssvid, &sn, &mn, "1.0", mdts, has_cap.then(cap)).unwrap();
            let back = IdentifyController::from_bytes(&id.to_bytes()).unwrap();
            prop_assert_eq!(back, id);
            prop_assert_eq!(back.serial(), sn.trim_end());
        }
    }
}
