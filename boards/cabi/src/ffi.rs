//! The C functions of `include/instcsd.h`. All of the crate's `unsafe` is
//! in this module and its children: calling the emulator's callbacks,
//! reading the structs and buffers it passes, and owning the `instcsd`
//! handle as a raw pointer.
//!
//! Every pointer is checked for null (and the structs for alignment)
//! before use; every body runs under [`guarded`], so a panic is an
//! `INSTCSD_EIO` and a poisoned device, never an unwind into C.

#[cfg(target_os = "none")]
mod hooks;
#[cfg(target_os = "none")]
mod panic_handler;

use alloc::boxed::Box;
use core::cell::Cell;
use core::ffi::{c_char, c_int, c_void};

use crate::abi::{self, DmaReadFn, DmaWriteFn, Env, NowFn, PanicFn, RawConfig};
use firmware::hal::Clock;

use crate::clock::{CommandClock, TimeSource};
use crate::config::Config;
use crate::error::{CabiError, describe};
use crate::guard::{Caught, guarded};
use crate::host::{DmaError, HostDma};
use crate::instance::Instance;

/// The emulator's DMA callbacks.
#[derive(Debug)]
struct EnvDma {
    ctx: *mut c_void,
    read: DmaReadFn,
    write: DmaWriteFn,
}

impl HostDma for EnvDma {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        // SAFETY: `buf` is a live, exclusively borrowed buffer of
        // `buf.len()` bytes for the whole call; the header's contract for
        // `dma_read` is to write at most `len` bytes there and keep no
        // pointer. `ctx` is the emulator's own value, passed back.
        let rc = unsafe { (self.read)(self.ctx, addr, buf.as_mut_ptr().cast(), buf.len()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(DmaError { code: rc, addr })
        }
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        // SAFETY: `data` is live and readable for `data.len()` bytes for the
        // whole call; `dma_write` only reads it and keeps no pointer.
        let rc = unsafe { (self.write)(self.ctx, addr, data.as_ptr().cast(), data.len()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(DmaError { code: rc, addr })
        }
    }
}

/// The emulator's `now_ns` (kept monotonic), or [`CommandClock`].
#[derive(Debug)]
struct EnvClock {
    ctx: *mut c_void,
    now: Option<NowFn>,
    last: Cell<u64>,
    commands: CommandClock,
}

impl Clock for EnvClock {
    fn now_ns(&self) -> u64 {
        let Some(now) = self.now else {
            return self.commands.now_ns();
        };
        // SAFETY: `now_ns` takes only the emulator's own `ctx`.
        let t = unsafe { now(self.ctx) }.max(self.last.get());
        self.last.set(t);
        t
    }
}

impl TimeSource for EnvClock {
    fn command_started(&mut self) {
        self.commands.command_started();
    }
}

/// What an `instcsd *` points to.
#[derive(Debug)]
pub struct Handle {
    inst: Instance<EnvDma, EnvClock>,
    ctx: *mut c_void,
    panic: Option<PanicFn>,
    poisoned: bool,
}

/// Tells the emulator about a caught panic (hosted targets; on
/// `x86_64-unknown-none` the panic handler does it).
fn report(ctx: *mut c_void, panic: Option<PanicFn>, caught: &Caught) {
    let msg = caught
        .message
        .as_deref()
        .unwrap_or("panic without a message");
    if let Some(f) = panic {
        // SAFETY: `msg` is live for the call and `len` is its length; the
        // header says the message is not NUL-terminated and not kept.
        unsafe { f(ctx, msg.as_ptr().cast::<c_char>(), msg.len()) };
    }
}

/// `ptr` as a shared reference, if non-null and aligned.
///
/// # Safety
/// A non-null, aligned `ptr` must point to a valid `T` that is not written
/// during `'a`.
unsafe fn arg<'a, T>(ptr: *const T, what: &'static str) -> Result<&'a T, CabiError> {
    if ptr.is_null() || !ptr.is_aligned() {
        return Err(CabiError::Null(what));
    }
    // SAFETY: non-null and aligned here; validity is the caller's promise.
    Ok(unsafe { &*ptr })
}

fn create(env: &Env, raw: &RawConfig) -> Result<Box<Handle>, CabiError> {
    let read = env.dma_read.ok_or(CabiError::MissingCallback("dma_read"))?;
    let write = env
        .dma_write
        .ok_or(CabiError::MissingCallback("dma_write"))?;
    let cfg = Config::from_raw(raw)?;
    #[cfg(target_os = "none")]
    hooks::install(env)?;
    let dma = EnvDma {
        ctx: env.ctx,
        read,
        write,
    };
    let clock = EnvClock {
        ctx: env.ctx,
        now: env.now_ns,
        last: Cell::new(0),
        commands: CommandClock::default(),
    };
    let inst = Instance::new(dma, clock, &cfg)?;
    Ok(Box::new(Handle {
        inst,
        ctx: env.ctx,
        panic: env.panic,
        poisoned: false,
    }))
}

