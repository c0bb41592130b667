//! NVMe over Fabrics commands (opcode 7Fh): Connect, Property Get / Set,
//! the Connect data, the SGL descriptor a fabrics capsule carries, and the
//! controller properties (CAP, VS, CC, CSTS) a fabrics host reads and
//! writes instead of registers.

use crate::wire::{get_u16, get_u32, put_u16, put_u32};
use crate::{Opcode, ProtoError, Sqe, Status};

/// The fabrics command opcode.
pub const OPCODE: Opcode = Opcode(0x7F);
/// Fabrics command type: Property Set.
pub const FCTYPE_PROPERTY_SET: u8 = 0x00;
/// Fabrics command type: Connect.
pub const FCTYPE_CONNECT: u8 = 0x01;
/// Fabrics command type: Property Get.
pub const FCTYPE_PROPERTY_GET: u8 = 0x04;
/// Fabrics command type: Disconnect.
pub const FCTYPE_DISCONNECT: u8 = 0x08;
/// Fabrics command type: Authentication Send.
pub const FCTYPE_AUTH_SEND: u8 = 0x05;
/// Fabrics command type: Authentication Receive.
pub const FCTYPE_AUTH_RECEIVE: u8 = 0x06;
/// Security protocol of NVMe in-band authentication (SECP).
pub const SECP_AUTH: u8 = 0xE9;
/// SPSP0 and SPSP1 of DH-HMAC-CHAP.
pub const SPSP_DHCHAP: [u8; 2] = [0x01, 0x01];
/// Connect response dword 0: authentication required (AUTHREQ.ATR).
pub const AUTHREQ_ATR: u32 = 1 << 17;
/// A command other than Connect and authentication on a queue that has
/// not authenticated (SCT 1, 91h).
pub const AUTHENTICATION_REQUIRED: Status = Status::new(1, 0x91).with_dnr(true);

/// Property: Controller Capabilities (8 bytes).
pub const PROP_CAP: u32 = 0x00;
/// Property: Version (4 bytes).
pub const PROP_VS: u32 = 0x08;
/// Property: Controller Configuration (4 bytes).
pub const PROP_CC: u32 = 0x14;
/// Property: Controller Status (4 bytes).
pub const PROP_CSTS: u32 = 0x1C;

/// Connect status (1/0x80): incompatible format.
pub const CONNECT_INCOMPATIBLE_FORMAT: Status = Status::new(1, 0x80).with_dnr(true);
/// Connect status (1/0x81): controller busy.
pub const CONNECT_CONTROLLER_BUSY: Status = Status::new(1, 0x81).with_dnr(true);
/// Connect status (1/0x82): invalid parameters (dw0 says which).
pub const CONNECT_INVALID_PARAMETERS: Status = Status::new(1, 0x82).with_dnr(true);
/// Connect status (1/0x84): invalid host.
pub const CONNECT_INVALID_HOST: Status = Status::new(1, 0x84).with_dnr(true);
/// Generic status (0/0x0C): command sequence error (a command before
/// Connect, an I/O command before CC.EN, …).
pub const COMMAND_SEQUENCE_ERROR: Status = Status::new(0, 0x0C).with_dnr(true);
/// Generic status (0/0x0D): invalid SGL descriptor (offset or type).
pub const INVALID_SGL_DESCRIPTOR: Status = Status::new(0, 0x0D).with_dnr(true);
/// Generic status (0/0x0E): data SGL length invalid.
pub const DATA_SGL_LENGTH_INVALID: Status = Status::new(0, 0x0E).with_dnr(true);

/// `cntlid` a host puts in the admin Connect for "any controller" (the
/// dynamic controller model).
pub const CNTLID_DYNAMIC: u16 = 0xFFFF;

/// SGL descriptor type byte: data block, offset into the capsule (in-capsule data).
pub const SGL_IN_CAPSULE: u8 = 0x01;
/// SGL descriptor type byte: transport data block, transport-specific
/// (NVMe/TCP: the data moves in R2T / H2CData or C2HData PDUs).
pub const SGL_TRANSPORT: u8 = 0x5A;
/// CDW0 PSDT bits for "SGL for data".
pub const PSDT_SGL: u32 = 0x01 << 14;

