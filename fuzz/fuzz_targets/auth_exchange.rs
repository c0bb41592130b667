//! The controller's side of DH-HMAC-CHAP fed any sequence of
//! Authentication Send payloads and Receive lengths (what a host that
//! does not hold the secret can send): it never panics, every Receive
//! returns exactly the bytes asked for, nothing is taken after a failure,
//! and the queue never authenticates.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvme_tcp::auth::controller::Step;
use nvme_tcp::auth::{ControllerChap, HostSecrets, Policy, Secret, Transform};
use proto::auth::{DhGroup, HashId};

fuzz_target!(|data: &[u8]| {
    let secrets = HostSecrets {
        host: Secret::new(vec![1; 32], Transform::Sha256).expect("secret"),
        ctrl: Some(Secret::new(vec![2; 32], Transform::None).expect("secret")),
    };
    let policy = Policy {
        hashes: HashId::ALL.to_vec(),
        groups: vec![DhGroup::Null, DhGroup::Ffdhe2048],
    };
    let mut ctrl = ControllerChap::new("nqn.fuzz:host", "nqn.fuzz:sub", &secrets, policy);
    let mut rest = data;
    while let [op, a, b, tail @ ..] = rest {
        let n = usize::from(u16::from_le_bytes([*a, *b]));
        if op & 1 == 0 {
            let (msg, next) = tail.split_at(n.min(tail.len()));
            let failed = ctrl.failed();
            let step = ctrl.send(msg);
            if failed {
                assert_eq!(step, Step::Closed);
            }
            rest = next;
        } else {
            if let Ok((m, _)) = ctrl.receive(n) {
                assert_eq!(m.len(), n);
            }
            rest = tail;
        }
        assert!(!ctrl.authenticated());
    }
});
