//! NVMe/TCP protocol data units (the NVMe over Fabrics TCP transport
//! binding, NVMe TCP Transport Specification 1.0).
//!
//! Every PDU starts with the 8-byte common header ([`CommonHeader`]): type,
//! flags, header length (HLEN), data offset (PDO) and total length (PLEN).
//! The PDU-specific header follows; with header digests on, a CRC32C of
//! the header comes after it; then padding up to PDO, the data, and (with
//! data digests on) a CRC32C of the data.
//!
//! [`Pdu`] is the decoded header of every PDU type a host or controller
//! sends; [`Pdu::decode`] checks one whole received PDU (lengths, flags,
//! offsets, digests) and [`Pdu::encode_header`] builds the bytes that go
//! before a PDU's data. Framing (reading 8 bytes, then `PLEN - 8`) is the
//! caller's: [`CommonHeader::parse`] tells how much follows and refuses
//! lengths above the caller's limit before anything is buffered.

use crate::wire::{get_u16, get_u32, put_u16, put_u32};
use crate::{Cqe, Sqe};

/// PDU type: Initialize Connection Request (host → controller).
pub const ICREQ: u8 = 0x00;
/// PDU type: Initialize Connection Response.
pub const ICRESP: u8 = 0x01;
/// PDU type: Host to Controller Terminate Connection Request.
pub const H2C_TERM_REQ: u8 = 0x02;
/// PDU type: Controller to Host Terminate Connection Request.
pub const C2H_TERM_REQ: u8 = 0x03;
/// PDU type: Command Capsule.
pub const CAPSULE_CMD: u8 = 0x04;
/// PDU type: Response Capsule.
pub const CAPSULE_RESP: u8 = 0x05;
/// PDU type: Host to Controller Data.
pub const H2C_DATA: u8 = 0x06;
/// PDU type: Controller to Host Data.
pub const C2H_DATA: u8 = 0x07;
/// PDU type: Ready to Transfer.
pub const R2T: u8 = 0x09;

/// Flag: a header digest follows the PDU header.
pub const FLAG_HDGST: u8 = 0x01;
/// Flag: a data digest follows the PDU data.
pub const FLAG_DDGST: u8 = 0x02;
/// Flag (H2CData, C2HData): the last data PDU of the transfer.
pub const FLAG_LAST_PDU: u8 = 0x04;
/// Flag (C2HData): the command succeeded, no response capsule follows.
pub const FLAG_SUCCESS: u8 = 0x08;

/// Length of a digest (CRC32C).
pub const DIGEST: usize = 4;
/// Largest PDU header (ICReq / ICResp).
pub const MAX_HEADER: usize = 128;
/// The well-known NVMe/TCP port.
pub const PORT: u16 = 4420;

/// Fatal error status (FES) of a terminate request: invalid header field.
pub const FES_INVALID_HEADER: u16 = 0x01;
/// FES: PDU sequence error.
pub const FES_SEQUENCE: u16 = 0x02;
/// FES: header digest error.
pub const FES_HEADER_DIGEST: u16 = 0x03;
/// FES: data transfer out of range.
pub const FES_DATA_RANGE: u16 = 0x04;
/// FES: R2T limit / data limit exceeded.
pub const FES_DATA_LIMIT: u16 = 0x05;
/// FES: unsupported parameter.
pub const FES_UNSUPPORTED: u16 = 0x06;

const CASTAGNOLI: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// CRC32C (Castagnoli) of `bytes`, the NVMe/TCP digest; on the wire it is
/// stored little-endian.
pub fn crc32c(bytes: &[u8]) -> u32 {
    CASTAGNOLI.checksum(bytes)
}

/// Which digests a connection carries (negotiated by ICReq / ICResp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Digests {
    /// CRC32C after every PDU header (except ICReq / ICResp).
    pub header: bool,
    /// CRC32C after every PDU's data.
    pub data: bool,
}

impl Digests {
    /// From the ICReq / ICResp DGST byte.
    pub const fn from_byte(b: u8) -> Self {
        Self {
            header: b & 1 != 0,
            data: b & 2 != 0,
        }
    }

    /// The ICReq / ICResp DGST byte.
    pub const fn to_byte(self) -> u8 {
        self.header as u8 | (self.data as u8) << 1
    }
}