/// The SGL descriptor in an SQE's data pointer (bytes 24..40): address,
/// length and type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SglDesc {
    /// Address (the in-capsule data offset for [`SGL_IN_CAPSULE`]).
    pub addr: u64,
    /// Data length.
    pub len: u32,
    /// Descriptor type (high nibble) and subtype (low nibble).
    pub kind: u8,
}

impl SglDesc {
    /// The descriptor of `sqe`.
    pub const fn of(sqe: &Sqe) -> Self {
        Self {
            addr: sqe.prp1,
            len: sqe.prp2 as u32,
            kind: (sqe.prp2 >> 56) as u8,
        }
    }

    /// Writes the descriptor into `sqe` and marks the SQE as using SGLs.
    pub fn put(&self, sqe: &mut Sqe) {
        sqe.prp1 = self.addr;
        sqe.prp2 = u64::from(self.len) | u64::from(self.kind) << 56;
        sqe.cdw0 = (sqe.cdw0 & !(0b11 << 14)) | PSDT_SGL;
    }
}

/// A parsed fabrics command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricsCmd {
    /// Connect (its 1024-byte data is [`ConnectData`]).
    Connect {
        /// Record format (0).
        recfmt: u16,
        /// Queue to create (0: admin).
        qid: u16,
        /// Submission queue size, 0-based.
        sqsize: u16,
        /// Connect attributes.
        cattr: u8,
        /// Keep alive timeout in milliseconds (admin queue).
        kato: u32,
    },
    /// Property Get.
    PropertyGet {
        /// Eight bytes (else four).
        wide: bool,
        /// Property offset.
        offset: u32,
    },
    /// Property Set.
    PropertySet {
        /// Eight bytes (else four).
        wide: bool,
        /// Property offset.
        offset: u32,
        /// The value.
        value: u64,
    },
    /// Disconnect (of this I/O queue).
    Disconnect,
    /// Authentication Send: `tl` bytes of an authentication message.
    AuthSend {
        /// Security protocol (E9h: NVMe in-band authentication).
        secp: u8,
        /// SP specific 0 and 1 (01h, 01h for DH-HMAC-CHAP).
        spsp: [u8; 2],
        /// Transfer length.
        tl: u32,
    },
    /// Authentication Receive: up to `al` bytes of a message back.
    AuthReceive {
        /// Security protocol.
        secp: u8,
        /// SP specific 0 and 1.
        spsp: [u8; 2],
        /// Allocation length.
        al: u32,
    },
    /// Another fabrics command type.
    Other(u8),
}

impl FabricsCmd {
    /// The fabrics command type (SQE byte 4).
    pub const fn fctype(sqe: &Sqe) -> u8 {
        sqe.nsid as u8
    }

