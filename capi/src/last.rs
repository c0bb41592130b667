//! The calling thread's last error: its message (for
//! `instinfer_last_error`) and a drive's NVMe status.

use std::cell::RefCell;
use std::ffi::CString;

use offload::OffloadError;

thread_local! {
    static LAST: RefCell<(CString, u16)> = RefCell::new((CString::default(), 0));
}

/// Records `e` and returns its code.
pub fn set(e: &OffloadError) -> i32 {
    record(&e.to_string(), e.nvme_status().unwrap_or(0));
    e.code()
}

/// Records a message (interior NULs dropped) and status.
pub fn record(msg: &str, status: u16) {
    let text = CString::new(msg.replace('\0', "")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = (text, status));
}

/// Runs `f` with the last message.
pub fn with_message<T>(f: impl FnOnce(&CString) -> T) -> T {
    LAST.with(|l| f(&l.borrow().0))
}

/// The last NVMe status (0: none).
pub fn status() -> u16 {
    LAST.with(|l| l.borrow().1)
}

/// The name of an error code.
pub fn code_name(code: i32) -> &'static std::ffi::CStr {
    match code {
        0 => c"success",
        1 => c"invalid argument",
        2 => c"sequence not open",
        3 => c"sequence already open",
        4 => c"no such pending batch",
        5 => c"the drive completed the command with an error status",
        6 => c"transport error",
        7 => c"not an InstCSD drive, or a bad reply",
        8 => c"SSD store error",
        9 => c"internal error",
        _ => c"unknown error code",
    }
}
