//! `x86_64-unknown-none`: the process-wide (module-wide) hooks taken from
//! the first successful `instcsd_create` — the global allocator
//! (`alloc`/`free`) and the `panic` callback — with that call's `ctx`.
//!
//! They are installed once and never removed (memory may outlive any one
//! device). A later `instcsd_create` must pass the same `alloc` and `free`
//! functions or it fails with `INSTCSD_EBUSY`; its `ctx` is used for its
//! own DMA and clock only. Before the first create the allocator returns
//! null (nothing in this library allocates before then).

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use crate::abi::{AllocFn, Env, FreeFn, PanicFn};
use crate::error::CabiError;

const EMPTY: u8 = 0;
const INSTALLING: u8 = 1;
const READY: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(EMPTY);
static CTX: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
static ALLOC: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());
static FREE: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());
static PANIC: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Installs `env`'s hooks, or checks them against the installed ones.
pub(super) fn install(env: &Env) -> Result<(), CabiError> {
    let alloc = env.alloc.ok_or(CabiError::MissingCallback("alloc"))? as *mut ();
    let free = env.free.ok_or(CabiError::MissingCallback("free"))? as *mut ();
    if STATE
        .compare_exchange(EMPTY, INSTALLING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        CTX.store(env.ctx, Ordering::Relaxed);
        ALLOC.store(alloc, Ordering::Relaxed);
        FREE.store(free, Ordering::Relaxed);
        let panic = env.panic.map_or(core::ptr::null_mut(), |f| f as *mut ());
        PANIC.store(panic, Ordering::Relaxed);
        STATE.store(READY, Ordering::Release);
        return Ok(());
    }
    while STATE.load(Ordering::Acquire) != READY {
        core::hint::spin_loop();
    }
    let same = ALLOC.load(Ordering::Relaxed) == alloc && FREE.load(Ordering::Relaxed) == free;
    if same {
        Ok(())
    } else {
        Err(CabiError::AllocatorBusy)
    }
}

/// The installed `panic` callback and its `ctx`.
pub(super) fn panic_hook() -> Option<(PanicFn, *mut c_void)> {
    if STATE.load(Ordering::Acquire) != READY {
        return None;
    }
    let p = PANIC.load(Ordering::Relaxed);
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null PANIC was stored from a `PanicFn` in `install`;
    // data and function pointers have the same size on this target.
    let f = unsafe { core::mem::transmute::<*mut (), PanicFn>(p) };
    Some((f, CTX.load(Ordering::Relaxed)))
}

/// The global allocator: the emulator's `alloc`/`free`.
struct Hooks;

// SAFETY: `alloc` returns the emulator's memory for `layout` (or null,
// which Rust treats as allocation failure); the header requires `alloc`
// to honour `size` and `align` and `free` to accept exactly what `alloc`
// returned with the same size and align, which is how `dealloc` calls it.
unsafe impl GlobalAlloc for Hooks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if STATE.load(Ordering::Acquire) != READY {
            return core::ptr::null_mut();
        }
        let p = ALLOC.load(Ordering::Relaxed);
        // SAFETY: READY means ALLOC holds the `AllocFn` stored by
        // `install`; function and data pointers have the same size here.
        let f = unsafe { core::mem::transmute::<*mut (), AllocFn>(p) };
        // SAFETY: the emulator's allocator, called as the header documents.
        unsafe { f(CTX.load(Ordering::Relaxed), layout.size(), layout.align()) }.cast()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if STATE.load(Ordering::Acquire) != READY {
            return;
        }
        let p = FREE.load(Ordering::Relaxed);
        // SAFETY: READY means FREE holds the `FreeFn` stored by `install`.
        let f = unsafe { core::mem::transmute::<*mut (), FreeFn>(p) };
        // SAFETY: `ptr` came from `alloc` above with this `layout`.
        unsafe {
            f(
                CTX.load(Ordering::Relaxed),
                ptr.cast(),
                layout.size(),
                layout.align(),
            )
        }
    }
}

#[global_allocator]
static GLOBAL: Hooks = Hooks;