    /// Parses a fabrics SQE (opcode 7Fh).
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        if sqe.opcode() != OPCODE {
            return Err(ProtoError::WrongOpcode {
                expected: OPCODE.0,
                actual: sqe.opcode().0,
            });
        }
        let wide = || sqe.cdw10 & 0b111 == 1;
        let size = |field| match sqe.cdw10 & 0b111 {
            0 | 1 => Ok(()),
            v => Err(ProtoError::InvalidField {
                field,
                value: u64::from(v),
            }),
        };
        Ok(match Self::fctype(sqe) {
            FCTYPE_CONNECT => Self::Connect {
                recfmt: sqe.cdw10 as u16,
                qid: (sqe.cdw10 >> 16) as u16,
                sqsize: sqe.cdw11 as u16,
                cattr: (sqe.cdw11 >> 16) as u8,
                kato: sqe.cdw12,
            },
            FCTYPE_PROPERTY_GET => {
                size("attrib")?;
                Self::PropertyGet {
                    wide: wide(),
                    offset: sqe.cdw11,
                }
            }
            FCTYPE_PROPERTY_SET => {
                size("attrib")?;
                Self::PropertySet {
                    wide: wide(),
                    offset: sqe.cdw11,
                    value: u64::from(sqe.cdw12) | u64::from(sqe.cdw13) << 32,
                }
            }
            FCTYPE_DISCONNECT => Self::Disconnect,
            FCTYPE_AUTH_SEND => Self::AuthSend {
                secp: (sqe.cdw10 >> 24) as u8,
                spsp: [(sqe.cdw10 >> 8) as u8, (sqe.cdw10 >> 16) as u8],
                tl: sqe.cdw11,
            },
            FCTYPE_AUTH_RECEIVE => Self::AuthReceive {
                secp: (sqe.cdw10 >> 24) as u8,
                spsp: [(sqe.cdw10 >> 8) as u8, (sqe.cdw10 >> 16) as u8],
                al: sqe.cdw11,
            },
            other => Self::Other(other),
        })
    }

    /// The SQE of this command (cid 0, no data pointer).
    pub fn to_sqe(&self) -> Sqe {
        let mut s = Sqe::new(OPCODE);
        match *self {
            Self::Connect {
                recfmt,
                qid,
                sqsize,
                cattr,
                kato,
            } => {
                s.nsid = u32::from(FCTYPE_CONNECT);
                s.cdw10 = u32::from(recfmt) | u32::from(qid) << 16;
                s.cdw11 = u32::from(sqsize) | u32::from(cattr) << 16;
                s.cdw12 = kato;
            }
            Self::PropertyGet { wide, offset } => {
                s.nsid = u32::from(FCTYPE_PROPERTY_GET);
                s.cdw10 = u32::from(wide);
                s.cdw11 = offset;
            }
            Self::PropertySet {
                wide,
                offset,
                value,
            } => {
                s.nsid = u32::from(FCTYPE_PROPERTY_SET);
                s.cdw10 = u32::from(wide);
                s.cdw11 = offset;
                s.cdw12 = value as u32;
                s.cdw13 = (value >> 32) as u32;
            }
            Self::Disconnect => s.nsid = u32::from(FCTYPE_DISCONNECT),
            Self::AuthSend { secp, spsp, tl } | Self::AuthReceive { secp, spsp, al: tl } => {
                let send = matches!(self, Self::AuthSend { .. });
                s.nsid = u32::from(if send {
                    FCTYPE_AUTH_SEND
                } else {
                    FCTYPE_AUTH_RECEIVE
                });
                s.cdw10 =
                    u32::from(spsp[0]) << 8 | u32::from(spsp[1]) << 16 | u32::from(secp) << 24;
                s.cdw11 = tl;
            }
            Self::Other(t) => s.nsid = u32::from(t),
        }
        s
    }
}

/// The 1024-byte data of a Connect command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectData {
    /// Host identifier.
    pub hostid: [u8; 16],
    /// Controller id (admin: [`CNTLID_DYNAMIC`]; I/O: the admin's).
    pub cntlid: u16,
    /// Subsystem NQN (NUL-padded).
    pub subnqn: [u8; 256],
    /// Host NQN (NUL-padded).
    pub hostnqn: [u8; 256],
}

impl ConnectData {
    /// Wire size.
    pub const SIZE: usize = 1024;
    /// Offset of SUBNQN (reported in a Connect Invalid Parameters dw0).
    pub const SUBNQN_OFFSET: u16 = 256;
    /// Offset of HOSTNQN.
    pub const HOSTNQN_OFFSET: u16 = 512;

    /// Builds the data (NQNs longer than 223 bytes are refused).
    pub fn new(
        hostid: [u8; 16],
        cntlid: u16,
        subnqn: &str,
        hostnqn: &str,
    ) -> Result<Self, ProtoError> {
        let nqn = |field, s: &str| -> Result<[u8; 256], ProtoError> {
            if s.is_empty() || s.len() > 223 {
                return Err(ProtoError::InvalidField {
                    field,
                    value: s.len() as u64,
                });
            }
            let mut a = [0u8; 256];
            a[..s.len()].copy_from_slice(s.as_bytes());
            Ok(a)
        };
        Ok(Self {
            hostid,
            cntlid,
            subnqn: nqn("subnqn", subnqn)?,
            hostnqn: nqn("hostnqn", hostnqn)?,
        })
    }

