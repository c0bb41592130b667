//! DH-HMAC-CHAP messages (NVMe Base 2.x, in-band authentication): what
//! the Authentication Send / Receive fabrics commands carry. Strict
//! parsers (lengths, reserved bytes, identifiers) and encoders into a
//! caller's buffer; no allocation.
//!
//! | message | direction | body after the 6-byte common header |
//! | --- | --- | --- |
//! | AUTH_Negotiate | host → controller | SC_C, the protocol descriptors (hash and DH group lists) |
//! | DH-HMAC-CHAP_Challenge | controller → host | hash, DH group, sequence number, challenge, DH value |
//! | DH-HMAC-CHAP_Reply | host → controller | response, the host's challenge (bidirectional), DH value |
//! | DH-HMAC-CHAP_Success1 | controller → host | the controller's response (bidirectional) |
//! | DH-HMAC-CHAP_Success2 | host → controller | nothing |
//! | AUTH_Failure1 / AUTH_Failure2 | either way | reason code and explanation |

use crate::ProtoError;

/// AUTH-TYPE of the common messages (Negotiate, Failure).
pub const TYPE_COMMON: u8 = 0x00;
/// AUTH-TYPE of the DH-HMAC-CHAP messages.
pub const TYPE_DHCHAP: u8 = 0x01;
/// AUTH-ID of AUTH_Negotiate.
pub const ID_NEGOTIATE: u8 = 0x00;
/// AUTH-ID of DH-HMAC-CHAP_Challenge.
pub const ID_CHALLENGE: u8 = 0x01;
/// AUTH-ID of DH-HMAC-CHAP_Reply.
pub const ID_REPLY: u8 = 0x02;
/// AUTH-ID of DH-HMAC-CHAP_Success1.
pub const ID_SUCCESS1: u8 = 0x03;
/// AUTH-ID of DH-HMAC-CHAP_Success2.
pub const ID_SUCCESS2: u8 = 0x04;
/// AUTH-ID of AUTH_Failure2 (host → controller).
pub const ID_FAILURE2: u8 = 0xF0;
/// AUTH-ID of AUTH_Failure1 (controller → host).
pub const ID_FAILURE1: u8 = 0xF1;
/// The DH-HMAC-CHAP protocol's identifier in a Negotiate descriptor.
pub const PROTOCOL_DHCHAP: u8 = 0x01;
/// Failure reason code: authentication failed.
pub const REASON_FAILED: u8 = 0x01;
/// Reason code explanations.
pub mod explanation {
    /// Authentication failed (wrong response).
    pub const FAILED: u8 = 0x01;
    /// The protocol is not usable.
    pub const NOT_USABLE: u8 = 0x02;
    /// Secure channel concatenation mismatch.
    pub const CONCAT_MISMATCH: u8 = 0x03;
    /// No offered hash function is usable.
    pub const HASH_UNUSABLE: u8 = 0x04;
    /// No offered DH group is usable.
    pub const DHGROUP_UNUSABLE: u8 = 0x05;
    /// A field of the message is wrong.
    pub const INCORRECT_PAYLOAD: u8 = 0x06;
    /// The message came out of order.
    pub const INCORRECT_MESSAGE: u8 = 0x07;
}

/// Bytes of one Negotiate protocol descriptor.
const DESCRIPTOR: usize = 64;
/// Identifier slots of each list in a descriptor.
const LIST: usize = 30;

/// A hash function of DH-HMAC-CHAP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashId {
    /// SHA-256 (id 1).
    Sha256,
    /// SHA-384 (id 2).
    Sha384,
    /// SHA-512 (id 3).
    Sha512,
}

impl HashId {
    /// All, in the order of their ids.
    pub const ALL: [HashId; 3] = [Self::Sha256, Self::Sha384, Self::Sha512];

    /// The identifier on the wire.
    pub const fn id(self) -> u8 {
        match self {
            Self::Sha256 => 1,
            Self::Sha384 => 2,
            Self::Sha512 => 3,
        }
    }

    /// From the identifier.
    pub const fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(Self::Sha256),
            2 => Some(Self::Sha384),
            3 => Some(Self::Sha512),
            _ => None,
        }
    }

    /// Digest length in bytes (the challenge and response length).
    pub const fn len(self) -> usize {
        match self {
            Self::Sha256 => 32,
            Self::Sha384 => 48,
            Self::Sha512 => 64,
        }
    }

    /// Never: every digest has bytes (for clippy's `len` rule).
    pub const fn is_empty(self) -> bool {
        false
    }
}

