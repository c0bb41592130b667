//! The values DH-HMAC-CHAP computes (NVMe Base 2.x §8.3.4.5), with the
//! byte order the Linux host and target use, so either side of ours
//! meets the kernel's:
//!
//! - transformed key: `HMAC_T(secret, NQN ‖ "NVMe-over-Fabrics")` with the
//!   secret's own transform hash T (or the secret itself for none); the
//!   host's secret is bound to the host NQN, the controller's to the
//!   subsystem NQN;
//! - augmented challenge (a non-null DH group):
//!   `HMAC_H(H(session key), C)`;
//! - host response: `HMAC_H(Kh, C1 ‖ S1 ‖ T_ID ‖ 0 ‖ "HostHost" ‖ NQNh ‖ 0 ‖ NQNc)`;
//! - controller response: `HMAC_H(Kc, C2 ‖ S2 ‖ T_ID ‖ 0 ‖ "Controller" ‖ NQNc ‖ 0 ‖ NQNh)`;
//!
//! with S and T_ID little-endian (32 and 16 bits) and H the negotiated hash.

use hmac::{Hmac, Mac};
use proto::auth::HashId;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::{Secret, Transform};

fn hmac_with<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

/// HMAC with `hash` of the concatenated `parts`.
pub fn hmac(hash: HashId, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    match hash {
        HashId::Sha256 => hmac_with::<Hmac<Sha256>>(key, parts),
        HashId::Sha384 => hmac_with::<Hmac<Sha384>>(key, parts),
        HashId::Sha512 => hmac_with::<Hmac<Sha512>>(key, parts),
    }
}

/// The digest of `data` with `hash`.
pub fn digest(hash: HashId, data: &[u8]) -> Vec<u8> {
    match hash {
        HashId::Sha256 => Sha256::digest(data).to_vec(),
        HashId::Sha384 => Sha384::digest(data).to_vec(),
        HashId::Sha512 => Sha512::digest(data).to_vec(),
    }
}

/// Whether `a` and `b` are equal, in time independent of where they differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The key a secret becomes for the NQN it is bound to.
pub fn transform(secret: &Secret, nqn: &str) -> Vec<u8> {
    let hash = match secret.transform() {
        Transform::None => return secret.key().to_vec(),
        Transform::Sha256 => HashId::Sha256,
        Transform::Sha384 => HashId::Sha384,
        Transform::Sha512 => HashId::Sha512,
    };
    hmac(hash, secret.key(), &[nqn.as_bytes(), b"NVMe-over-Fabrics"])
}

/// The challenge augmented with the DH session key.
pub fn augment(hash: HashId, session_key: &[u8], challenge: &[u8]) -> Vec<u8> {
    hmac(hash, &digest(hash, session_key), &[challenge])
}

/// Who computes a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The host answers the controller's challenge C1.
    Host,
    /// The controller answers the host's challenge C2.
    Controller,
}

/// What a response binds: the (augmented) challenge, the sequence number
/// and transaction of the exchange, and both NQNs.
#[derive(Clone, Copy, Debug)]
pub struct Transcript<'a> {
    /// The negotiated hash.
    pub hash: HashId,
    /// The challenge, augmented if a DH group is in use.
    pub challenge: &'a [u8],
    /// S1 (host response) or S2 (controller response).
    pub seqnum: u32,
    /// The transaction identifier.
    pub t_id: u16,
    /// The host NQN.
    pub hostnqn: &'a str,
    /// The subsystem NQN.
    pub subnqn: &'a str,
}

/// The response of `role` under the transformed `key`.
pub fn response(role: Role, key: &[u8], t: &Transcript<'_>) -> Vec<u8> {
    let (label, first, second): (&[u8], &str, &str) = match role {
        Role::Host => (b"HostHost", t.hostnqn, t.subnqn),
        Role::Controller => (b"Controller", t.subnqn, t.hostnqn),
    };
    hmac(
        t.hash,
        key,
        &[
            t.challenge,
            &t.seqnum.to_le_bytes(),
            &t.t_id.to_le_bytes(),
            &[0],
            label,
            first.as_bytes(),
            &[0],
            second.as_bytes(),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mac = hmac(
            HashId::Sha256,
            b"Jefe",
            &[b"what do ya want ", b"for nothing?"],
        );
        assert_eq!(
            mac[..8],
            [0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e],
            "HMAC-SHA-256"
        );
        assert_eq!(hmac(HashId::Sha384, b"Jefe", &[b"x"]).len(), 48);
        assert_eq!(hmac(HashId::Sha512, b"Jefe", &[b"x"]).len(), 64);
    }

    #[test]
    fn transform_binds_the_nqn_and_none_keeps_the_key() {
        let s = Secret::new(vec![7; 32], Transform::Sha256).unwrap();
        let (a, b) = (transform(&s, "nqn.a"), transform(&s, "nqn.b"));
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        let n = Secret::new(vec![7; 48], Transform::None).unwrap();
        assert_eq!(transform(&n, "nqn.a"), vec![7; 48]);
        let l = Secret::new(vec![7; 32], Transform::Sha512).unwrap();
        assert_eq!(transform(&l, "nqn.a").len(), 64);
    }

    #[test]
    fn responses_bind_every_field() {
        let t = Transcript {
            hash: HashId::Sha256,
            challenge: &[1; 32],
            seqnum: 5,
            t_id: 9,
            hostnqn: "nqn.h",
            subnqn: "nqn.c",
        };
        let base = response(Role::Host, b"key", &t);
        assert_ne!(base, response(Role::Controller, b"key", &t));
        assert_ne!(base, response(Role::Host, b"kez", &t));
        for changed in [
            Transcript { seqnum: 6, ..t },
            Transcript { t_id: 8, ..t },
            Transcript {
                hostnqn: "nqn.x",
                ..t
            },
            Transcript {
                subnqn: "nqn.x",
                ..t
            },
            Transcript {
                challenge: &[2; 32],
                ..t
            },
        ] {
            assert_ne!(base, response(Role::Host, b"key", &changed));
        }
        assert!(same(&base, &response(Role::Host, b"key", &t)));
        assert!(!same(&base, &base[1..]));
    }
}
