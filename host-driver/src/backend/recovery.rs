//! What [`super::InStorage`] does when the drive fails a step, and what it
//! counted.
//!
//! The policy, in order:
//!
//! 1. **Retry on the drive.** Each step of a batch has its own result
//!    ([`crate::array::CsdArray::decode_batch_each`]). A failed step is
//!    run again alone ([`crate::array::CsdArray::decode_retrying`]), up to
//!    [`crate::csd::RetryPolicy::attempts`] times, after a failure whose
//!    status has Do Not Retry clear (an unrecovered read error: the
//!    firmware has already re-read the page twice) or that got no
//!    completion. The new token is never stored twice: a step refused
//!    with Position Mismatch because the drive holds its token already is
//!    run without it (always, with any policy: that is no retry).
//! 2. **Recompute on the host from its own copy**, when the backend keeps
//!    one ([`super::InStorage::keep_host_copy`]): a copy of every sequence's
//!    KV in host memory, computed with the device's bit-exact engine model,
//!    so a recomputed output has the bits the drive would have returned.
//!    A step that still fails on the drive is computed from that copy, and
//!    its sequence moves to the host for the rest of its life (its pages on
//!    the drive are released): the drive's copy may lack the step's token.
//!    An append that fails on the drive moves its sequence the same way.
//! 3. **Fail loudly** without a host copy: the first error of the batch is
//!    returned after every other step has been tried, with the drive's
//!    status. The failed steps' tokens may or may not be on the drive:
//!    close the sequence.
//!
//! An output is never computed from a failed read: the firmware fails the
//! command instead (see `firmware::flash`).

/// Counts of [`super::InStorage`]'s recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Decode batches in which at least one step failed on the drive.
    pub batches_failed: u64,
    /// Re-runs of failed steps after transient failures.
    pub retries: u64,
    /// Failed steps that then completed on the drive.
    pub steps_recovered: u64,
    /// Steps computed from the host copy after the drive failed them.
    pub steps_recomputed: u64,
    /// Steps of sequences already moved to the host copy.
    pub steps_on_host: u64,
    /// Sequences moved to the host copy.
    pub sequences_moved: u64,
    /// Steps and appends that failed for good (no host copy).
    pub failed: u64,
}
