//! The controller's side of DH-HMAC-CHAP on one queue: a state machine
//! fed the host's Authentication Send messages and asked for the
//! messages an Authentication Receive returns. It never trusts the order
//! it is given: a message out of turn, a wrong transaction id, a wrong
//! length or a wrong response ends in AUTH_Failure1, after which nothing
//! more is accepted. [`ControllerChap::authenticated`] is the only way a
//! queue gets past Connect.

use proto::auth::{AuthMessage, DhGroup, HashId, REASON_FAILED, explanation as why};

use super::chap::{self, Role, Transcript};
use super::dh::{self, KeyPair};
use super::{HostSecrets, Policy};

/// Where the exchange stands.
#[derive(Debug)]
enum State {
    /// Waiting for AUTH_Negotiate.
    Negotiate,
    /// Negotiated; the host is to receive the challenge.
    Challenge {
        t_id: u16,
        hash: HashId,
        group: DhGroup,
    },
    /// Challenge sent; waiting for the Reply.
    Reply {
        t_id: u16,
        hash: HashId,
        s1: u32,
        c1: Vec<u8>,
        key: Option<KeyPair>,
    },
    /// The host is authenticated; Success1 is to be received, with the
    /// controller's response if the host asked for one.
    Success1 {
        t_id: u16,
        hash: HashId,
        ctrl_response: Option<Vec<u8>>,
    },
    /// Success1 sent with a controller response; waiting for Success2.
    Success2 { t_id: u16 },
    /// Failed; AUTH_Failure1 is to be received.
    Failure1 { t_id: u16, explanation: u8 },
    /// Over: the failure was reported, nothing more is accepted.
    Failed,
}

/// What one step did, for the target's log and counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The exchange goes on.
    Continue,
    /// The host is authenticated (and the controller, if asked).
    Authenticated,
    /// The exchange failed for this reason; the host is told with
    /// AUTH_Failure1 on its next receive.
    Refused(String),
    /// The failure was delivered (or the host gave up): close the queue.
    Closed,
}

/// One queue's authentication, controller side.
pub struct ControllerChap {
    hostnqn: String,
    subnqn: String,
    host_key: Vec<u8>,
    ctrl_key: Option<Vec<u8>>,
    policy: Policy,
    state: State,
    authenticated: bool,
}

impl std::fmt::Debug for ControllerChap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerChap")
            .field("hostnqn", &self.hostnqn)
            .field("state", &self.state)
            .field("authenticated", &self.authenticated)
            .finish()
    }
}

fn random_u32() -> Result<u32, String> {
    let mut b = [0u8; 4];
    dh::random(&mut b).map_err(|e| e.to_string())?;
    Ok(u32::from_le_bytes(b).max(1))
}

impl ControllerChap {
    /// A queue of `hostnqn` on `subnqn` that must authenticate with
    /// `secrets`, choosing hashes and groups by `policy`.
    pub fn new(hostnqn: &str, subnqn: &str, secrets: &HostSecrets, policy: Policy) -> Self {
        Self {
            hostnqn: hostnqn.to_string(),
            subnqn: subnqn.to_string(),
            host_key: chap::transform(&secrets.host, hostnqn),
            ctrl_key: secrets.ctrl.as_ref().map(|s| chap::transform(s, subnqn)),
            policy,
            state: State::Negotiate,
            authenticated: false,
        }
    }

    /// Whether the host has authenticated (the queue may be used).
    pub fn authenticated(&self) -> bool {
        self.authenticated
    }

    /// Whether the exchange is over with a failure.
    pub fn failed(&self) -> bool {
        matches!(self.state, State::Failed)
    }

    fn t_id(&self) -> u16 {
        match self.state {
            State::Challenge { t_id, .. }
            | State::Reply { t_id, .. }
            | State::Success1 { t_id, .. }
            | State::Success2 { t_id }
            | State::Failure1 { t_id, .. } => t_id,
            State::Negotiate | State::Failed => 0,
        }
    }

    fn refuse(&mut self, explanation: u8, why: String) -> Step {
        self.state = State::Failure1 {
            t_id: self.t_id(),
            explanation,
        };
        self.authenticated = false;
        Step::Refused(why)
    }