/// A malformed or unacceptable PDU. Each maps to the fatal error status of
/// the terminate request that answers it ([`TcpError::fes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpError {
    /// A PDU type this side never receives (or an unknown one).
    UnknownType(u8),
    /// HLEN is not the length of this PDU type's header.
    HeaderLength {
        /// PDU type.
        pdu_type: u8,
        /// HLEN received.
        hlen: u8,
    },
    /// PLEN is shorter than the header, or longer than the limit.
    PduLength {
        /// PLEN received.
        plen: u32,
        /// The limit in force.
        limit: u32,
    },
    /// PDO does not lie between the header and the end of the PDU.
    DataOffset {
        /// PDO received.
        pdo: u8,
    },
    /// A digest flag disagrees with what the connection negotiated, or a
    /// flag not defined for the type is set.
    Flags {
        /// Flags received.
        flags: u8,
    },
    /// The header digest does not match.
    HeaderDigest,
    /// The data digest does not match.
    DataDigest,
    /// A field holds a value the receiver does not support (PFV, …).
    Unsupported(&'static str),
    /// A data PDU's DATAL disagrees with the bytes it carries.
    DataLength {
        /// DATAL in the header.
        datal: u32,
        /// Bytes carried.
        carried: usize,
    },
}

impl TcpError {
    /// The fatal error status a terminate request reports for this error.
    pub const fn fes(&self) -> u16 {
        match self {
            Self::HeaderDigest => FES_HEADER_DIGEST,
            // A data digest error has no FES of its own; the connection
            // ends as for a header digest error.
            Self::DataDigest => FES_HEADER_DIGEST,
            Self::PduLength { .. } => FES_DATA_LIMIT,
            Self::Unsupported(_) => FES_UNSUPPORTED,
            Self::DataLength { .. } => FES_DATA_RANGE,
            _ => FES_INVALID_HEADER,
        }
    }
}

impl core::fmt::Display for TcpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::UnknownType(t) => write!(f, "unexpected PDU type {t:#04x}"),
            Self::HeaderLength { pdu_type, hlen } => {
                write!(f, "PDU type {pdu_type:#04x} with header length {hlen}")
            }
            Self::PduLength { plen, limit } => {
                write!(f, "PDU length {plen} outside the header..{limit} range")
            }
            Self::DataOffset { pdo } => write!(f, "data offset {pdo} outside the PDU"),
            Self::Flags { flags } => write!(f, "PDU flags {flags:#04x} not valid here"),
            Self::HeaderDigest => f.write_str("header digest mismatch"),
            Self::DataDigest => f.write_str("data digest mismatch"),
            Self::Unsupported(what) => write!(f, "unsupported {what}"),
            Self::DataLength { datal, carried } => {
                write!(f, "DATAL {datal} but {carried} data bytes carried")
            }
        }
    }
}

/// The 8-byte header every PDU starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommonHeader {
    /// PDU type.
    pub pdu_type: u8,
    /// Flags (`FLAG_*`).
    pub flags: u8,
    /// Header length (common + PDU-specific, no digest).
    pub hlen: u8,
    /// Offset of the data from the PDU start (0: no data).
    pub pdo: u8,
    /// Total PDU length.
    pub plen: u32,
}

impl CommonHeader {
    /// Wire size.
    pub const SIZE: usize = 8;

    /// Decodes the first 8 bytes of a PDU and checks that its type is
    /// known, its HLEN fits its type and its PLEN is between the header
    /// and `max_plen`: the caller may then read `plen - 8` more bytes.
    pub fn parse(b: &[u8; 8], max_plen: u32) -> Result<Self, TcpError> {
        let h = Self {
            pdu_type: b[0],
            flags: b[1],
            hlen: b[2],
            pdo: b[3],
            plen: get_u32(b, 4),
        };
        let want = header_len(h.pdu_type).ok_or(TcpError::UnknownType(h.pdu_type))?;
        if usize::from(h.hlen) != want {
            return Err(TcpError::HeaderLength {
                pdu_type: h.pdu_type,
                hlen: h.hlen,
            });
        }
        if h.plen < u32::from(h.hlen) || h.plen > max_plen {
            return Err(TcpError::PduLength {
                plen: h.plen,
                limit: max_plen,
            });
        }
        Ok(h)
    }

    fn put(&self, b: &mut [u8]) {
        b[0] = self.pdu_type;
        b[1] = self.flags;
        b[2] = self.hlen;
        b[3] = self.pdo;
        put_u32(b, 4, self.plen);
    }
}

/// HLEN of each PDU type.
pub const fn header_len(pdu_type: u8) -> Option<usize> {
    match pdu_type {
        ICREQ | ICRESP => Some(128),
        H2C_TERM_REQ | C2H_TERM_REQ | CAPSULE_RESP | H2C_DATA | C2H_DATA | R2T => Some(24),
        CAPSULE_CMD => Some(72),
        _ => None,
    }
}

