//! The CUDA driver calls (cudarc's driver API, loaded at run time).
#![allow(unsafe_code)] // FFI: the CUDA driver API

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use cudarc::driver::{result, sys};

use crate::{Gpu, GpuError};

fn cuda(what: &'static str) -> impl Fn(result::DriverError) -> GpuError {
    move |e| GpuError::Cuda {
        what,
        error: e.to_string(),
    }
}

/// The primary context of one device, released when the last user goes.
#[derive(Debug)]
struct Ctx {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: a CUDA context handle may be made current on any thread
// (cuCtxSetCurrent); every use below makes it current first.
unsafe impl Send for Ctx {}
// SAFETY: as above; the driver serializes calls on one context.
unsafe impl Sync for Ctx {}

impl Ctx {
    fn current(&self) -> Result<(), GpuError> {
        // SAFETY: `ctx` is the retained primary context of `dev`, alive
        // until `Drop` releases it.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(cuda("cuCtxSetCurrent"))
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: `dev` came from cuDeviceGet and its primary context was
        // retained once in `open`.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}

#[derive(Debug)]
pub(crate) struct CudaGpu {
    ctx: Arc<Ctx>,
}

#[derive(Debug)]
pub(crate) struct CudaBuffer {
    ctx: Arc<Ctx>,
    ptr: sys::CUdeviceptr,
    len: usize,
}

pub(crate) fn open(ordinal: usize) -> Result<Gpu, GpuError> {
    // SAFETY: only dlopen()s the candidate driver libraries and resolves
    // their symbols; no CUDA function is called. Without this check the
    // first driver call would panic on a machine without the driver.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoDriver(
            "libcuda.so (the NVIDIA driver's CUDA library) cannot be loaded".into(),
        ));
    }
    result::init().map_err(cuda("cuInit"))?;
    let count = result::device::get_count().map_err(cuda("cuDeviceGetCount"))? as usize;
    if ordinal >= count {
        return Err(GpuError::NoDevice { ordinal, count });
    }
    let dev = result::device::get(ordinal as i32).map_err(cuda("cuDeviceGet"))?;
    // SAFETY: `dev` was returned by cuDeviceGet.
    let ctx =
        unsafe { result::primary_ctx::retain(dev) }.map_err(cuda("cuDevicePrimaryCtxRetain"))?;
    let ctx = Arc::new(Ctx { dev, ctx });
    ctx.current()?;
    let name = result::device::get_name(dev).map_err(cuda("cuDeviceGetName"))?;
    // SAFETY: `dev` was returned by cuDeviceGet.
    let total_mem = unsafe { result::device::total_mem(dev) }.map_err(cuda("cuDeviceTotalMem"))?;
    // SAFETY: as above; an attribute the driver does not know is an error,
    // read as "not supported".
    let dma_buf = unsafe {
        result::device::get_attribute(
            dev,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
        )
    }
    .unwrap_or(0);
    Ok(Gpu {
        inner: CudaGpu { ctx },
        name,
        total_mem,
        dma_buf_supported: dma_buf != 0,
    })
}

impl CudaGpu {
    pub(crate) fn alloc(&self, len: usize) -> Result<CudaBuffer, GpuError> {
        self.ctx.current()?;
        // SAFETY: the context is current; the pointer is freed once, in Drop.
        let ptr = unsafe { result::malloc_sync(len.max(1)) }.map_err(cuda("cuMemAlloc"))?;
        let mut b = CudaBuffer {
            ctx: self.ctx.clone(),
            ptr,
            len,
        };
        b.write(&vec![0u8; len])?;
        Ok(b)
    }
}

impl CudaBuffer {
    pub(crate) fn write(&mut self, data: &[u8]) -> Result<(), GpuError> {
        self.ctx.current()?;
        // SAFETY: `ptr` holds `len` ≥ data.len() bytes (checked by the
        // caller) and the context that owns it is current.
        unsafe { result::memcpy_htod_sync(self.ptr, data) }.map_err(cuda("cuMemcpyHtoD"))
    }

    pub(crate) fn read(&self, out: &mut [u8]) -> Result<(), GpuError> {
        self.ctx.current()?;
        // SAFETY: as in `write`, for out.len() ≤ len bytes.
        unsafe { result::memcpy_dtoh_sync(out, self.ptr) }.map_err(cuda("cuMemcpyDtoH"))
    }

    pub(crate) fn export_dma_buf(&self) -> Result<OwnedFd, GpuError> {
        self.ctx.current()?;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: `fd` is a valid c_int the driver writes the descriptor
        // into; the range is our own allocation, page aligned.
        let r = unsafe {
            sys::cuMemGetHandleForAddressRange(
                (&mut fd as *mut std::ffi::c_int).cast(),
                self.ptr,
                self.len,
                sys::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                0,
            )
        };
        r.result().map_err(cuda("cuMemGetHandleForAddressRange"))?;
        if fd < 0 {
            return Err(GpuError::Unsupported(
                "the driver returned no dma-buf descriptor".into(),
            ));
        }
        // SAFETY: the driver handed us a new descriptor that nothing else
        // owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ctx.current().is_ok() {
            // SAFETY: allocated by cuMemAlloc in `alloc`, freed only here.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}
