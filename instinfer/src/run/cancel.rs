//! Cancellation of a long job (Ctrl-C): the CLI's signal handler asks,
//! the job checks between steps, stops, and cleans up (closes its
//! sequences on the drive) before it returns.

use std::sync::atomic::{AtomicBool, Ordering};

static CANCEL: AtomicBool = AtomicBool::new(false);

/// Asks the running job to stop; `true` if it had been asked already.
pub fn request() -> bool {
    CANCEL.swap(true, Ordering::SeqCst)
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    CANCEL.load(Ordering::SeqCst)
}

/// Clears the request (for a new job in the same process).
pub fn reset() {
    CANCEL.store(false, Ordering::SeqCst);
}
