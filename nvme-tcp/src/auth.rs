//! In-band authentication (DH-HMAC-CHAP, NVMe Base 2.x): hosts' secrets
//! in the representation nvme-cli and the kernel use ([`secret`]), the
//! owner-only secrets file that holds them ([`secrets_file`]), the values
//! the protocol computes ([`chap`]), Diffie-Hellman over the RFC 7919
//! groups ([`dh`], [`ffdhe`]), and the two sides of the exchange:
//! [`controller`] (in `instinfer serve`) and [`host`] (in the initiator).

pub mod chap;
pub mod controller;
pub mod dh;
mod ffdhe;
pub mod host;
pub mod secret;
pub mod secrets_file;

pub use controller::ControllerChap;
pub use secret::{Secret, Transform};
pub use secrets_file::{HostSecrets, load};

use proto::auth::{DhGroup, HashId};

/// Why a secret, a secrets file or an exchange was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// The text is not a `DHHC-1:` secret.
    #[error("secret: {0}")]
    Secret(String),
    /// The secrets file could not be used.
    #[error("secrets file {path}: {why}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The exchange broke (a malformed or unexpected message, a bad DH
    /// value, a wrong controller response).
    #[error("authentication: {0}")]
    Protocol(String),
    /// The controller refused us with AUTH_Failure1.
    #[error("authentication refused by the controller (reason explanation {explanation:#04x}: {})", explain(*.explanation))]
    Refused {
        /// Its reason code explanation.
        explanation: u8,
    },
    /// The transport failed under the exchange.
    #[error("authentication: {0}")]
    Transport(String),
}

/// Words for a reason code explanation.
pub fn explain(explanation: u8) -> &'static str {
    use proto::auth::explanation as e;
    match explanation {
        e::FAILED => "authentication failed",
        e::NOT_USABLE => "protocol not usable",
        e::CONCAT_MISMATCH => "secure channel concatenation mismatch",
        e::HASH_UNUSABLE => "no usable hash",
        e::DHGROUP_UNUSABLE => "no usable DH group",
        e::INCORRECT_PAYLOAD => "incorrect payload",
        e::INCORRECT_MESSAGE => "message out of order",
        _ => "unknown",
    }
}

/// The hashes and DH groups a controller accepts, in its order of
/// preference (it picks the first the host offers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Hashes.
    pub hashes: Vec<HashId>,
    /// DH groups.
    pub groups: Vec<DhGroup>,
}

impl Default for Policy {
    /// SHA-256, 384, 512; ffdhe2048 first, then the larger groups, then
    /// the null group (an exchange without DH, which a host that offers
    /// nothing else still gets).
    fn default() -> Self {
        Self {
            hashes: HashId::ALL.to_vec(),
            groups: vec![
                DhGroup::Ffdhe2048,
                DhGroup::Ffdhe3072,
                DhGroup::Ffdhe4096,
                DhGroup::Ffdhe6144,
                DhGroup::Ffdhe8192,
                DhGroup::Null,
            ],
        }
    }
}

impl Policy {
    /// Parses `--dhchap-hashes` (`sha256,sha384,sha512`) and
    /// `--dhchap-groups` (`null,ffdhe2048,…,ffdhe8192`) lists.
    pub fn parse(hashes: Option<&str>, groups: Option<&str>) -> Result<Self, String> {
        let d = Self::default();
        let list = |s: &str, f: &dyn Fn(&str) -> Option<u8>| -> Result<Vec<u8>, String> {
            let v: Vec<u8> = s
                .split(',')
                .map(|w| f(w.trim()).ok_or_else(|| format!("unknown name {w:?}")))
                .collect::<Result<_, _>>()?;
            if v.is_empty() {
                return Err("empty list".into());
            }
            Ok(v)
        };
        let hashes = match hashes {
            None => d.hashes,
            Some(s) => list(s, &|w| match w {
                "sha256" => Some(1),
                "sha384" => Some(2),
                "sha512" => Some(3),
                _ => None,
            })
            .map_err(|e| format!("--dhchap-hashes: {e} (sha256, sha384, sha512)"))?
            .into_iter()
            .filter_map(HashId::from_id)
            .collect(),
        };
        let groups = match groups {
            None => d.groups,
            Some(s) => list(s, &|w| match w {
                "null" => Some(0),
                "ffdhe2048" => Some(1),
                "ffdhe3072" => Some(2),
                "ffdhe4096" => Some(3),
                "ffdhe6144" => Some(4),
                "ffdhe8192" => Some(5),
                _ => None,
            })
            .map_err(|e| format!("--dhchap-groups: {e} (null, ffdhe2048 … ffdhe8192)"))?
            .into_iter()
            .filter_map(DhGroup::from_id)
            .collect(),
        };
        Ok(Self { hashes, groups })
    }
}

#[cfg(test)]
mod exchange_tests;
