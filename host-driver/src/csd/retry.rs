//! Re-running one decode on one device after a failure that may pass: an
//! error status whose Do Not Retry bit is clear (an unrecovered read error,
//! say) or a command that got no completion.
//!
//! A decode that carries the new token (APPEND_KV) is not idempotent: the
//! firmware appends the token before it reads the stored pages, so a
//! decode that failed on a read has appended its token, and running it
//! again is refused with Position Mismatch. The retry therefore follows
//! the device: after a Position Mismatch it runs the other form (the
//! decode without the token at the same position, or with it), once per
//! failure. Both forms ask the device to attend over the same tokens, so
//! a decode that completes returns the same bits either way.

use attention::shape::Method;
use proto::Status;

use super::{Approx, Csd, CsdError, DecodeInput, DecodeOutput};
use crate::transport::{Transport, TransportError};

/// How often a failed decode is run again on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Re-runs after transient failures (0: none).
    pub attempts: u32,
}

impl Default for RetryPolicy {
    /// Two re-runs: with the firmware's own two re-reads of a page, a
    /// transient read failure gets nine reads before the decode fails.
    fn default() -> Self {
        Self { attempts: 2 }
    }
}

impl CsdError {
    /// Whether running the command again may succeed: a status with Do Not
    /// Retry clear, or a transport failure of the command itself (no
    /// completion, a broken connection, a controller the transport reset).
    pub fn is_transient(&self) -> bool {
        match self {
            CsdError::Status { status, .. } => !status.dnr,
            CsdError::Transport(t) => matches!(
                t,
                TransportError::NoCompletion(_)
                    | TransportError::DeviceFailed(_)
                    | TransportError::Io(_)
            ),
            _ => false,
        }
    }

    /// Whether the device refused the command's position (Position
    /// Mismatch): a decode with a new token the device already holds.
    pub fn is_position_mismatch(&self) -> bool {
        matches!(self, CsdError::Status { status, .. } if status.same_code(&Status::POSITION_MISMATCH))
    }
}

/// What [`Csd::decode_retrying`] did besides the decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryReport {
    /// Transient failures that were run again.
    pub retries: u32,
    /// Whether the device already held the new token (the decode completed
    /// in its form without APPEND_KV).
    pub token_was_stored: bool,
}

impl<T: Transport> Csd<T> {
    /// One decode, submitted and fetched, run again under `policy` after
    /// transient failures (see the module docs); the last error otherwise.
    /// The report counts the re-runs either way.
    pub fn decode_retrying(
        &mut self,
        seq: u32,
        layer: u16,
        position: u32,
        input: DecodeInput<'_>,
        method: Method,
        policy: RetryPolicy,
    ) -> (Result<DecodeOutput, CsdError>, RetryReport) {
        let without_token = DecodeInput {
            kv_new: None,
            approx: input.approx.map(|a| Approx { k_new: None, ..a }),
            ..input
        };
        let mut report = RetryReport::default();
        // Whether the device is taken to hold the token already.
        let mut stored = input.kv_new.is_none();
        // A failed attempt leaves the token's fate unknown: one switch of
        // form is allowed per failure (and for the first attempt, which
        // follows a failed batch).
        let mut may_switch = input.kv_new.is_some();
        loop {
            let form = if stored { without_token } else { input };
            let r = self
                .submit_decode_with(seq, layer, position, form, method)
                .and_then(|t| self.fetch(t));
            match r {
                Ok(out) => {
                    report.token_was_stored = stored && input.kv_new.is_some();
                    return (Ok(out), report);
                }
                Err(e) if may_switch && e.is_position_mismatch() => {
                    stored = !stored;
                    may_switch = false;
                }
                Err(e) if e.is_transient() && report.retries < policy.attempts => {
                    report.retries += 1;
                    may_switch = input.kv_new.is_some();
                }
                Err(e) => return (Err(e), report),
            }
        }
    }
}
