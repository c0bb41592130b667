//! In-band authentication (DH-HMAC-CHAP, NVMe Base 2.x): the pieces that
//! stand alone so far — hosts' secrets in the representation nvme-cli and
//! the kernel use ([`secret`]) and the owner-only secrets file that holds
//! them ([`secrets_file`]). The protocol exchange is not wired into the
//! target or the initiator yet.

pub mod secret;
pub mod secrets_file;

pub use secret::{Secret, Transform};
pub use secrets_file::{HostSecrets, load};

/// Why a secret or a secrets file was refused.
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
}