/// A Diffie-Hellman group of DH-HMAC-CHAP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DhGroup {
    /// No DH exchange (id 0).
    Null,
    /// RFC 7919 ffdhe2048 (id 1).
    Ffdhe2048,
    /// ffdhe3072 (id 2).
    Ffdhe3072,
    /// ffdhe4096 (id 3).
    Ffdhe4096,
    /// ffdhe6144 (id 4).
    Ffdhe6144,
    /// ffdhe8192 (id 5).
    Ffdhe8192,
}

impl DhGroup {
    /// All, in the order of their ids.
    pub const ALL: [DhGroup; 6] = [
        Self::Null,
        Self::Ffdhe2048,
        Self::Ffdhe3072,
        Self::Ffdhe4096,
        Self::Ffdhe6144,
        Self::Ffdhe8192,
    ];

    /// The identifier on the wire.
    pub const fn id(self) -> u8 {
        match self {
            Self::Null => 0,
            Self::Ffdhe2048 => 1,
            Self::Ffdhe3072 => 2,
            Self::Ffdhe4096 => 3,
            Self::Ffdhe6144 => 4,
            Self::Ffdhe8192 => 5,
        }
    }

    /// From the identifier.
    pub const fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Null),
            1 => Some(Self::Ffdhe2048),
            2 => Some(Self::Ffdhe3072),
            3 => Some(Self::Ffdhe4096),
            4 => Some(Self::Ffdhe6144),
            5 => Some(Self::Ffdhe8192),
            _ => None,
        }
    }

    /// Bytes of a public value (the group's modulus length; 0 for null).
    pub const fn value_len(self) -> usize {
        match self {
            Self::Null => 0,
            Self::Ffdhe2048 => 256,
            Self::Ffdhe3072 => 384,
            Self::Ffdhe4096 => 512,
            Self::Ffdhe6144 => 768,
            Self::Ffdhe8192 => 1024,
        }
    }
}

/// A set of identifiers as a bit mask (bit `id`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdSet(pub u8);

impl IdSet {
    /// Whether `id` is in the set.
    pub const fn contains(self, id: u8) -> bool {
        id < 8 && self.0 & (1 << id) != 0
    }

    /// The set with `id` added (ids ≥ 8 are ignored: none is defined).
    pub const fn with(self, id: u8) -> Self {
        if id < 8 { Self(self.0 | 1 << id) } else { self }
    }
}

/// One authentication message, its variable parts borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMessage<'a> {
    /// AUTH_Negotiate: the DH-HMAC-CHAP hashes and DH groups the host
    /// offers (unknown identifiers dropped).
    Negotiate {
        /// Transaction identifier.
        t_id: u16,
        /// Secure channel concatenation (0: none).
        sc_c: u8,
        /// Hash ids offered.
        hashes: IdSet,
        /// DH group ids offered.
        groups: IdSet,
    },
    /// DH-HMAC-CHAP_Challenge.
    Challenge {
        /// Transaction identifier.
        t_id: u16,
        /// The hash chosen.
        hash: HashId,
        /// The DH group chosen.
        group: DhGroup,
        /// Sequence number.
        seqnum: u32,
        /// The challenge (the hash's length).
        cval: &'a [u8],
        /// The controller's DH public value (empty for the null group).
        dhv: &'a [u8],
    },
    /// DH-HMAC-CHAP_Reply.
    Reply {
        /// Transaction identifier.
        t_id: u16,
        /// Sequence number for the controller's response (bidirectional;
        /// 0 otherwise).
        seqnum: u32,
        /// The host's response.
        rval: &'a [u8],
        /// The host's challenge to the controller, if bidirectional.
        cval: Option<&'a [u8]>,
        /// The host's DH public value.
        dhv: &'a [u8],
    },
    /// DH-HMAC-CHAP_Success1, with the controller's response if asked.
    Success1 {
        /// Transaction identifier.
        t_id: u16,
        /// Its hash length (of `rval` when present).
        hl: u8,
        /// The controller's response (bidirectional).
        rval: Option<&'a [u8]>,
    },
    /// DH-HMAC-CHAP_Success2.
    Success2 {
        /// Transaction identifier.
        t_id: u16,
    },
    /// AUTH_Failure1 (`from_host` false) or AUTH_Failure2.
    Failure {
        /// Transaction identifier.
        t_id: u16,
        /// Sent by the host (Failure2).
        from_host: bool,
        /// Reason code.
        rescode: u8,
        /// Reason code explanation ([`explanation`]).
        explanation: u8,
    },
}