/// The decoded header of one PDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pdu {
    /// Initialize Connection Request.
    IcReq {
        /// PDU format version (0).
        pfv: u16,
        /// Host PDU data alignment (dwords − 1).
        hpda: u8,
        /// Digests the host asks for.
        digests: Digests,
        /// Maximum R2Ts outstanding per command (0-based).
        maxr2t: u32,
    },
    /// Initialize Connection Response.
    IcResp {
        /// PDU format version (0).
        pfv: u16,
        /// Controller PDU data alignment (dwords − 1).
        cpda: u8,
        /// Digests the connection will carry.
        digests: Digests,
        /// Largest H2CData the controller takes (MAXH2CDATA).
        maxdata: u32,
    },
    /// A terminate connection request.
    TermReq {
        /// `true` for H2CTermReq, `false` for C2HTermReq.
        from_host: bool,
        /// Fatal error status.
        fes: u16,
        /// Fatal error information (the offending byte offset, …).
        fei: u32,
    },
    /// A command capsule: the SQE (its data, if in the capsule, follows).
    CapsuleCmd(Sqe),
    /// A response capsule: the CQE.
    CapsuleResp(Cqe),
    /// Host data for a command, answering an R2T.
    H2CData {
        /// The command's cid.
        cccid: u16,
        /// The transfer tag of the R2T.
        ttag: u16,
        /// Offset of this PDU's data in the command's data.
        datao: u32,
        /// Bytes of data carried.
        datal: u32,
        /// LAST_PDU flag.
        last: bool,
    },
    /// Controller data for a command.
    C2HData {
        /// The command's cid.
        cccid: u16,
        /// Offset of this PDU's data in the command's data.
        datao: u32,
        /// Bytes of data carried.
        datal: u32,
        /// LAST_PDU flag.
        last: bool,
        /// SUCCESS flag (no response capsule follows).
        success: bool,
    },
    /// Ready to transfer: the controller asks for host data.
    R2T {
        /// The command's cid.
        cccid: u16,
        /// Transfer tag to echo in the H2CData PDUs.
        ttag: u16,
        /// Offset of the requested range.
        r2to: u32,
        /// Length of the requested range.
        r2tl: u32,
    },
}

impl Pdu {
    /// The PDU type byte.
    pub const fn pdu_type(&self) -> u8 {
        match self {
            Self::IcReq { .. } => ICREQ,
            Self::IcResp { .. } => ICRESP,
            Self::TermReq {
                from_host: true, ..
            } => H2C_TERM_REQ,
            Self::TermReq { .. } => C2H_TERM_REQ,
            Self::CapsuleCmd(_) => CAPSULE_CMD,
            Self::CapsuleResp(_) => CAPSULE_RESP,
            Self::H2CData { .. } => H2C_DATA,
            Self::C2HData { .. } => C2H_DATA,
            Self::R2T { .. } => R2T,
        }
    }

    /// Whether digests apply (every type but ICReq / ICResp; a terminate
    /// request carries none either, so that it is readable whatever went
    /// wrong).
    const fn digested(pdu_type: u8) -> bool {
        !matches!(pdu_type, ICREQ | ICRESP | H2C_TERM_REQ | C2H_TERM_REQ)
    }

    /// Checks one whole received PDU (`pdu` holds all `PLEN` bytes, the
    /// common header included) and returns its header and data.
    /// `digests` is what the connection negotiated (none before ICResp).
    pub fn decode(pdu: &[u8], digests: Digests) -> Result<(Pdu, &[u8]), TcpError> {
        match Self::decode_with_data_digest(pdu, digests)? {
            (p, data, true) => Ok((p, data)),
            (_, _, false) => Err(TcpError::DataDigest),
        }
    }

