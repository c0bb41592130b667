//! The host's side of DH-HMAC-CHAP on one queue (what our initiator runs
//! after a Connect whose response asks for authentication): negotiate,
//! answer the challenge, check the controller's answer to ours
//! (bidirectional), in the order and with the checks of NVMe Base 2.x
//! §8.3.4.5.

use proto::auth::{AuthMessage, DhGroup, HashId, IdSet, REASON_FAILED, explanation as why};

use super::chap::{self, Role, Transcript};
use super::dh::{self, KeyPair};
use super::{AuthError, HostSecrets};

/// Bytes asked for on every Authentication Receive (ffdhe8192's challenge
/// is 1 104).
pub const RECEIVE_LEN: u32 = 4096;

/// How messages reach the controller: one Authentication Send or Receive
/// each.
pub trait Channel {
    /// Authentication Send of `msg`.
    fn send(&mut self, msg: &[u8]) -> Result<(), AuthError>;
    /// Authentication Receive of `al` bytes.
    fn receive(&mut self, al: u32) -> Result<Vec<u8>, AuthError>;
}

/// What was agreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The hash.
    pub hash: HashId,
    /// The DH group.
    pub group: DhGroup,
    /// Whether the controller proved its secret too.
    pub bidirectional: bool,
}

fn refused(m: &AuthMessage<'_>) -> Option<AuthError> {
    match *m {
        AuthMessage::Failure {
            from_host: false,
            explanation,
            ..
        } => Some(AuthError::Refused { explanation }),
        _ => None,
    }
}

fn protocol(why: impl Into<String>) -> AuthError {
    AuthError::Protocol(why.into())
}

/// Runs the exchange for `hostnqn` on `subnqn` with transaction `t_id`.
pub fn authenticate(
    ch: &mut impl Channel,
    hostnqn: &str,
    subnqn: &str,
    secrets: &HostSecrets,
    t_id: u16,
) -> Result<Negotiated, AuthError> {
    let all = |ids: &mut dyn Iterator<Item = u8>| ids.fold(IdSet::default(), IdSet::with);
    let mut buf = vec![0u8; 8 + 64];
    let n = AuthMessage::Negotiate {
        t_id,
        sc_c: 0,
        hashes: all(&mut HashId::ALL.iter().map(|h| h.id())),
        groups: all(&mut DhGroup::ALL.iter().map(|g| g.id())),
    }
    .encode(&mut buf)
    .map_err(|e| protocol(e.to_string()))?;
    ch.send(&buf[..n])?;

    let got = ch.receive(RECEIVE_LEN)?;
    let msg = AuthMessage::parse_padded(&got).map_err(|e| protocol(format!("challenge: {e}")))?;
    if let Some(e) = refused(&msg) {
        return Err(e);
    }
    let AuthMessage::Challenge {
        t_id: got_t,
        hash,
        group,
        seqnum: s1,
        cval: c1,
        dhv,
    } = msg
    else {
        return fail(ch, t_id, why::INCORRECT_MESSAGE, "expected a challenge");
    };
    if got_t != t_id {
        return fail(
            ch,
            t_id,
            why::INCORRECT_MESSAGE,
            "challenge of another transaction",
        );
    }
    let (key, session) = match group {
        DhGroup::Null => (None, None),
        g => {
            let k = KeyPair::generate(g)?;
            let s = match k.shared(dhv) {
                Ok(s) => s,
                Err(e) => return fail(ch, t_id, why::DHGROUP_UNUSABLE, &e.to_string()),
            };
            (Some(k), Some(s))
        }
    };
    let aug = |c: &[u8]| match &session {
        Some(s) => chap::augment(hash, s, c),
        None => c.to_vec(),
    };
    let transcript = |challenge, seqnum| Transcript {
        hash,
        challenge,
        seqnum,
        t_id,
        hostnqn,
        subnqn,
    };
    let host_key = chap::transform(&secrets.host, hostnqn);
    let ch1 = aug(c1);
    let rval = chap::response(Role::Host, &host_key, &transcript(&ch1, s1));
    // Bidirectional: our challenge C2 and sequence number S2 (never 0).
    let mut c2 = vec![0u8; hash.len()];
    let mut s2 = [0u8; 4];
    let bidirectional = secrets.ctrl.is_some();
    if bidirectional {
        dh::random(&mut c2)?;
        dh::random(&mut s2)?;
    }
    let s2 = if bidirectional {
        u32::from_le_bytes(s2).max(1)
    } else {
        0
    };
    let reply = AuthMessage::Reply {
        t_id,
        seqnum: s2,
        rval: &rval,
        cval: bidirectional.then_some(&c2[..]),
        dhv: key.as_ref().map_or(&[][..], KeyPair::public),
    };
    let mut buf = vec![0u8; reply.encoded_len()];
    reply
        .encode(&mut buf)
        .map_err(|e| protocol(e.to_string()))?;
    ch.send(&buf)?;

    let got = ch.receive(RECEIVE_LEN)?;
    let msg = AuthMessage::parse_padded(&got).map_err(|e| protocol(format!("success1: {e}")))?;
    if let Some(e) = refused(&msg) {
        return Err(e);
    }
    let AuthMessage::Success1 {
        t_id: got_t,
        hl,
        rval: ctrl_rval,
    } = msg
    else {
        return fail(ch, t_id, why::INCORRECT_MESSAGE, "expected success1");
    };
    if got_t != t_id || usize::from(hl) != hash.len() {
        return fail(
            ch,
            t_id,
            why::INCORRECT_PAYLOAD,
            "success1 of another transaction or hash",
        );
    }
    if let Some(kc) = secrets.ctrl.as_ref() {
        let kc = chap::transform(kc, subnqn);
        let ch2 = aug(&c2);
        let expect = chap::response(Role::Controller, &kc, &transcript(&ch2, s2));
        match ctrl_rval {
            Some(r) if chap::same(r, &expect) => {}
            Some(_) => {
                return fail(
                    ch,
                    t_id,
                    why::FAILED,
                    "the controller's response is wrong: it does not hold the controller secret",
                );
            }
            None => {
                return fail(
                    ch,
                    t_id,
                    why::FAILED,
                    "the controller did not answer our challenge",
                );
            }
        }
        let mut buf = [0u8; 16];
        let n = AuthMessage::Success2 { t_id }
            .encode(&mut buf)
            .map_err(|e| protocol(e.to_string()))?;
        ch.send(&buf[..n])?;
    }
    Ok(Negotiated {
        hash,
        group,
        bidirectional,
    })
}

/// Sends AUTH_Failure2 and returns the error.
fn fail<T>(ch: &mut impl Channel, t_id: u16, explanation: u8, what: &str) -> Result<T, AuthError> {
    let mut buf = [0u8; 8];
    if let Ok(n) = (AuthMessage::Failure {
        t_id,
        from_host: true,
        rescode: REASON_FAILED,
        explanation,
    })
    .encode(&mut buf)
    {
        let _ = ch.send(&buf[..n]);
    }
    Err(protocol(what.to_string()))
}
