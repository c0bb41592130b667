//! Both sides of DH-HMAC-CHAP against each other, and the controller fed
//! what an attacker could send.

use proptest::prelude::*;
use proto::auth::{AuthMessage, DhGroup, HashId, IdSet, explanation as why};

use super::controller::Step;
use super::host::{self, Channel};
use super::{AuthError, ControllerChap, HostSecrets, Policy, Secret, Transform};

const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:host-a";
const SUB: &str = "nqn.2026-01.io.instinfer:csd";

fn secret(byte: u8, len: usize, t: Transform) -> Secret {
    Secret::new(vec![byte; len], t).unwrap()
}

fn secrets(bidirectional: bool) -> HostSecrets {
    HostSecrets {
        host: secret(1, 32, Transform::Sha256),
        ctrl: bidirectional.then(|| secret(2, 48, Transform::None)),
    }
}

/// The controller behind Authentication Send / Receive, recording what
/// each step did.
struct Loop {
    ctrl: ControllerChap,
    steps: Vec<Step>,
    sent: Vec<Vec<u8>>,
}

impl Channel for Loop {
    fn send(&mut self, msg: &[u8]) -> Result<(), AuthError> {
        self.sent.push(msg.to_vec());
        let s = self.ctrl.send(msg);
        self.steps.push(s);
        Ok(())
    }
    fn receive(&mut self, al: u32) -> Result<Vec<u8>, AuthError> {
        let (m, s) = self
            .ctrl
            .receive(al as usize)
            .map_err(|n| AuthError::Protocol(format!("needs {n}")))?;
        self.steps.push(s);
        Ok(m)
    }
}

fn lp(ctrl_secrets: &HostSecrets, policy: Policy) -> Loop {
    Loop {
        ctrl: ControllerChap::new(HOST, SUB, ctrl_secrets, policy),
        steps: Vec::new(),
        sent: Vec::new(),
    }
}

fn only(hash: HashId, group: DhGroup) -> Policy {
    Policy {
        hashes: vec![hash],
        groups: vec![group],
    }
}

#[test]
fn every_hash_and_group_both_ways() {
    let cases = [
        (HashId::Sha256, DhGroup::Null),
        (HashId::Sha384, DhGroup::Ffdhe2048),
        (HashId::Sha512, DhGroup::Ffdhe3072),
        (HashId::Sha256, DhGroup::Ffdhe4096),
        (HashId::Sha384, DhGroup::Ffdhe6144),
        (HashId::Sha512, DhGroup::Ffdhe8192),
    ];
    for (hash, group) in cases {
        for bi in [false, true] {
            let s = secrets(bi);
            let mut l = lp(&s, only(hash, group));
            let got = host::authenticate(&mut l, HOST, SUB, &s, 7).unwrap();
            assert_eq!((got.hash, got.group, got.bidirectional), (hash, group, bi));
            assert!(l.ctrl.authenticated(), "{hash:?} {group:?} {bi}");
            assert_eq!(l.steps.last(), Some(&Step::Authenticated));
        }
    }
}

#[test]
fn a_wrong_host_secret_is_refused() {
    let mut l = lp(&secrets(false), Policy::default());
    let wrong = HostSecrets {
        host: secret(9, 32, Transform::Sha256),
        ctrl: None,
    };
    let e = host::authenticate(&mut l, HOST, SUB, &wrong, 1).unwrap_err();
    assert_eq!(
        e,
        AuthError::Refused {
            explanation: why::FAILED
        }
    );
    assert!(!l.ctrl.authenticated());
    assert!(l.ctrl.failed());
    assert!(matches!(&l.steps[2], Step::Refused(w) if w.contains("wrong response")));
    // Nothing after the failure is taken.
    assert_eq!(l.ctrl.send(&l.sent[0].clone()), Step::Closed);
    assert!(!l.ctrl.authenticated());
}