fn bad(field: &'static str, value: usize) -> ProtoError {
    ProtoError::InvalidField {
        field,
        value: value as u64,
    }
}

fn zero(b: &[u8], field: &'static str) -> Result<(), ProtoError> {
    match b.iter().position(|&x| x != 0) {
        None => Ok(()),
        Some(i) => Err(ProtoError::Reserved {
            field,
            value: u64::from(b[i]),
        }),
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn exact(b: &[u8], len: usize) -> Result<(), ProtoError> {
    if b.len() == len {
        Ok(())
    } else {
        Err(ProtoError::Length {
            expected: len,
            actual: b.len(),
        })
    }
}

impl<'a> AuthMessage<'a> {
    /// Parses one message (the whole transfer of an Authentication Send
    /// or Receive).
    pub fn parse(b: &'a [u8]) -> Result<Self, ProtoError> {
        if b.len() < 6 {
            return Err(ProtoError::Length {
                expected: 6,
                actual: b.len(),
            });
        }
        let (ty, id, t_id) = (b[0], b[1], u16_at(b, 4));
        zero(&b[2..4], "auth rsvd1")?;
        match (ty, id) {
            (TYPE_COMMON, ID_NEGOTIATE) => Self::parse_negotiate(b, t_id),
            (TYPE_DHCHAP, ID_CHALLENGE) => Self::parse_challenge(b, t_id),
            (TYPE_DHCHAP, ID_REPLY) => Self::parse_reply(b, t_id),
            (TYPE_DHCHAP, ID_SUCCESS1) => Self::parse_success1(b, t_id),
            (TYPE_DHCHAP, ID_SUCCESS2) => {
                exact(b, 16)?;
                zero(&b[6..16], "success2 rsvd2")?;
                Ok(Self::Success2 { t_id })
            }
            (TYPE_COMMON, ID_FAILURE1 | ID_FAILURE2) => {
                exact(b, 8)?;
                Ok(Self::Failure {
                    t_id,
                    from_host: id == ID_FAILURE2,
                    rescode: b[6],
                    explanation: b[7],
                })
            }
            _ => Err(bad("auth type/id", usize::from(ty) << 8 | usize::from(id))),
        }
    }

    /// The length of the message at the start of `b`, from its header
    /// (`None` if the header is short or names no message).
    pub fn message_len(b: &[u8]) -> Option<usize> {
        let hl = usize::from(*b.get(6)?);
        let dhvlen = || Some(usize::from(u16_at(b.get(..12)?, 10)));
        match (*b.first()?, *b.get(1)?) {
            (TYPE_COMMON, ID_NEGOTIATE) => Some(8 + usize::from(*b.get(7)?) * DESCRIPTOR),
            (TYPE_DHCHAP, ID_CHALLENGE) => Some(16 + hl + dhvlen()?),
            (TYPE_DHCHAP, ID_REPLY) => Some(16 + 2 * hl + dhvlen()?),
            (TYPE_DHCHAP, ID_SUCCESS1) => Some(16 + if *b.get(8)? == 1 { hl } else { 0 }),
            (TYPE_DHCHAP, ID_SUCCESS2) => Some(16),
            (TYPE_COMMON, ID_FAILURE1 | ID_FAILURE2) => Some(8),
            _ => None,
        }
    }

    /// Parses the message at the start of a receive buffer: an
    /// Authentication Receive returns as many bytes as were asked for,
    /// the message zero-padded (as the Linux target sends it).
    pub fn parse_padded(b: &'a [u8]) -> Result<Self, ProtoError> {
        match Self::message_len(b) {
            Some(n) if n <= b.len() => {
                zero(&b[n..], "auth padding")?;
                Self::parse(&b[..n])
            }
            _ => Self::parse(b),
        }
    }

    fn parse_negotiate(b: &'a [u8], t_id: u16) -> Result<Self, ProtoError> {
        let napd = usize::from(*b.get(7).ok_or(ProtoError::Length {
            expected: 8,
            actual: b.len(),
        })?);
        if napd == 0 {
            return Err(bad("napd", 0));
        }
        exact(b, 8 + napd * DESCRIPTOR)?;
        let (mut hashes, mut groups) = (IdSet::default(), IdSet::default());
        let mut found = false;
        for d in b[8..].chunks_exact(DESCRIPTOR) {
            let (authid, halen, dhlen) = (d[0], usize::from(d[2]), usize::from(d[3]));
            if d[1] != 0 {
                return Err(ProtoError::Reserved {
                    field: "negotiate descriptor rsvd",
                    value: u64::from(d[1]),
                });
            }
            if halen > LIST || dhlen > LIST {
                return Err(bad("halen/dhlen", halen.max(dhlen)));
            }
            if authid != PROTOCOL_DHCHAP {
                continue;
            }
            found = true;
            for &h in &d[4..4 + halen] {
                if HashId::from_id(h).is_some() {
                    hashes = hashes.with(h);
                }
            }
            for &g in &d[4 + LIST..4 + LIST + dhlen] {
                if DhGroup::from_id(g).is_some() {
                    groups = groups.with(g);
                }
            }
        }
        if !found {
            return Err(bad("negotiate: no DH-HMAC-CHAP descriptor", napd));
        }
        Ok(Self::Negotiate {
            t_id,
            sc_c: b[6],
            hashes,
            groups,
        })
    }

    fn parse_challenge(b: &'a [u8], t_id: u16) -> Result<Self, ProtoError> {
        if b.len() < 16 {
            return Err(ProtoError::Length {
                expected: 16,
                actual: b.len(),
            });
        }
        zero(&b[7..8], "challenge rsvd2")?;
        let hash = HashId::from_id(b[8]).ok_or(bad("hashid", usize::from(b[8])))?;
        let group = DhGroup::from_id(b[9]).ok_or(bad("dhgid", usize::from(b[9])))?;
        let (hl, dhvlen) = (usize::from(b[6]), usize::from(u16_at(b, 10)));
        if hl != hash.len() {
            return Err(bad("challenge hl", hl));
        }
        if dhvlen != group.value_len() {
            return Err(bad("challenge dhvlen", dhvlen));
        }
        exact(b, 16 + hl + dhvlen)?;
        Ok(Self::Challenge {
            t_id,
            hash,
            group,
            seqnum: u32_at(b, 12),
            cval: &b[16..16 + hl],
            dhv: &b[16 + hl..],
        })
    }

    fn parse_reply(b: &'a [u8], t_id: u16) -> Result<Self, ProtoError> {
        if b.len() < 16 {
            return Err(ProtoError::Length {
                expected: 16,
                actual: b.len(),
            });
        }
        zero(&b[7..8], "reply rsvd2")?;
        zero(&b[9..10], "reply rsvd3")?;
        let (hl, cvalid, dhvlen) = (usize::from(b[6]), b[8], usize::from(u16_at(b, 10)));
        if ![32, 48, 64].contains(&hl) {
            return Err(bad("reply hl", hl));
        }
        if cvalid > 1 {
            return Err(bad("reply cvalid", usize::from(cvalid)));
        }
        exact(b, 16 + 2 * hl + dhvlen)?;
        let seqnum = u32_at(b, 12);
        let cval = &b[16 + hl..16 + 2 * hl];
        if cvalid == 0 {
            zero(cval, "reply cval without cvalid")?;
        }
        Ok(Self::Reply {
            t_id,
            seqnum,
            rval: &b[16..16 + hl],
            cval: (cvalid == 1).then_some(cval),
            dhv: &b[16 + 2 * hl..],
        })
    }

    fn parse_success1(b: &'a [u8], t_id: u16) -> Result<Self, ProtoError> {
        if b.len() < 16 {
            return Err(ProtoError::Length {
                expected: 16,
                actual: b.len(),
            });
        }
        zero(&b[7..8], "success1 rsvd2")?;
        zero(&b[9..16], "success1 rsvd3")?;
        let (hl, rvalid) = (b[6], b[8]);
        match rvalid {
            0 => {
                exact(b, 16)?;
                Ok(Self::Success1 {
                    t_id,
                    hl,
                    rval: None,
                })
            }
            1 => {
                if ![32, 48, 64].contains(&usize::from(hl)) {
                    return Err(bad("success1 hl", usize::from(hl)));
                }
                exact(b, 16 + usize::from(hl))?;
                Ok(Self::Success1 {
                    t_id,
                    hl,
                    rval: Some(&b[16..]),
                })
            }
            v => Err(bad("success1 rvalid", usize::from(v))),
        }
    }

    /// Bytes [`Self::encode`] writes.
    pub fn encoded_len(&self) -> usize {
        match self {
            Self::Negotiate { .. } => 8 + DESCRIPTOR,
            Self::Challenge { cval, dhv, .. } => 16 + cval.len() + dhv.len(),
            Self::Reply { rval, dhv, .. } => 16 + 2 * rval.len() + dhv.len(),
            Self::Success1 { rval, .. } => 16 + rval.map_or(0, <[u8]>::len),
            Self::Success2 { .. } => 16,
            Self::Failure { .. } => 8,
        }
    }

    /// Writes the message into `out` (at least [`Self::encoded_len`]
    /// bytes); returns its length. Lengths that do not fit their fields
    /// are refused.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, ProtoError> {
        let n = self.encoded_len();
        if out.len() < n {
            return Err(ProtoError::Length {
                expected: n,
                actual: out.len(),
            });
        }
        let o = &mut out[..n];
        o.fill(0);
        let (ty, id, t_id) = match *self {
            Self::Negotiate { t_id, .. } => (TYPE_COMMON, ID_NEGOTIATE, t_id),
            Self::Challenge { t_id, .. } => (TYPE_DHCHAP, ID_CHALLENGE, t_id),
            Self::Reply { t_id, .. } => (TYPE_DHCHAP, ID_REPLY, t_id),
            Self::Success1 { t_id, .. } => (TYPE_DHCHAP, ID_SUCCESS1, t_id),
            Self::Success2 { t_id } => (TYPE_DHCHAP, ID_SUCCESS2, t_id),
            Self::Failure {
                t_id, from_host, ..
            } => (
                TYPE_COMMON,
                if from_host { ID_FAILURE2 } else { ID_FAILURE1 },
                t_id,
            ),
        };
        o[0] = ty;
        o[1] = id;
        o[4..6].copy_from_slice(&t_id.to_le_bytes());
        let dhvlen = |len: usize| u16::try_from(len).map_err(|_| bad("dhvlen", len));
        match *self {
            Self::Negotiate {
                sc_c,
                hashes,
                groups,
                ..
            } => {
                o[6] = sc_c;
                o[7] = 1;
                let d = &mut o[8..];
                d[0] = PROTOCOL_DHCHAP;
                let mut n = 0;
                for h in HashId::ALL.iter().filter(|h| hashes.contains(h.id())) {
                    d[4 + n] = h.id();
                    n += 1;
                }
                d[2] = n as u8;
                let mut n = 0;
                for g in DhGroup::ALL.iter().filter(|g| groups.contains(g.id())) {
                    d[4 + LIST + n] = g.id();
                    n += 1;
                }
                d[3] = n as u8;
            }
            Self::Challenge {
                hash,
                group,
                seqnum,
                cval,
                dhv,
                ..
            } => {
                if cval.len() != hash.len() || dhv.len() != group.value_len() {
                    return Err(bad("challenge lengths", cval.len()));
                }
                o[6] = cval.len() as u8;
                o[8] = hash.id();
                o[9] = group.id();
                o[10..12].copy_from_slice(&dhvlen(dhv.len())?.to_le_bytes());
                o[12..16].copy_from_slice(&seqnum.to_le_bytes());
                o[16..16 + cval.len()].copy_from_slice(cval);
                o[16 + cval.len()..].copy_from_slice(dhv);
            }
            Self::Reply {
                seqnum,
                rval,
                cval,
                dhv,
                ..
            } => {
                let hl = rval.len();
                if ![32, 48, 64].contains(&hl) || cval.is_some_and(|c| c.len() != hl) {
                    return Err(bad("reply lengths", hl));
                }
                o[6] = hl as u8;
                o[8] = u8::from(cval.is_some());
                o[10..12].copy_from_slice(&dhvlen(dhv.len())?.to_le_bytes());
                o[12..16].copy_from_slice(&seqnum.to_le_bytes());
                o[16..16 + hl].copy_from_slice(rval);
                if let Some(c) = cval {
                    o[16 + hl..16 + 2 * hl].copy_from_slice(c);
                }
                o[16 + 2 * hl..].copy_from_slice(dhv);
            }
            Self::Success1 { hl, rval, .. } => {
                o[6] = hl;
                if let Some(r) = rval {
                    if r.len() != usize::from(hl) || ![32, 48, 64].contains(&r.len()) {
                        return Err(bad("success1 rval", r.len()));
                    }
                    o[8] = 1;
                    o[16..].copy_from_slice(r);
                }
            }
            Self::Success2 { .. } => {}
            Self::Failure {
                rescode,
                explanation,
                ..
            } => {
                o[6] = rescode;
                o[7] = explanation;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