    /// [`Self::decode`], except that a data digest mismatch is not an
    /// error: the PDU comes back with `false`, so a receiver can fail the
    /// one command whose data it carried and keep the connection (the
    /// header, checked by its own digest, is sound).
    pub fn decode_with_data_digest(
        pdu: &[u8],
        digests: Digests,
    ) -> Result<(Pdu, &[u8], bool), TcpError> {
        let mut ch = [0u8; 8];
        let first = pdu.get(..8).ok_or(TcpError::PduLength {
            plen: pdu.len() as u32,
            limit: u32::MAX,
        })?;
        ch.copy_from_slice(first);
        let h = CommonHeader::parse(&ch, u32::MAX)?;
        if h.plen as usize != pdu.len() {
            return Err(TcpError::PduLength {
                plen: h.plen,
                limit: pdu.len() as u32,
            });
        }
        let hlen = usize::from(h.hlen);
        let dig = Self::digested(h.pdu_type);
        let hd = dig && digests.header;
        let dd = dig && digests.data;
        let allowed = match h.pdu_type {
            H2C_DATA => FLAG_HDGST | FLAG_DDGST | FLAG_LAST_PDU,
            C2H_DATA => FLAG_HDGST | FLAG_DDGST | FLAG_LAST_PDU | FLAG_SUCCESS,
            CAPSULE_CMD => FLAG_HDGST | FLAG_DDGST,
            CAPSULE_RESP | R2T => FLAG_HDGST,
            _ => 0,
        };
        if h.flags & !allowed != 0 || (h.flags & FLAG_HDGST != 0) != hd {
            return Err(TcpError::Flags { flags: h.flags });
        }
        let header_end = hlen + if hd { DIGEST } else { 0 };
        if pdu.len() < header_end {
            return Err(TcpError::PduLength {
                plen: h.plen,
                limit: header_end as u32,
            });
        }
        if hd && get_u32(pdu, hlen) != crc32c(&pdu[..hlen]) {
            return Err(TcpError::HeaderDigest);
        }
        let is_term = matches!(h.pdu_type, H2C_TERM_REQ | C2H_TERM_REQ);
        let mut data_ok = true;
        let data: &[u8] = if is_term {
            // The offending PDU header, if any, follows a terminate
            // request's header (PDO stays 0).
            &pdu[hlen..]
        } else if h.pdo == 0 {
            if pdu.len() != header_end || h.flags & FLAG_DDGST != 0 {
                return Err(TcpError::DataOffset { pdo: h.pdo });
            }
            &[]
        } else {
            let pdo = usize::from(h.pdo);
            if dd != (h.flags & FLAG_DDGST != 0) {
                return Err(TcpError::Flags { flags: h.flags });
            }
            let tail = if dd { DIGEST } else { 0 };
            if pdo < header_end || pdo + tail > pdu.len() {
                return Err(TcpError::DataOffset { pdo: h.pdo });
            }
            let data = &pdu[pdo..pdu.len() - tail];
            data_ok = !dd || get_u32(pdu, pdu.len() - DIGEST) == crc32c(data);
            data
        };
        let b = &pdu[..hlen];
        if matches!(h.pdu_type, ICREQ | ICRESP) && b[11] & !3 != 0 {
            return Err(TcpError::Unsupported("digest bits"));
        }
        let p =
            match h.pdu_type {
                ICREQ => Pdu::IcReq {
                    pfv: get_u16(b, 8),
                    hpda: b[10],
                    digests: Digests::from_byte(b[11]),
                    maxr2t: get_u32(b, 12),
                },
                ICRESP => Pdu::IcResp {
                    pfv: get_u16(b, 8),
                    cpda: b[10],
                    digests: Digests::from_byte(b[11]),
                    maxdata: get_u32(b, 12),
                },
                H2C_TERM_REQ | C2H_TERM_REQ => Pdu::TermReq {
                    from_host: h.pdu_type == H2C_TERM_REQ,
                    fes: get_u16(b, 8),
                    fei: get_u32(b, 10),
                },
                CAPSULE_CMD => Pdu::CapsuleCmd(Sqe::from_bytes(&b[8..72]).map_err(|_| {
                    TcpError::HeaderLength {
                        pdu_type: CAPSULE_CMD,
                        hlen: h.hlen,
                    }
                })?),
                CAPSULE_RESP => Pdu::CapsuleResp(Cqe::from_bytes(&b[8..24]).map_err(|_| {
                    TcpError::HeaderLength {
                        pdu_type: CAPSULE_RESP,
                        hlen: h.hlen,
                    }
                })?),
                H2C_DATA | C2H_DATA => {
                    let (cccid, ttag, datao, datal) = (
                        get_u16(b, 8),
                        get_u16(b, 10),
                        get_u32(b, 12),
                        get_u32(b, 16),
                    );
                    if datal as usize != data.len() || datal == 0 {
                        return Err(TcpError::DataLength {
                            datal,
                            carried: data.len(),
                        });
                    }
                    let last = h.flags & FLAG_LAST_PDU != 0;
                    if h.pdu_type == H2C_DATA {
                        Pdu::H2CData {
                            cccid,
                            ttag,
                            datao,
                            datal,
                            last,
                        }
                    } else {
                        let success = h.flags & FLAG_SUCCESS != 0;
                        if success && !last {
                            return Err(TcpError::Flags { flags: h.flags });
                        }
                        Pdu::C2HData {
                            cccid,
                            datao,
                            datal,
                            last,
                            success,
                        }
                    }
                }
                R2T => Pdu::R2T {
                    cccid: get_u16(b, 8),
                    ttag: get_u16(b, 10),
                    r2to: get_u32(b, 12),
                    r2tl: get_u32(b, 16),
                },
                other => return Err(TcpError::UnknownType(other)),
            };
        if !matches!(
            p,
            Pdu::CapsuleCmd(_) | Pdu::H2CData { .. } | Pdu::C2HData { .. } | Pdu::TermReq { .. }
        ) && !data.is_empty()
        {
            return Err(TcpError::DataOffset { pdo: h.pdo });
        }
        Ok((p, data, data_ok))
    }