#[test]
fn a_transform_of_another_nqn_is_refused() {
    // The same secret bytes bound to another host NQN give another key.
    let s = secrets(false);
    let mut l = Loop {
        ctrl: ControllerChap::new("nqn.other", SUB, &s, Policy::default()),
        steps: Vec::new(),
        sent: Vec::new(),
    };
    assert!(host::authenticate(&mut l, HOST, SUB, &s, 1).is_err());
    assert!(!l.ctrl.authenticated());
}

#[test]
fn a_controller_without_the_controller_secret_is_caught() {
    let host_side = secrets(true);
    let mut ctrl_side = secrets(true);
    ctrl_side.ctrl = Some(secret(3, 48, Transform::None));
    let mut l = lp(&ctrl_side, Policy::default());
    let e = host::authenticate(&mut l, HOST, SUB, &host_side, 1).unwrap_err();
    assert!(
        e.to_string().contains("controller's response is wrong"),
        "{e}"
    );
    assert!(!l.ctrl.authenticated(), "Success2 never came");
    // The host told the controller with AUTH_Failure2.
    let last = AuthMessage::parse(l.sent.last().unwrap()).unwrap();
    assert!(matches!(
        last,
        AuthMessage::Failure {
            from_host: true,
            ..
        }
    ));
    // Asking for bidirectional from a controller with no controller
    // secret fails at the controller.
    let mut l = lp(&secrets(false), Policy::default());
    let e = host::authenticate(&mut l, HOST, SUB, &host_side, 1).unwrap_err();
    assert_eq!(
        e,
        AuthError::Refused {
            explanation: why::FAILED
        }
    );
}

#[test]
fn no_common_hash_or_group() {
    let s = secrets(false);
    let mut ctrl = ControllerChap::new(HOST, SUB, &s, Policy::default());
    let mut buf = [0u8; 72];
    let n = AuthMessage::Negotiate {
        t_id: 1,
        sc_c: 0,
        hashes: IdSet::default().with(1),
        groups: IdSet::default().with(9),
    }
    .encode(&mut buf)
    .unwrap();
    assert!(matches!(ctrl.send(&buf[..n]), Step::Refused(w) if w.contains("DH group")));
    let (m, step) = ctrl.receive(4096).unwrap();
    assert_eq!(step, Step::Closed);
    assert_eq!(
        AuthMessage::parse_padded(&m).unwrap(),
        AuthMessage::Failure {
            t_id: 1,
            from_host: false,
            rescode: 1,
            explanation: why::DHGROUP_UNUSABLE
        }
    );
}

#[test]
fn a_replayed_reply_is_refused() {
    let s = secrets(false);
    let mut first = lp(&s, only(HashId::Sha256, DhGroup::Null));
    host::authenticate(&mut first, HOST, SUB, &s, 3).unwrap();
    let (negotiate, reply) = (first.sent[0].clone(), first.sent[1].clone());
    // The same messages on a new queue: the challenge is new, so the old
    // response does not answer it.
    let mut ctrl = ControllerChap::new(HOST, SUB, &s, only(HashId::Sha256, DhGroup::Null));
    assert_eq!(ctrl.send(&negotiate), Step::Continue);
    ctrl.receive(4096).unwrap();
    assert!(matches!(ctrl.send(&reply), Step::Refused(w) if w.contains("wrong response")));
    assert!(!ctrl.authenticated());
    // And on the queue that authenticated: a Reply out of turn.
    assert!(matches!(first.ctrl.send(&reply), Step::Refused(w) if w.contains("out of order")));
    assert!(
        !first.ctrl.authenticated(),
        "a protocol error drops the queue's authentication"
    );
}

#[test]
fn a_short_receive_buffer_does_not_move_the_state() {
    let s = secrets(false);
    let mut ctrl = ControllerChap::new(HOST, SUB, &s, only(HashId::Sha512, DhGroup::Ffdhe2048));
    let mut buf = [0u8; 72];
    let n = AuthMessage::Negotiate {
        t_id: 4,
        sc_c: 0,
        hashes: IdSet(0b1110),
        groups: IdSet(0b11),
    }
    .encode(&mut buf)
    .unwrap();
    ctrl.send(&buf[..n]);
    assert_eq!(ctrl.receive(100).unwrap_err(), 16 + 64 + 256);
    let (m, _) = ctrl.receive(4096).unwrap();
    assert_eq!(m.len(), 4096);
    assert!(matches!(
        AuthMessage::parse_padded(&m).unwrap(),
        AuthMessage::Challenge { t_id: 4, .. }
    ));
}

