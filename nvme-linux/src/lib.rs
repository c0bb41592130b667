//! The Linux kernel's NVMe passthrough interface: an admin or I/O command
//! (the 64-byte SQE's fields) and a user buffer go to the kernel with
//! `NVME_IOCTL_ADMIN_CMD` / `NVME_IOCTL_IO_CMD` on the controller's char
//! device (`/dev/nvmeX`) or a namespace (`/dev/nvmeXnY`, `/dev/ngXnY`); the
//! kernel builds the PRPs, and returns the NVMe status and result dword.
//!
//! | module | owns |
//! | --- | --- |
//! | [`cmd`] | `struct nvme_passthru_cmd` and the ioctl numbers (layout tested) |
//! | `sys` | the `ioctl(2)` calls — the crate's only `unsafe` (Linux only) |
//! | [`uring`] | [`Uring`]: I/O passthrough through io_uring (`IORING_OP_URING_CMD`), many commands in flight |
//! | [`vfio`] | [`vfio::VfioNvme`]: a user-space NVMe driver over VFIO (IOMMU-mapped DMA, polled queues) |
//! | [`direct`] | [`direct::DirectFile`]: `O_DIRECT` block I/O through io_uring into a registered aligned arena (the SSD KV store's path) |
//! | [`device`] | [`Device`]: a controller and one namespace, commands in, completions out, with the transfer limit |

#![deny(unsafe_code)]

pub mod cmd;
#[cfg(target_os = "linux")]
pub mod device;
#[cfg(target_os = "linux")]
pub mod direct;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
pub mod uring;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod vfio;

pub use cmd::PassthruCmd;
#[cfg(target_os = "linux")]
pub use device::{COMMAND_TIMEOUT_MS, Completion, Data, Device, Passthru, exec};
#[cfg(target_os = "linux")]
pub use uring::Uring;

/// Why a passthrough command did not reach the device or come back.
#[derive(Debug, thiserror::Error)]
pub enum NvmeError {
    /// Opening a device file, or the ioctl itself, failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The system error.
        source: std::io::Error,
    },
    /// A buffer larger than one command may move.
    #[error("{len} bytes in one command, the limit is {limit}")]
    TooLarge {
        /// Bytes asked.
        len: usize,
        /// Bytes allowed.
        limit: usize,
    },
    /// The path does not name an NVMe controller or namespace.
    #[error("{0}: not an NVMe namespace (/dev/nvmeXnY or /dev/ngXnY)")]
    BadPath(String),
}