    /// The bytes that precede `data_len` bytes of data in this PDU (common
    /// header, PDU header, header digest, no padding); the sender appends
    /// the data and, when [`Pdu::data_digest_len`] says so, its digest
    /// ([`crc32c`], little-endian).
    pub fn encode_header(&self, digests: Digests, data_len: usize) -> HeaderBytes {
        let t = self.pdu_type();
        let hlen = header_len(t).unwrap_or(MAX_HEADER);
        let dig = Self::digested(t);
        let hd = dig && digests.header;
        let has_data = data_len > 0;
        let dd = dig && digests.data && has_data;
        let header_end = hlen + if hd { DIGEST } else { 0 };
        let mut flags = (hd as u8) | (dd as u8) << 1;
        let mut out = HeaderBytes {
            bytes: [0; MAX_HEADER + DIGEST],
            len: header_end,
        };
        let b = &mut out.bytes;
        match *self {
            // The two share a layout: PFV, the data alignment, the
            // digests, then MAXR2T (request) or MAXH2CDATA (response).
            Pdu::IcReq {
                pfv,
                hpda: pda,
                digests,
                maxr2t: max,
            }
            | Pdu::IcResp {
                pfv,
                cpda: pda,
                digests,
                maxdata: max,
            } => {
                put_u16(b, 8, pfv);
                b[10] = pda;
                b[11] = digests.to_byte();
                put_u32(b, 12, max);
            }
            Pdu::TermReq { fes, fei, .. } => {
                put_u16(b, 8, fes);
                put_u32(b, 10, fei);
            }
            Pdu::CapsuleCmd(sqe) => b[8..72].copy_from_slice(&sqe.to_bytes()),
            Pdu::CapsuleResp(cqe) => b[8..24].copy_from_slice(&cqe.to_bytes()),
            Pdu::H2CData {
                cccid,
                ttag,
                datao,
                datal,
                last,
            } => {
                put_u16(b, 8, cccid);
                put_u16(b, 10, ttag);
                put_u32(b, 12, datao);
                put_u32(b, 16, datal);
                flags |= (last as u8) << 2;
            }
            Pdu::C2HData {
                cccid,
                datao,
                datal,
                last,
                success,
            } => {
                put_u16(b, 8, cccid);
                put_u32(b, 12, datao);
                put_u32(b, 16, datal);
                flags |= (last as u8) << 2 | (success as u8) << 3;
            }
            Pdu::R2T {
                cccid,
                ttag,
                r2to,
                r2tl,
            } => {
                put_u16(b, 8, cccid);
                put_u16(b, 10, ttag);
                put_u32(b, 12, r2to);
                put_u32(b, 16, r2tl);
            }
        }
        let plen = header_end + data_len + if dd { DIGEST } else { 0 };
        CommonHeader {
            pdu_type: t,
            flags,
            hlen: hlen as u8,
            pdo: if has_data { header_end as u8 } else { 0 },
            plen: plen as u32,
        }
        .put(b);
        if hd {
            let d = crc32c(&b[..hlen]);
            put_u32(b, hlen, d);
        }
        out
    }

    /// Bytes of data digest this PDU carries after `data_len` data bytes.
    pub fn data_digest_len(&self, digests: Digests, data_len: usize) -> usize {
        if Self::digested(self.pdu_type()) && digests.data && data_len > 0 {
            DIGEST
        } else {
            0
        }
    }
}

/// The encoded header of one PDU ([`Pdu::encode_header`]).
#[derive(Debug, Clone, Copy)]
pub struct HeaderBytes {
    bytes: [u8; MAX_HEADER + DIGEST],
    len: usize,
}

impl HeaderBytes {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests;
