//! The defmt global logger: frames (rzCOBS-encoded) go out on the board's
//! second Cadence UART, which QEMU writes to a file; the host decodes them
//! against the firmware ELF (`defmt-print -e <elf> < defmt.bin`, or
//! `defmt-decoder` in the QEMU test).

use core::cell::RefCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use critical_section::Mutex;

use board_openssd::mmio::Mmio;
use board_openssd::uart::{CadenceUart, WINDOW};

/// MMIO base of the log UART; 0 until [`init`] (frames are dropped).
static BASE: AtomicUsize = AtomicUsize::new(0);
static ENCODER: Mutex<RefCell<defmt::Encoder>> = Mutex::new(RefCell::new(defmt::Encoder::new()));

/// Sends log frames to the Cadence UART at `base`.
///
/// # Safety
///
/// `base` must be a Cadence UART's MMIO base, mapped as device memory, that
/// nothing else drives.
#[allow(unsafe_code)] // MMIO: the UART registers at `base`
pub(crate) unsafe fn init(base: usize) {
    // SAFETY: the caller's contract; this enables the UART once.
    let _ = CadenceUart::new(unsafe { Mmio::new(base, WINDOW) });
    BASE.store(base, Ordering::Release);
}

fn put(bytes: &[u8]) {
    let base = BASE.load(Ordering::Acquire);
    if base == 0 {
        return;
    }
    // SAFETY: `init`'s contract made `base` a UART only the logger drives;
    // `attach` does not reset it.
    #[allow(unsafe_code)]
    let mut u = CadenceUart::attach(unsafe { Mmio::new(base, WINDOW) });
    for &b in bytes {
        u.put(b);
    }
}

#[defmt::global_logger]
struct Logger;

// SAFETY: single core, no interrupts: `acquire`/`release` pairs cannot
// interleave, and every encoder access is inside a critical section.
#[allow(unsafe_code)]
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        critical_section::with(|cs| ENCODER.borrow_ref_mut(cs).start_frame(put));
    }

    unsafe fn flush() {}

    unsafe fn release() {
        critical_section::with(|cs| ENCODER.borrow_ref_mut(cs).end_frame(put));
    }

    unsafe fn write(bytes: &[u8]) {
        critical_section::with(|cs| ENCODER.borrow_ref_mut(cs).write(bytes, put));
    }
}

#[defmt::panic_handler]
fn defmt_panic() -> ! {
    crate::exit(101)
}