    /// Decodes exactly 1024 bytes.
    pub fn from_bytes(b: &[u8]) -> Result<Self, ProtoError> {
        crate::wire::check_len(b, Self::SIZE)?;
        let mut d = Self {
            hostid: [0; 16],
            cntlid: get_u16(b, 16),
            subnqn: [0; 256],
            hostnqn: [0; 256],
        };
        d.hostid.copy_from_slice(&b[..16]);
        d.subnqn.copy_from_slice(&b[256..512]);
        d.hostnqn.copy_from_slice(&b[512..768]);
        Ok(d)
    }

    /// Encodes.
    pub fn to_bytes(&self) -> [u8; 1024] {
        let mut b = [0u8; 1024];
        b[..16].copy_from_slice(&self.hostid);
        put_u16(&mut b, 16, self.cntlid);
        b[256..512].copy_from_slice(&self.subnqn);
        b[512..768].copy_from_slice(&self.hostnqn);
        b
    }

    /// SUBNQN up to its first NUL (`None` if not UTF-8).
    pub fn subnqn(&self) -> Option<&str> {
        nul_str(&self.subnqn)
    }

    /// HOSTNQN up to its first NUL (`None` if not UTF-8).
    pub fn hostnqn(&self) -> Option<&str> {
        nul_str(&self.hostnqn)
    }
}

fn nul_str(b: &[u8]) -> Option<&str> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    core::str::from_utf8(&b[..end]).ok()
}

/// The dw0 of a Connect Invalid Parameters completion: which attribute
/// (`data`: in the Connect data, else in the SQE) at which byte offset.
pub const fn invalid_parameter(data: bool, offset: u16) -> u32 {
    (data as u32) << 16 | offset as u32
}

/// The fields of Identify Controller that a fabrics controller adds or
/// changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricsIdentify<'a> {
    /// The controller id Connect returned.
    pub cntlid: u16,
    /// Version (as the VS property).
    pub ver: u32,
    /// Keep alive granularity in 100 ms units (non-zero: fabrics hosts
    /// require keep-alive support).
    pub kas: u16,
    /// Maximum outstanding commands per queue.
    pub maxcmd: u16,
    /// I/O queue command capsule size in 16-byte units.
    pub ioccsz: u32,
    /// The subsystem NQN.
    pub subnqn: &'a str,
}

impl FabricsIdentify<'_> {
    /// Writes these fields into a 4096-byte Identify Controller page; every
    /// other field is left as the device wrote it, except those a fabrics
    /// controller must not advertise (AERs, optional admin commands and
    /// log pages it does not serve, volatile write cache).
    pub fn patch(&self, page: &mut [u8]) -> Result<(), ProtoError> {
        crate::wire::check_len(page, 4096)?;
        page[76] = 0; // CMIC: one controller, no ANA.
        put_u16(page, 78, self.cntlid);
        put_u32(page, 80, self.ver);
        put_u32(page, 92, 0); // OAES: no asynchronous events.
        put_u32(page, 96, 0); // CTRATT.
        put_u16(page, 256, 0); // OACS.
        page[259] = 0; // AERL.
        page[261] = 0; // LPA: no effects log, no extended data.
        put_u16(page, 320, self.kas);
        page[512] = 0x66; // SQES: 64-byte entries.
        page[513] = 0x44; // CQES: 16-byte entries.
        put_u16(page, 514, self.maxcmd);
        put_u32(page, 516, 1); // NN: one namespace.
        put_u16(page, 520, 0); // ONCS: Read / Write only.
        page[525] = 0; // VWC: none (no Flush needed).
        put_u32(page, 536, 1); // SGLS: SGLs supported, no alignment rule.
        page[768..1024].fill(0);
        let n = self.subnqn.len().min(223);
        page[768..768 + n].copy_from_slice(&self.subnqn.as_bytes()[..n]);
        put_u32(page, 1792, self.ioccsz);
        put_u32(page, 1796, 1); // IORCSZ: a 16-byte CQE.
        put_u16(page, 1800, 0); // ICDOFF.
        page[1802] = 0; // FCATT: dynamic controller model.
        page[1803] = 1; // MSDBD: one SGL descriptor.
        Ok(())
    }
}

