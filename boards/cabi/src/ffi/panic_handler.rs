//! `x86_64-unknown-none`: the panic handler. It formats the panic message
//! into a fixed buffer (no allocation), hands it to the emulator's `panic`
//! callback if one was installed, and then spins forever: there is no
//! unwinding and nothing to return to. In a kernel the callback should
//! stop the machine (`BUG()`/`panic()`), since the panicking thread never
//! comes back.

use core::fmt::Write;
use core::panic::PanicInfo;

/// A message truncated to what fits.
struct Message {
    bytes: [u8; 256],
    len: usize,
}

impl Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[panic_handler]
fn on_panic(info: &PanicInfo<'_>) -> ! {
    let mut msg = Message {
        bytes: [0; 256],
        len: 0,
    };
    let _ = write!(msg, "instcsd: {info}");
    if let Some((f, ctx)) = super::hooks::panic_hook() {
        // SAFETY: the emulator's callback with its `ctx`; `msg` is live for
        // the call and `len` is its length (not NUL-terminated).
        unsafe { f(ctx, msg.bytes.as_ptr().cast(), msg.len) };
    }
    loop {
        core::hint::spin_loop();
    }
}
