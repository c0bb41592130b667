//! GPU memory for the host side of InstInfer: a GPU buffer the drive can
//! be pointed at, its export as a dma-buf, and a report of which
//! peer-to-peer mapping paths the machine's kernel and driver accept.
//!
//! Everything CUDA is behind the `cuda` feature and loaded at run time
//! ([`open`] first checks that the driver library is there): without the
//! feature, or on a machine without the NVIDIA driver, every entry point
//! returns a [`GpuError`] that says which, never a panic.
//!
//! | module | owns |
//! | --- | --- |
//! | `cuda` | (feature `cuda`) the CUDA driver calls, loaded at run time; the crate's only `unsafe`, each block saying why it holds |
//! | `report` | [`report()`]: which peer-to-peer paths between a GPU and an NVMe device this machine accepts, each tried or checked |
#![deny(unsafe_code)]

#[cfg(feature = "cuda")]
mod cuda;
mod report;

pub use report::{MappingReport, PathOutcome, report};

use thiserror::Error;

/// Why GPU memory cannot be had.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// Built without the `cuda` feature.
    #[error("built without GPU support (rebuild with `--features cuda`)")]
    NotBuilt,
    /// The NVIDIA driver library (libcuda) is not on this machine.
    #[error("no NVIDIA driver: {0}")]
    NoDriver(String),
    /// The driver is there but has no GPU with this ordinal.
    #[error("no GPU {ordinal} ({count} found)")]
    NoDevice {
        /// Asked for.
        ordinal: usize,
        /// GPUs the driver reports.
        count: usize,
    },
    /// A CUDA call failed.
    #[error("CUDA: {what}: {error}")]
    Cuda {
        /// The call.
        what: &'static str,
        /// The driver's error.
        error: String,
    },
    /// The operation is not available on this GPU or driver.
    #[error("{0}")]
    Unsupported(String),
}

/// A GPU, its context current on the calling thread.
#[derive(Debug)]
pub struct Gpu {
    #[cfg(feature = "cuda")]
    inner: cuda::CudaGpu,
    /// Name (`cuDeviceGetName`).
    pub name: String,
    /// Memory, bytes.
    pub total_mem: usize,
    /// Whether the driver says the GPU can export dma-bufs
    /// (`CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`).
    pub dma_buf_supported: bool,
}

/// Device memory on a [`Gpu`]; freed on drop.
#[derive(Debug)]
pub struct GpuBuffer {
    #[cfg(feature = "cuda")]
    inner: cuda::CudaBuffer,
    len: usize,
}

/// Opens GPU `ordinal`.
pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
    #[cfg(feature = "cuda")]
    {
        cuda::open(ordinal)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(GpuError::NotBuilt)
    }
}

impl Gpu {
    /// `len` bytes of device memory (zeroed).
    pub fn alloc(&self, len: usize) -> Result<GpuBuffer, GpuError> {
        #[cfg(feature = "cuda")]
        {
            Ok(GpuBuffer {
                inner: self.inner.alloc(len)?,
                len,
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = len;
            Err(GpuError::NotBuilt)
        }
    }
}

impl GpuBuffer {
    /// Bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` (at most [`Self::len`] bytes) to the start of the
    /// buffer (host to device).
    pub fn write(&mut self, data: &[u8]) -> Result<(), GpuError> {
        if data.len() > self.len {
            return Err(GpuError::Unsupported(format!(
                "{} bytes into a {}-byte GPU buffer",
                data.len(),
                self.len
            )));
        }
        #[cfg(feature = "cuda")]
        {
            self.inner.write(data)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(GpuError::NotBuilt)
        }
    }

    /// Copies the first `out.len()` bytes out (device to host).
    pub fn read(&self, out: &mut [u8]) -> Result<(), GpuError> {
        if out.len() > self.len {
            return Err(GpuError::Unsupported(format!(
                "{} bytes out of a {}-byte GPU buffer",
                out.len(),
                self.len
            )));
        }
        #[cfg(feature = "cuda")]
        {
            self.inner.read(out)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(GpuError::NotBuilt)
        }
    }

    /// Exports the buffer as a dma-buf file descriptor
    /// (`cuMemGetHandleForAddressRange`, `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`):
    /// what a kernel importer (an RDMA NIC, iommufd, a P2P-capable driver)
    /// maps for peer-to-peer DMA. The range must be page aligned (the
    /// allocation is; its length is rounded down to whole 64 KiB pages
    /// where the driver asks for that).
    pub fn export_dma_buf(&self) -> Result<std::os::fd::OwnedFd, GpuError> {
        #[cfg(feature = "cuda")]
        {
            self.inner.export_dma_buf()
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(GpuError::NotBuilt)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without a GPU (or without the feature) opening fails
    /// with an error that says why; nothing panics.
    #[test]
    fn a_missing_gpu_is_a_clear_error() {
        match open(0) {
            Ok(g) => {
                // A GPU machine: the buffer round-trips.
                let mut b = g.alloc(8192).expect("alloc");
                let data: Vec<u8> = (0..8192).map(|i| i as u8).collect();
                b.write(&data).expect("write");
                let mut back = vec![0u8; 8192];
                b.read(&mut back).expect("read");
                assert_eq!(back, data);
                assert!(b.write(&[0; 9000]).is_err());
            }
            Err(e) => {
                let msg = e.to_string();
                #[cfg(not(feature = "cuda"))]
                assert_eq!(e, GpuError::NotBuilt, "{msg}");
                #[cfg(feature = "cuda")]
                assert!(
                    matches!(e, GpuError::NoDriver(_) | GpuError::NoDevice { .. }),
                    "{msg}"
                );
                assert!(msg.len() > 10);
            }
        }
    }
}