/// Reads the fields [`FabricsIdentify::patch`] writes: cntlid, KAS,
/// IOCCSZ, SGLS (a host learns its in-capsule size from IOCCSZ).
pub fn identify_fabrics_fields(page: &[u8]) -> Result<(u16, u16, u32, u32), ProtoError> {
    crate::wire::check_len(page, 4096)?;
    Ok((
        get_u16(page, 78),
        get_u16(page, 320),
        get_u32(page, 1792),
        get_u32(page, 536),
    ))
}

/// CAP: MQES (0-based), CQR, timeout in 500 ms units, NVM command set,
/// 4 KiB pages.
pub const fn cap(mqes: u16, timeout_500ms: u8) -> u64 {
    mqes as u64 | 1 << 16 | (timeout_500ms as u64) << 24 | 1 << 37
}

/// Encodes a 64-bit property value into a CQE's dw0 / dw1.
pub const fn property_dwords(value: u64) -> (u32, u32) {
    (value as u32, (value >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        for c in [
            FabricsCmd::Connect {
                recfmt: 0,
                qid: 3,
                sqsize: 127,
                cattr: 0,
                kato: 5000,
            },
            FabricsCmd::PropertyGet {
                wide: true,
                offset: PROP_CAP,
            },
            FabricsCmd::PropertySet {
                wide: false,
                offset: PROP_CC,
                value: 0x46_0001,
            },
            FabricsCmd::Disconnect,
        ] {
            let s = c.to_sqe();
            let back = Sqe::from_bytes(&s.to_bytes()).unwrap();
            assert_eq!(FabricsCmd::parse(&back).unwrap(), c);
        }
        let mut s = FabricsCmd::PropertyGet {
            wide: false,
            offset: 0,
        }
        .to_sqe();
        s.cdw10 = 5;
        assert!(FabricsCmd::parse(&s).is_err(), "size 5 is reserved");
        assert!(FabricsCmd::parse(&Sqe::new(Opcode(0x06))).is_err());
    }

    #[test]
    fn connect_data_round_trips_and_checks_nqns() {
        let d = ConnectData::new([7; 16], CNTLID_DYNAMIC, "nqn.a:sub", "nqn.b:host").unwrap();
        let back = ConnectData::from_bytes(&d.to_bytes()).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.subnqn(), Some("nqn.a:sub"));
        assert_eq!(back.hostnqn(), Some("nqn.b:host"));
        assert!(ConnectData::new([0; 16], 1, "", "h").is_err());
        assert!(ConnectData::new([0; 16], 1, &"x".repeat(224), "h").is_err());
        assert!(ConnectData::from_bytes(&[0u8; 1000]).is_err());
    }

    #[test]
    fn sgl_descriptor_in_the_sqe() {
        let mut s = Sqe::new(Opcode(0x02));
        let d = SglDesc {
            addr: 0,
            len: 8192,
            kind: SGL_TRANSPORT,
        };
        d.put(&mut s);
        assert_eq!(s.psdt(), 1);
        let back = Sqe::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(SglDesc::of(&back), d);
    }

    #[test]
    fn identify_patch_sets_the_fabrics_fields() {
        let mut page = [0xAAu8; 4096];
        FabricsIdentify {
            cntlid: 9,
            ver: 0x0001_0300,
            kas: 10,
            maxcmd: 128,
            ioccsz: 516,
            subnqn: "nqn.2026-11.io.instinfer:csd",
        }
        .patch(&mut page)
        .unwrap();
        assert_eq!(identify_fabrics_fields(&page).unwrap(), (9, 10, 516, 1));
        assert_eq!(&page[768..796], b"nqn.2026-11.io.instinfer:csd");
        assert_eq!(page[796], 0);
        assert_eq!(page[3072], 0xAA, "the vendor area is kept");
        assert_eq!(cap(127, 10) & 0xFFFF, 127);
    }
}