/// What a host that does not hold the secret can do on a queue.
#[derive(Debug, Clone)]
enum Act {
    /// Authentication Send of raw bytes.
    Raw(Vec<u8>),
    /// A well-formed message of each kind, with these fields.
    Negotiate(u16, u8, u8),
    Reply(u16, u32, u8, bool, u16),
    Success2(u16),
    Failure2(u16),
    /// A message an honest host sent in another session.
    Replay(usize),
    /// Authentication Receive.
    Receive(u16),
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..120).prop_map(Act::Raw),
        (0u16..4, any::<u8>(), any::<u8>()).prop_map(|(t, h, g)| Act::Negotiate(t, h, g)),
        (
            0u16..4,
            any::<u32>(),
            any::<u8>(),
            any::<bool>(),
            prop_oneof![Just(0u16), Just(256)]
        )
            .prop_map(|(t, s, b, c, d)| Act::Reply(t, s, b, c, d)),
        (0u16..4).prop_map(Act::Success2),
        (0u16..4).prop_map(Act::Failure2),
        (0usize..8).prop_map(Act::Replay),
        (0u16..2000).prop_map(Act::Receive),
    ]
}

fn encode(m: &AuthMessage<'_>) -> Vec<u8> {
    let mut b = vec![0u8; m.encoded_len()];
    m.encode(&mut b)
        .map(|n| b[..n].to_vec())
        .unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No order of messages authenticates a host without its secret, and
    /// the controller never panics or answers past a failure.
    #[test]
    fn no_message_order_authenticates_without_the_secret(acts in proptest::collection::vec(act(), 1..24)) {
        let s = secrets(true);
        let policy = Policy { hashes: vec![HashId::Sha256], groups: vec![DhGroup::Null, DhGroup::Ffdhe2048] };
        // An honest session's messages, to replay.
        let mut honest = lp(&s, policy.clone());
        host::authenticate(&mut honest, HOST, SUB, &s, 1).unwrap();
        let mut ctrl = ControllerChap::new(HOST, SUB, &s, policy);
        for a in acts {
            let msg = match a {
                Act::Raw(b) => b,
                Act::Negotiate(t_id, h, g) => encode(&AuthMessage::Negotiate { t_id, sc_c: 0, hashes: IdSet(h), groups: IdSet(g) }),
                Act::Reply(t_id, seqnum, b, c, dhvlen) => {
                    let (r, dhv) = ([b; 32], vec![b; usize::from(dhvlen)]);
                    encode(&AuthMessage::Reply { t_id, seqnum, rval: &r, cval: c.then_some(&r[..]), dhv: &dhv })
                }
                Act::Success2(t_id) => encode(&AuthMessage::Success2 { t_id }),
                Act::Failure2(t_id) => encode(&AuthMessage::Failure { t_id, from_host: true, rescode: 1, explanation: 1 }),
                Act::Replay(i) => honest.sent[i % honest.sent.len()].clone(),
                Act::Receive(al) => {
                    let before_failed = ctrl.failed();
                    if let Ok((m, _)) = ctrl.receive(usize::from(al)) {
                        prop_assert_eq!(m.len(), usize::from(al));
                        if before_failed {
                            let parsed = AuthMessage::parse_padded(&m);
                            let is_failure = matches!(parsed, Ok(AuthMessage::Failure { .. }));
                            prop_assert!(is_failure);
                        }
                    }
                    prop_assert!(!ctrl.authenticated());
                    continue;
                }
            };
            let failed = ctrl.failed();
            let step = ctrl.send(&msg);
            if failed {
                prop_assert_eq!(step, Step::Closed);
            }
            prop_assert!(!ctrl.authenticated());
        }
    }
}
