//! The board link: the NVMe traffic of a device core that is not behind a
//! PCIe bus (the firmware under QEMU), carried over a byte stream.
//!
//! The device asks and the host answers, one request at a time: the device
//! fetches the next submission, reads and writes host memory at the bus
//! addresses of the command's PRPs, and posts completions. The bytes of
//! SQEs, CQEs and data buffers are exactly those a PCIe NVMe queue would
//! carry; only the doorbells and DMA engine are replaced by requests.
//!
//! Every request is a 16-byte [`Request`] header, followed by `len` payload
//! bytes for [`Kind::DmaWrite`] (the data) and [`Kind::Complete`] (the
//! 16-byte CQE). Every reply is an 8-byte [`Reply`] header, followed by
//! `len` payload bytes for [`Kind::Fetch`] (the 64-byte SQE) and
//! [`Kind::DmaRead`] (the data). Little-endian throughout.

use crate::error::ProtoError;

/// "ILNK": the magic of [`Kind::Hello`].
pub const MAGIC: u32 = 0x4B4E_4C49;
/// Protocol version.
pub const VERSION: u16 = 1;
/// Largest payload of one request or reply.
pub const MAX_PAYLOAD: u32 = 1 << 20;

/// Request kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Device start: `addr` = magic | version << 32 | board << 48.
    Hello = 1,
    /// The next submission; the host answers when it has one.
    Fetch = 2,
    /// Read `len` bytes of host memory at `addr`.
    DmaRead = 3,
    /// Write the `len` payload bytes to host memory at `addr`.
    DmaWrite = 4,
    /// Post the 16-byte CQE in the payload to completion queue `qid`.
    Complete = 5,
}

impl Kind {
    fn from_u8(v: u8) -> Result<Self, ProtoError> {
        Ok(match v {
            1 => Self::Hello,
            2 => Self::Fetch,
            3 => Self::DmaRead,
            4 => Self::DmaWrite,
            5 => Self::Complete,
            _ => {
                return Err(ProtoError::InvalidField {
                    field: "link.kind",
                    value: u64::from(v),
                });
            }
        })
    }
}

/// A device request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// What is asked.
    pub kind: Kind,
    /// Queue id (Complete).
    pub qid: u16,
    /// Payload length (DmaWrite, Complete) or bytes wanted (DmaRead).
    pub len: u32,
    /// Bus address (DmaRead, DmaWrite) or the Hello word.
    pub addr: u64,
}

impl Request {
    /// Header bytes.
    pub const SIZE: usize = 16;

    /// The Hello of board `board`.
    pub const fn hello(board: u16) -> Self {
        Self {
            kind: Kind::Hello,
            qid: 0,
            len: 0,
            addr: MAGIC as u64 | (VERSION as u64) << 32 | (board as u64) << 48,
        }
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0] = self.kind as u8;
        b[2..4].copy_from_slice(&self.qid.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.addr.to_le_bytes());
        b
    }

    /// Decodes and checks a header: known kind, reserved byte zero, payload
    /// within [`MAX_PAYLOAD`], the CQE length for Complete, and magic and
    /// version for Hello.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Result<Self, ProtoError> {
        let kind = Kind::from_u8(b[0])?;
        if b[1] != 0 {
            return Err(ProtoError::Reserved {
                field: "link.request[1]",
                value: u64::from(b[1]),
            });
        }
        let r = Self {
            kind,
            qid: u16::from_le_bytes([b[2], b[3]]),
            len: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            addr: u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        };
        if r.len > MAX_PAYLOAD {
            return Err(ProtoError::InvalidField {
                field: "link.len",
                value: u64::from(r.len),
            });
        }
        match kind {
            Kind::Complete if r.len != 16 => Err(ProtoError::Length {
                expected: 16,
                actual: r.len as usize,
            }),
            Kind::Hello if r.addr as u32 != MAGIC || (r.addr >> 32) as u16 != VERSION => {
                Err(ProtoError::InvalidField {
                    field: "link.hello",
                    value: r.addr,
                })
            }
            _ => Ok(r),
        }
    }

    /// Payload bytes that follow the header on the wire.
    pub const fn payload_len(&self) -> usize {
        match self.kind {
            Kind::DmaWrite | Kind::Complete => self.len as usize,
            _ => 0,
        }
    }

    /// The board id of a Hello.
    pub const fn board(&self) -> u16 {
        (self.addr >> 48) as u16
    }
}

