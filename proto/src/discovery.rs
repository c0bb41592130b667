//! The Discovery Log Page (Log Identifier 70h, NVMe over Fabrics): what a
//! discovery controller (the well-known [`DISCOVERY_NQN`]) tells a host
//! about the subsystems it can reach, as `nvme discover` reads it: a
//! 1024-byte header (generation counter, record count, record format),
//! then one 1024-byte [`DiscoveryEntry`] per subsystem port.

use crate::ProtoError;

/// The discovery subsystem's NQN every host knows.
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";
/// Get Log Page identifier of the Discovery Log Page.
pub const LID_DISCOVERY: u8 = 0x70;
/// Bytes of the header and of each entry.
pub const RECORD_SIZE: usize = 1024;
/// TRTYPE: TCP.
pub const TRTYPE_TCP: u8 = 3;
/// ADRFAM: IPv4.
pub const ADRFAM_IPV4: u8 = 1;
/// ADRFAM: IPv6.
pub const ADRFAM_IPV6: u8 = 2;
/// SUBTYPE: an NVM subsystem.
pub const SUBTYPE_NVM: u8 = 2;
/// SUBTYPE: the discovery subsystem being read (current discovery subsystem).
pub const SUBTYPE_CURRENT_DISCOVERY: u8 = 3;
/// TREQ: a secure channel is not required.
pub const TREQ_NOT_REQUIRED: u8 = 0b10;
/// Identify Controller CNTRLTYPE (byte 111) of a discovery controller.
pub const CNTRLTYPE_DISCOVERY: u8 = 2;

/// One subsystem port a host may connect to; its text fields borrow from
/// the caller (encoding) or the page (parsing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscoveryEntry<'a> {
    /// Transport type ([`TRTYPE_TCP`]).
    pub trtype: u8,
    /// Address family ([`ADRFAM_IPV4`], [`ADRFAM_IPV6`]).
    pub adrfam: u8,
    /// Subsystem type ([`SUBTYPE_NVM`], [`SUBTYPE_CURRENT_DISCOVERY`]).
    pub subtype: u8,
    /// Transport requirements.
    pub treq: u8,
    /// Port id.
    pub portid: u16,
    /// Controller id (FFFFh: dynamic).
    pub cntlid: u16,
    /// Admin queue entries a host may ask for at most.
    pub asqsz: u16,
    /// Entry flags.
    pub eflags: u16,
    /// Transport service id: the TCP port, in ASCII.
    pub trsvcid: &'a str,
    /// The subsystem's NQN.
    pub subnqn: &'a str,
    /// Transport address: the IP address, in ASCII.
    pub traddr: &'a str,
}

const TRSVCID: (usize, usize) = (32, 32);
const SUBNQN: (usize, usize) = (256, 256);
const TRADDR: (usize, usize) = (512, 256);

fn put_text(
    b: &mut [u8],
    (at, len): (usize, usize),
    s: &str,
    field: &'static str,
) -> Result<(), ProtoError> {
    let bytes = s.as_bytes();
    if bytes.len() > len || !s.is_ascii() || bytes.contains(&0) {
        return Err(ProtoError::InvalidField {
            field,
            value: bytes.len() as u64,
        });
    }
    b[at..at + bytes.len()].copy_from_slice(bytes);
    Ok(())
}

fn text<'a>(
    b: &'a [u8],
    (at, len): (usize, usize),
    field: &'static str,
) -> Result<&'a str, ProtoError> {
    let f = &b[at..at + len];
    let end = f.iter().position(|&c| c == 0).unwrap_or(len);
    let s = core::str::from_utf8(&f[..end]).map_err(|e| ProtoError::InvalidField {
        field,
        value: e.valid_up_to() as u64,
    })?;
    Ok(s.trim_end_matches(' '))
}

impl<'a> DiscoveryEntry<'a> {
    /// The wire form (TRSVCID and TRADDR space-padded, SUBNQN NUL-padded).
    pub fn to_bytes(&self) -> Result<[u8; RECORD_SIZE], ProtoError> {
        let mut b = [0u8; RECORD_SIZE];
        b[0] = self.trtype;
        b[1] = self.adrfam;
        b[2] = self.subtype;
        b[3] = self.treq;
        b[4..6].copy_from_slice(&self.portid.to_le_bytes());
        b[6..8].copy_from_slice(&self.cntlid.to_le_bytes());
        b[8..10].copy_from_slice(&self.asqsz.to_le_bytes());
        b[10..12].copy_from_slice(&self.eflags.to_le_bytes());
        b[TRSVCID.0..TRSVCID.0 + TRSVCID.1].fill(b' ');
        put_text(&mut b, TRSVCID, self.trsvcid, "trsvcid")?;
        put_text(&mut b, SUBNQN, self.subnqn, "subnqn")?;
        b[TRADDR.0..TRADDR.0 + TRADDR.1].fill(b' ');
        put_text(&mut b, TRADDR, self.traddr, "traddr")?;
        Ok(b)
    }

