//! The C functions called as C would call them (hosted targets).

use super::*;
use crate::host::HostDma;
use crate::testmem::SparseMemory;
use alloc::boxed::Box;
use core::ffi::CStr;
use proto::{Cqe, Sqe, Status};

unsafe extern "C" fn read(ctx: *mut c_void, addr: u64, buf: *mut c_void, len: usize) -> c_int {
    // SAFETY: the tests pass a live `SparseMemory` as ctx; `buf` is valid
    // for `len` bytes during the call (the library's contract).
    let (mem, buf) = unsafe {
        (
            &mut *ctx.cast::<SparseMemory>(),
            core::slice::from_raw_parts_mut(buf.cast::<u8>(), len),
        )
    };
    mem.read(addr, buf).map_or_else(|e| e.code, |()| 0)
}

unsafe extern "C" fn write(ctx: *mut c_void, addr: u64, buf: *const c_void, len: usize) -> c_int {
    // SAFETY: as in `read`.
    let (mem, data) = unsafe {
        (
            &mut *ctx.cast::<SparseMemory>(),
            core::slice::from_raw_parts(buf.cast::<u8>(), len),
        )
    };
    mem.write(addr, data).map_or_else(|e| e.code, |()| 0)
}

unsafe extern "C" fn clock(_ctx: *mut c_void) -> u64 {
    1_000_000
}

/// Host memory owned through a raw pointer, so that the callbacks (which
/// get the same pointer as `ctx`) and the test may both reach it.
struct Host(*mut SparseMemory);

impl Host {
    fn new() -> Self {
        Self(Box::into_raw(Box::default()))
    }

    fn mem(&mut self) -> &mut SparseMemory {
        // SAFETY: the pointer is from `Box::into_raw` and freed only on
        // drop; no callback runs while this borrow lives.
        unsafe { &mut *self.0 }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // SAFETY: from `Box::into_raw`, freed once, after every device
        // using it was destroyed.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

fn env(host: &Host) -> Env {
    Env {
        ctx: host.0.cast(),
        dma_read: Some(read),
        dma_write: Some(write),
        alloc: None,
        free: None,
        now_ns: Some(clock),
        panic: None,
    }
}

fn create_with(env: &Env, cfg: &RawConfig) -> (c_int, *mut Handle) {
    let mut dev = core::ptr::dangling_mut::<Handle>();
    // SAFETY: valid references and a valid out pointer.
    let rc = unsafe { instcsd_create(env, cfg, &mut dev) };
    (rc, dev)
}

fn submit(dev: *mut Handle, sqid: u16, sqe: &Sqe) -> (c_int, Cqe) {
    let mut out = [0xEEu8; 16];
    // SAFETY: `dev` comes from a successful create; the arrays have the
    // sizes the function reads and writes.
    let rc = unsafe { instcsd_submit(dev, sqid, sqe.to_bytes().as_ptr(), out.as_mut_ptr()) };
    (rc, Cqe::from_bytes(&out).unwrap())
}

#[test]
fn identify_through_the_c_functions() {
    let mut host = Host::new();
    host.mem().map(0x4000);
    let e = env(&host);
    let (rc, dev) = create_with(&e, &RawConfig::new(4096, 4096));
    assert_eq!(rc, abi::OK);
    assert!(!dev.is_null());
    let mut sqe = proto::identify_controller();
    sqe.prp1 = 0x4000;
    sqe.set_cid(0x1234);
    let (rc, cqe) = submit(dev, 0, &sqe);
    assert_eq!(rc, abi::OK);
    assert_eq!(cqe.status(), Status::SUCCESS);
    assert_eq!(
        (cqe.cid, cqe.sq_id, cqe.sq_head, cqe.phase()),
        (0x1234, 0, 0, false)
    );
    assert_eq!(&host.mem().bytes(0x4000 + 3072, 4), b"ICSD");

    // A refused DMA is a status, and the device keeps serving.
    sqe.prp1 = 0x9000;
    let (rc, cqe) = submit(dev, 0, &sqe);
    assert_eq!((rc, cqe.status()), (abi::OK, Status::DATA_TRANSFER_ERROR));

    // The statistics log shows the emulator's clock.
    let mut log = proto::get_log_page(proto::log::LID_STATS, 512);
    log.prp1 = 0x4000;
    let (rc, cqe) = submit(dev, 0, &log);
    assert_eq!((rc, cqe.status()), (abi::OK, Status::SUCCESS));
    let stats = proto::StatsLog::from_bytes(host.mem().bytes(0x4000, 512)).unwrap();
    assert_eq!((stats.commands, stats.errors), (3, 1));
    assert_eq!(stats.virtual_ns_total, 1_000_000);
    assert_eq!(host.mem().crossings, 0);

    // SAFETY: `dev` came from create and is not used afterwards.
    unsafe { instcsd_destroy(dev) };
}

#[test]
fn null_pointers_and_missing_callbacks_are_einval() {
    let host = Host::new();
    let e = env(&host);
    let cfg = RawConfig::new(4096, 64);
    let mut dev = core::ptr::dangling_mut::<Handle>();
    // SAFETY: null arguments are what is being tested; `dev` is writable.
    unsafe {
        assert_eq!(instcsd_create(&e, &cfg, core::ptr::null_mut()), abi::EINVAL);
        assert_eq!(
            instcsd_create(core::ptr::null(), &cfg, &mut dev),
            abi::EINVAL
        );
        assert!(dev.is_null(), "*out is cleared on failure");
        assert_eq!(instcsd_create(&e, core::ptr::null(), &mut dev), abi::EINVAL);
    }
    let no_read = Env {
        dma_read: None,
        ..e
    };
    assert_eq!(create_with(&no_read, &cfg).0, abi::EINVAL);
    let mut old = cfg;
    old.abi_version = 0;
    assert_eq!(create_with(&e, &old), (abi::ENOTSUP, core::ptr::null_mut()));
    let mut bad = cfg;
    bad.page_size = 512;
    assert_eq!(create_with(&e, &bad).0, abi::EINVAL);

    let (rc, dev) = create_with(&e, &cfg);
    assert_eq!(rc, abi::OK);
    let sqe = [0u8; 64];
    let mut cqe = [0u8; 16];
    // SAFETY: null arguments are what is being tested; the others valid.
    unsafe {
        let null = core::ptr::null_mut();
        assert_eq!(
            instcsd_submit(null, 1, sqe.as_ptr(), cqe.as_mut_ptr()),
            abi::EINVAL
        );
        assert_eq!(
            instcsd_submit(dev, 1, core::ptr::null(), cqe.as_mut_ptr()),
            abi::EINVAL
        );
        assert_eq!(
            instcsd_submit(dev, 1, sqe.as_ptr(), null.cast()),
            abi::EINVAL
        );
        instcsd_destroy(core::ptr::null_mut());
        instcsd_destroy(dev);
    }
}

#[test]
fn version_and_error_strings() {
    assert_eq!(instcsd_abi_version(), abi::ABI_VERSION);
    // SAFETY: `instcsd_strerror` returns static NUL-terminated strings.
    let s = unsafe { CStr::from_ptr(instcsd_strerror(abi::ENOTSUP)) };
    assert_eq!(s.to_str().unwrap(), "unsupported ABI version");
}