    /// An Authentication Send's message.
    pub fn send(&mut self, data: &[u8]) -> Step {
        if self.failed() {
            return Step::Closed;
        }
        let msg = match AuthMessage::parse(data) {
            Ok(m) => m,
            Err(e) => {
                return self.refuse(why::INCORRECT_PAYLOAD, format!("malformed message: {e}"));
            }
        };
        let state = std::mem::replace(&mut self.state, State::Failed);
        match (msg, state) {
            (
                AuthMessage::Failure {
                    from_host: true,
                    explanation,
                    ..
                },
                _,
            ) => {
                self.authenticated = false;
                Step::Refused(format!(
                    "the host gave up (AUTH_Failure2: {})",
                    super::explain(explanation)
                ))
            }
            (AuthMessage::Negotiate { t_id, .. }, State::Failure1 { .. }) => {
                self.state = State::Failure1 {
                    t_id,
                    explanation: why::INCORRECT_MESSAGE,
                };
                Step::Refused("AUTH_Negotiate after a failure".into())
            }
            // A Negotiate starts (or restarts) a transaction.
            (
                AuthMessage::Negotiate {
                    t_id,
                    sc_c,
                    hashes,
                    groups,
                },
                _,
            ) => {
                let hash = self
                    .policy
                    .hashes
                    .iter()
                    .copied()
                    .find(|h| hashes.contains(h.id()));
                let group = self
                    .policy
                    .groups
                    .iter()
                    .copied()
                    .find(|g| groups.contains(g.id()));
                let (explanation, why) = match (sc_c, hash, group) {
                    (0, Some(hash), Some(group)) => {
                        self.state = State::Challenge { t_id, hash, group };
                        return Step::Continue;
                    }
                    (1.., _, _) => (
                        why::CONCAT_MISMATCH,
                        "secure channel concatenation asked for",
                    ),
                    (_, None, _) => (why::HASH_UNUSABLE, "no offered hash is allowed"),
                    (_, _, None) => (why::DHGROUP_UNUSABLE, "no offered DH group is allowed"),
                };
                self.state = State::Failure1 { t_id, explanation };
                self.authenticated = false;
                Step::Refused(why.into())
            }
            (
                m @ AuthMessage::Reply { .. },
                State::Reply {
                    t_id,
                    hash,
                    s1,
                    c1,
                    key,
                },
            ) => {
                self.state = State::Reply {
                    t_id,
                    hash,
                    s1,
                    c1,
                    key,
                };
                self.reply(m)
            }
            (AuthMessage::Success2 { t_id }, State::Success2 { t_id: want }) => {
                self.state = State::Success2 { t_id: want };
                if t_id != want {
                    return self.refuse(
                        why::INCORRECT_PAYLOAD,
                        format!("transaction {t_id}, expected {want}"),
                    );
                }
                self.state = State::Negotiate;
                self.authenticated = true;
                Step::Authenticated
            }
            (m, state) => {
                self.state = state;
                self.refuse(why::INCORRECT_MESSAGE, format!("{} out of order", name(&m)))
            }
        }
    }

    /// Checks the host's Reply (the state is [`State::Reply`]).
    fn reply(&mut self, msg: AuthMessage<'_>) -> Step {
        let State::Reply {
            t_id: want,
            hash,
            s1,
            c1,
            key,
        } = std::mem::replace(&mut self.state, State::Failed)
        else {
            return self.refuse(why::INCORRECT_MESSAGE, "no reply expected".into());
        };
        self.state = State::Failure1 {
            t_id: want,
            explanation: why::FAILED,
        };
        let AuthMessage::Reply {
            t_id,
            seqnum,
            rval,
            cval,
            dhv,
        } = msg
        else {
            return self.refuse(why::INCORRECT_MESSAGE, "not a reply".into());
        };
        if t_id != want {
            return self.refuse(
                why::INCORRECT_PAYLOAD,
                format!("transaction {t_id}, expected {want}"),
            );
        }
        if rval.len() != hash.len() {
            return self.refuse(why::INCORRECT_PAYLOAD, "response length".into());
        }
        let session = match (&key, dhv.is_empty()) {
            (None, true) => None,
            (Some(k), false) => match k.shared(dhv) {
                Ok(s) => Some(s),
                Err(e) => return self.refuse(why::DHGROUP_UNUSABLE, e.to_string()),
            },
            _ => {
                return self.refuse(
                    why::INCORRECT_PAYLOAD,
                    "DH value does not match the group".into(),
                );
            }
        };
        let aug = |c: &[u8]| match &session {
            Some(s) => chap::augment(hash, s, c),
            None => c.to_vec(),
        };
        let (hostnqn, subnqn) = (self.hostnqn.as_str(), self.subnqn.as_str());
        let transcript = |challenge, seqnum| Transcript {
            hash,
            challenge,
            seqnum,
            t_id,
            hostnqn,
            subnqn,
        };
        let ch1 = aug(&c1);
        let expect = chap::response(Role::Host, &self.host_key, &transcript(&ch1, s1));
        if !chap::same(&expect, rval) {
            return self.refuse(
                why::FAILED,
                "wrong response: the host does not hold its secret".into(),
            );
        }
        let ctrl_response = match (cval, &self.ctrl_key) {
            (None, _) => None,
            (Some(_), None) => {
                return self.refuse(
                    why::FAILED,
                    "bidirectional authentication asked for, but this host has no controller secret"
                        .into(),
                );
            }
            (Some(_), Some(_)) if seqnum == 0 => {
                return self.refuse(
                    why::INCORRECT_PAYLOAD,
                    "sequence number 0 with a challenge".into(),
                );
            }
            (Some(c2), Some(kc)) => {
                let ch2 = aug(c2);
                Some(chap::response(
                    Role::Controller,
                    kc,
                    &transcript(&ch2, seqnum),
                ))
            }
        };
        self.state = State::Success1 {
            t_id,
            hash,
            ctrl_response,
        };
        Step::Continue
    }