/// Reply status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ReplyStatus {
    /// Done; for Fetch: a submission follows.
    Ok = 0,
    /// The bus address is not host memory the device may touch.
    BadAddress = 1,
    /// Fetch: no more submissions; the device should stop.
    Shutdown = 2,
}

/// A host reply header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Outcome.
    pub status: ReplyStatus,
    /// Submission queue id (Fetch).
    pub qid: u16,
    /// Payload bytes that follow.
    pub len: u32,
}

impl Reply {
    /// Header bytes.
    pub const SIZE: usize = 8;

    /// A bare status.
    pub const fn status(status: ReplyStatus) -> Self {
        Self {
            status,
            qid: 0,
            len: 0,
        }
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0] = self.status as u8;
        b[2..4].copy_from_slice(&self.qid.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decodes and checks a header.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Result<Self, ProtoError> {
        let status = match b[0] {
            0 => ReplyStatus::Ok,
            1 => ReplyStatus::BadAddress,
            2 => ReplyStatus::Shutdown,
            v => {
                return Err(ProtoError::InvalidField {
                    field: "link.status",
                    value: u64::from(v),
                });
            }
        };
        if b[1] != 0 {
            return Err(ProtoError::Reserved {
                field: "link.reply[1]",
                value: u64::from(b[1]),
            });
        }
        let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if len > MAX_PAYLOAD {
            return Err(ProtoError::InvalidField {
                field: "link.len",
                value: u64::from(len),
            });
        }
        Ok(Self {
            status,
            qid: u16::from_le_bytes([b[2], b[3]]),
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip_and_checks() {
        for r in [
            Request::hello(7),
            Request {
                kind: Kind::DmaRead,
                qid: 0,
                len: 4096,
                addr: 0x1234_5000,
            },
            Request {
                kind: Kind::Complete,
                qid: 1,
                len: 16,
                addr: 0,
            },
        ] {
            assert_eq!(Request::from_bytes(&r.to_bytes()), Ok(r));
        }
        assert_eq!(Request::hello(7).board(), 7);
        let mut b = Request::hello(0).to_bytes();
        b[0] = 9;
        assert!(Request::from_bytes(&b).is_err(), "unknown kind");
        let mut b = Request::hello(0).to_bytes();
        b[8] ^= 1;
        assert!(Request::from_bytes(&b).is_err(), "bad magic");
        let mut b = Request::hello(0).to_bytes();
        b[1] = 1;
        assert!(Request::from_bytes(&b).is_err(), "reserved byte");
        let big = Request {
            kind: Kind::DmaWrite,
            qid: 0,
            len: MAX_PAYLOAD + 1,
            addr: 0,
        };
        assert!(Request::from_bytes(&big.to_bytes()).is_err(), "too long");
        let short_cqe = Request {
            kind: Kind::Complete,
            qid: 0,
            len: 8,
            addr: 0,
        };
        assert!(Request::from_bytes(&short_cqe.to_bytes()).is_err());
    }

    #[test]
    fn reply_round_trip_and_checks() {
        let r = Reply {
            status: ReplyStatus::Ok,
            qid: 1,
            len: 64,
        };
        assert_eq!(Reply::from_bytes(&r.to_bytes()), Ok(r));
        let mut b = r.to_bytes();
        b[0] = 3;
        assert!(Reply::from_bytes(&b).is_err());
        let mut b = r.to_bytes();
        b[4..8].copy_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
        assert!(Reply::from_bytes(&b).is_err());
    }
}
