//! Keeping panics on this side of the C boundary.
//!
//! Hosted targets: every C entry point runs its body under
//! `std::panic::catch_unwind`, so a panic becomes an error code (and the
//! device is poisoned) instead of unwinding into C. (Since Rust 1.81 an
//! unwind out of an `extern "C"` function aborts the process anyway; the
//! guard turns that abort into a recoverable error.)
//!
//! `x86_64-unknown-none`: there is no unwinding; the crate's panic handler
//! reports to the emulator's `panic` callback and never returns.

/// A panic was caught; its message when it had one.
#[derive(Debug)]
pub struct Caught {
    /// The panic payload when it was a string.
    pub message: Option<alloc::string::String>,
}

/// Runs `f`, catching a panic where the target can.
#[cfg(not(target_os = "none"))]
pub fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    use alloc::string::ToString;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<alloc::string::String>().cloned());
        Caught { message }
    })
}

/// Runs `f` (no unwinding on this target: a panic never returns).
#[cfg(target_os = "none")]
pub fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    Ok(f())
}

#[cfg(all(test, not(target_os = "none")))]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_message() {
        assert_eq!(guarded(|| 7).unwrap(), 7);
        let caught = guarded(|| -> u8 { panic!("boom {}", 1) }).unwrap_err();
        assert_eq!(caught.message.as_deref(), Some("boom 1"));
    }
}