/// Creates a device. See `instcsd_create` in the header.
///
/// # Safety
/// `env` and `cfg` must be null or point to valid, aligned structs; `out`
/// must be null or valid for writing one pointer. The callbacks in `env`
/// must honour the header's contracts for as long as the device lives.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instcsd_create(
    env: *const Env,
    cfg: *const RawConfig,
    out: *mut *mut Handle,
) -> c_int {
    if out.is_null() || !out.is_aligned() {
        return CabiError::Null("out").code();
    }
    // SAFETY: `out` is non-null and aligned; the caller promises it is
    // writable.
    unsafe { out.write(core::ptr::null_mut()) };
    // SAFETY: the caller's promise on `env` and `cfg`.
    let args = unsafe { arg(env, "env").and_then(|e| Ok((e, arg(cfg, "cfg")?))) };
    let (env, raw) = match args {
        Ok(a) => a,
        Err(e) => return e.code(),
    };
    let made = guarded(|| create(env, raw));
    match made {
        Ok(Ok(handle)) => {
            // SAFETY: as above; the handle is now the caller's.
            unsafe { out.write(Box::into_raw(handle)) };
            abi::OK
        }
        Ok(Err(e)) => e.code(),
        Err(caught) => {
            report(env.ctx, env.panic, &caught);
            CabiError::Poisoned.code()
        }
    }
}

/// Destroys a device; null is ignored. See the header.
///
/// # Safety
/// `dev` must be null or a pointer returned by `instcsd_create` that was
/// not destroyed yet and is not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instcsd_destroy(dev: *mut Handle) {
    if dev.is_null() {
        return;
    }
    // SAFETY: the caller hands back the pointer `Box::into_raw` made.
    let handle = unsafe { Box::from_raw(dev) };
    let (ctx, panic) = (handle.ctx, handle.panic);
    if let Err(caught) = guarded(move || drop(handle)) {
        report(ctx, panic, &caught);
    }
}

/// Runs one command to completion. See the header.
///
/// # Safety
/// `dev` must come from `instcsd_create` (not destroyed, not in use by
/// another thread); `sqe` must be readable for 64 bytes and `cqe_out`
/// writable for 16 (or null: an error is returned).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instcsd_submit(
    dev: *mut Handle,
    sqid: u16,
    sqe: *const u8,
    cqe_out: *mut u8,
) -> c_int {
    if dev.is_null() || !dev.is_aligned() {
        return CabiError::Null("dev").code();
    }
    if sqe.is_null() {
        return CabiError::Null("sqe").code();
    }
    if cqe_out.is_null() {
        return CabiError::Null("cqe_out").code();
    }
    // SAFETY: a live handle from `instcsd_create`, used by this thread
    // only (the caller's promise).
    let handle = unsafe { &mut *dev };
    if handle.poisoned {
        return CabiError::Poisoned.code();
    }
    let mut cmd = [0u8; proto::Sqe::SIZE];
    // SAFETY: `sqe` is readable for 64 bytes (the caller's promise) and
    // `cmd` is a distinct local array.
    unsafe { core::ptr::copy_nonoverlapping(sqe, cmd.as_mut_ptr(), cmd.len()) };
    let inst = &mut handle.inst;
    match guarded(|| inst.submit(sqid, &cmd)) {
        Ok(cqe) => {
            let bytes = cqe.to_bytes();
            // SAFETY: `cqe_out` is writable for 16 bytes (the caller's
            // promise); `bytes` is a local array.
            unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), cqe_out, bytes.len()) };
            abi::OK
        }
        Err(caught) => {
            handle.poisoned = true;
            report(handle.ctx, handle.panic, &caught);
            CabiError::Poisoned.code()
        }
    }
}

/// The ABI version this library implements (`INSTCSD_ABI_VERSION`).
#[unsafe(no_mangle)]
pub extern "C" fn instcsd_abi_version() -> u32 {
    abi::ABI_VERSION
}

/// A static, NUL-terminated description of a return code.
#[unsafe(no_mangle)]
pub extern "C" fn instcsd_strerror(code: c_int) -> *const c_char {
    describe(code).as_ptr()
}

#[cfg(test)]
mod tests;