    /// Parses one entry.
    pub fn from_bytes(b: &'a [u8]) -> Result<Self, ProtoError> {
        if b.len() < RECORD_SIZE {
            return Err(ProtoError::Length {
                expected: RECORD_SIZE,
                actual: b.len(),
            });
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Ok(Self {
            trtype: b[0],
            adrfam: b[1],
            subtype: b[2],
            treq: b[3],
            portid: u16_at(4),
            cntlid: u16_at(6),
            asqsz: u16_at(8),
            eflags: u16_at(10),
            trsvcid: text(b, TRSVCID, "trsvcid")?,
            subnqn: text(b, SUBNQN, "subnqn")?,
            traddr: text(b, TRADDR, "traddr")?,
        })
    }
}

/// The page's header: generation counter and record count (RECFMT 0).
pub fn header(genctr: u64, numrec: u64) -> [u8; RECORD_SIZE] {
    let mut b = [0u8; RECORD_SIZE];
    b[0..8].copy_from_slice(&genctr.to_le_bytes());
    b[8..16].copy_from_slice(&numrec.to_le_bytes());
    b
}

/// The header's generation counter and record count.
pub fn parse_header(b: &[u8]) -> Result<(u64, u64), ProtoError> {
    if b.len() < 18 {
        return Err(ProtoError::Length {
            expected: 18,
            actual: b.len(),
        });
    }
    let u64_at = |i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(a)
    };
    let recfmt = u16::from_le_bytes([b[16], b[17]]);
    if recfmt != 0 {
        return Err(ProtoError::InvalidField {
            field: "recfmt",
            value: u64::from(recfmt),
        });
    }
    Ok((u64_at(0), u64_at(8)))
}

/// Entry `i` (from 0) of a log page read from its start.
pub fn entry(page: &[u8], i: usize) -> Result<DiscoveryEntry<'_>, ProtoError> {
    let at = i
        .checked_add(1)
        .and_then(|r| r.checked_mul(RECORD_SIZE))
        .ok_or(ProtoError::InvalidField {
            field: "numrec",
            value: i as u64,
        })?;
    let rec = page.get(at..at + RECORD_SIZE).ok_or(ProtoError::Length {
        expected: at + RECORD_SIZE,
        actual: page.len(),
    })?;
    DiscoveryEntry::from_bytes(rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const E: DiscoveryEntry<'static> = DiscoveryEntry {
        trtype: TRTYPE_TCP,
        adrfam: ADRFAM_IPV4,
        subtype: SUBTYPE_NVM,
        treq: TREQ_NOT_REQUIRED,
        portid: 1,
        cntlid: 0xFFFF,
        asqsz: 128,
        eflags: 0,
        trsvcid: "4420",
        subnqn: "nqn.2024-01.io.instinfer:csd",
        traddr: "10.0.0.1",
    };

    #[test]
    fn entries_round_trip_at_their_offsets() {
        let b = E.to_bytes().unwrap();
        assert_eq!(&b[32..36], b"4420");
        assert_eq!(b[36], b' ');
        assert_eq!(&b[512..520], b"10.0.0.1");
        assert_eq!(b[256 + E.subnqn.len()], 0);
        assert_eq!(DiscoveryEntry::from_bytes(&b).unwrap(), E);
        let mut page: Vec<u8> = header(7, 2).to_vec();
        page.extend_from_slice(&b);
        page.extend_from_slice(&b);
        assert_eq!(parse_header(&page).unwrap(), (7, 2));
        assert_eq!(entry(&page, 1).unwrap(), E);
        assert!(entry(&page, 2).is_err());
        assert!(entry(&page, usize::MAX).is_err());
    }

    #[test]
    fn bad_pages_are_refused() {
        let long = std::string::String::from_utf8(std::vec![b'x'; 33]).unwrap();
        assert!(
            DiscoveryEntry {
                trsvcid: &long,
                ..E
            }
            .to_bytes()
            .is_err()
        );
        assert!(DiscoveryEntry { traddr: "é", ..E }.to_bytes().is_err());
        let mut h = header(1, 1);
        assert!(parse_header(&h[..8]).is_err());
        h[16] = 1;
        assert!(parse_header(&h).is_err());
        let mut b = E.to_bytes().unwrap();
        b[256] = 0xFF;
        assert!(DiscoveryEntry::from_bytes(&b).is_err());
        assert!(DiscoveryEntry::from_bytes(&b[..100]).is_err());
    }
}