    /// The message an Authentication Receive of `al` bytes returns,
    /// zero-padded to `al`. `Err(n)`: `al` cannot hold the `n` bytes of
    /// the message (the state does not move).
    pub fn receive(&mut self, al: usize) -> Result<(Vec<u8>, Step), usize> {
        let mut out = vec![0u8; al];
        let state = std::mem::replace(&mut self.state, State::Failed);
        let (need, step, next) = match state {
            State::Challenge { t_id, hash, group } => {
                let need = 16 + hash.len() + group.value_len();
                if al < need {
                    self.state = State::Challenge { t_id, hash, group };
                    return Err(need);
                }
                match challenge(&mut out, t_id, hash, group) {
                    Ok((s1, c1, key)) => (
                        need,
                        Step::Continue,
                        State::Reply {
                            t_id,
                            hash,
                            s1,
                            c1,
                            key,
                        },
                    ),
                    Err(e) => {
                        self.state = State::Failure1 {
                            t_id,
                            explanation: why::FAILED,
                        };
                        self.authenticated = false;
                        out.fill(0);
                        return Ok((out, Step::Refused(e)));
                    }
                }
            }
            State::Success1 {
                t_id,
                hash,
                ctrl_response,
            } => {
                let msg = AuthMessage::Success1 {
                    t_id,
                    hl: hash.len() as u8,
                    rval: ctrl_response.as_deref(),
                };
                let need = msg.encoded_len();
                if al < need || msg.encode(&mut out).is_err() {
                    self.state = State::Success1 {
                        t_id,
                        hash,
                        ctrl_response,
                    };
                    return Err(need);
                }
                if ctrl_response.is_some() {
                    (need, Step::Continue, State::Success2 { t_id })
                } else {
                    self.authenticated = true;
                    (need, Step::Authenticated, State::Negotiate)
                }
            }
            State::Failure1 { t_id, explanation } => {
                if !failure(&mut out, t_id, explanation) {
                    self.state = State::Failure1 { t_id, explanation };
                    return Err(8);
                }
                self.authenticated = false;
                (8, Step::Closed, State::Failed)
            }
            // Out of turn (or after the end): the exchange fails here.
            other => {
                let t_id = match other {
                    State::Reply { t_id, .. } | State::Success2 { t_id } => t_id,
                    _ => 0,
                };
                if !failure(&mut out, t_id, why::INCORRECT_MESSAGE) {
                    self.state = other;
                    return Err(8);
                }
                self.authenticated = false;
                (
                    8,
                    Step::Refused("Authentication Receive out of turn".into()),
                    State::Failed,
                )
            }
        };
        debug_assert!(need <= al);
        self.state = next;
        Ok((out, step))
    }
}

/// Writes a Challenge into `out`: (S1, C1, the controller's key pair).
fn challenge(
    out: &mut [u8],
    t_id: u16,
    hash: HashId,
    group: DhGroup,
) -> Result<(u32, Vec<u8>, Option<KeyPair>), String> {
    let mut c1 = vec![0u8; hash.len()];
    dh::random(&mut c1).map_err(|e| e.to_string())?;
    let s1 = random_u32()?;
    let key = match group {
        DhGroup::Null => None,
        g => Some(KeyPair::generate(g).map_err(|e| e.to_string())?),
    };
    AuthMessage::Challenge {
        t_id,
        hash,
        group,
        seqnum: s1,
        cval: &c1,
        dhv: key.as_ref().map_or(&[][..], KeyPair::public),
    }
    .encode(out)
    .map_err(|e| e.to_string())?;
    Ok((s1, c1, key))
}

/// Writes AUTH_Failure1 into `out`; false if `out` is under 8 bytes.
fn failure(out: &mut [u8], t_id: u16, explanation: u8) -> bool {
    AuthMessage::Failure {
        t_id,
        from_host: false,
        rescode: REASON_FAILED,
        explanation,
    }
    .encode(out)
    .is_ok()
}

fn name(m: &AuthMessage<'_>) -> &'static str {
    match m {
        AuthMessage::Negotiate { .. } => "AUTH_Negotiate",
        AuthMessage::Challenge { .. } => "DH-HMAC-CHAP_Challenge",
        AuthMessage::Reply { .. } => "DH-HMAC-CHAP_Reply",
        AuthMessage::Success1 { .. } => "DH-HMAC-CHAP_Success1",
        AuthMessage::Success2 { .. } => "DH-HMAC-CHAP_Success2",
        AuthMessage::Failure { .. } => "AUTH_Failure",
    }
}
