//! How commands reach a device: the [`Transport`] trait (one admin queue,
//! one I/O queue with many commands in flight) and its implementations.
//!
//! A transport moves 64-byte SQEs, their data buffers and the 16-byte CQEs;
//! it knows nothing of sequences or attention (that is [`crate::csd`]).
//! It fills in the command identifier and the data pointers (PRPs) itself:
//! callers hand it an [`IoRequest`] whose SQE carries opcode and command
//! dwords only.
//!
//! | module | owns |
//! | --- | --- |
//! | [`ring`] | submission / completion ring bookkeeping (tails, heads, phase) |
//! | [`sim`] | [`SimTransport`]: the in-process simulated board |
//! | [`link`] | [`LinkTransport`]: the host end of the board link (firmware under QEMU) |
//! | [`linux`] | [`LinuxNvme`]: a device behind the Linux NVMe driver (passthrough ioctls), with the system-call layer swappable |
//! | [`sim_pci`] | [`SimPci`]: the simulated board's controller as a PCI function for the user-space (VFIO) driver |
//! | [`uring`] | [`UringNvme`]: the same drive with its I/O commands in flight together through io_uring |
//! | [`qemu`] | [`QemuTransport`]: boots the firmware under QEMU and talks to it over the link |
//! | `staging` | a command's data pages and PRPs in modelled host memory |
//! | [`inflight`] | commands in flight: identifier allocation, ready completions, reaping |
//! | [`timed`] | reads bounded by a timeout |

pub mod inflight;
pub mod link;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod qemu;
pub mod ring;
pub mod sim;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod sim_pci;
mod staging;
pub mod timed;
#[cfg(target_os = "linux")]
pub mod uring;

pub use link::LinkTransport;
#[cfg(target_os = "linux")]
pub use linux::{LinuxNvme, SimPassthru};
pub use qemu::{QemuBoard, QemuExit, QemuTransport};
pub use sim::SimTransport;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub use sim_pci::SimPci;
#[cfg(target_os = "linux")]
pub use uring::UringNvme;

use thiserror::Error;

/// The data phase of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoData {
    /// No data.
    None,
    /// Host to device: these bytes.
    ToDevice(Vec<u8>),
    /// Device to host: this many bytes.
    FromDevice(usize),
}

impl IoData {
    /// Bytes moved by the data phase.
    pub fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::ToDevice(v) => v.len(),
            Self::FromDevice(n) => *n,
        }
    }

    /// `true` when the command moves no data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One command: its SQE (cid and PRPs are filled in by the transport) and
/// its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoRequest {
    /// The submission queue entry.
    pub sqe: proto::Sqe,
    /// The data phase.
    pub data: IoData,
}

/// One completion: the CQE and, for device-to-host commands, the data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoResult {
    /// The completion queue entry as the device wrote it.
    pub cqe: proto::Cqe,
    /// The bytes read back (empty unless the request was `FromDevice`).
    pub data: Vec<u8>,
}

/// Virtual time of a simulated device (nanoseconds). Virtual, never wall
/// clock: the simulator models NAND, bus, engine and PCIe timing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceTime {
    /// The device clock now.
    pub now_ns: u64,
    /// Virtual time since the device started.
    pub total_ns: u64,
    /// Sum over dies of array busy time (tR, tPROG, tBERS).
    pub flash_busy_ns: u64,
    /// Sum over channels of bus transfer time.
    pub bus_busy_ns: u64,
    /// Time the attention engine was busy.
    pub engine_busy_ns: u64,
    /// Time the host DMA (PCIe) was busy.
    pub dma_busy_ns: u64,
}

/// A failure to move a command (not an error status from the device: those
/// come back in the CQE).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The I/O queue is full; reap completions first.
    #[error("I/O submission queue full ({0} commands in flight)")]
    QueueFull(usize),
    /// `reap` was called with nothing in flight.
    #[error("no command in flight")]
    NothingInFlight,
    /// The device went idle without posting a completion that is due.
    #[error("device idle with {0} commands outstanding and no completion posted")]
    NoCompletion(usize),
    /// A completion that does not match any outstanding command.
    #[error("unexpected completion: cid {cid} on sq {sq_id}")]
    UnexpectedCompletion {
        /// The command identifier in the CQE.
        cid: u16,
        /// The submission queue id in the CQE.
        sq_id: u16,
    },
    /// A data buffer the device cannot address (size limits).
    #[error("transfer of {len} bytes not possible: {reason}")]
    BadTransfer {
        /// Requested length.
        len: usize,
        /// Why.
        reason: String,
    },
    /// Creating the I/O queues failed.
    #[error("setting up the queues failed: {0}")]
    Setup(String),
    /// The device stopped (controller fatal status).
    #[error("device failed: {0}")]
    DeviceFailed(String),
    /// The simulated board reported an error.
    #[error("simulated board: {0}")]
    Sim(#[from] board_sim::SimError),
    /// A malformed structure on the wire.
    #[error("protocol: {0}")]
    Proto(#[from] proto::ProtoError),
    /// The byte stream to the device failed (board link, device files).
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// A way to reach one device.
pub trait Transport: Send {
    /// Runs one admin command to completion.
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError>;
    /// Queues one I/O command and returns its command identifier; the
    /// device may not run it before [`Transport::reap`] is called.
    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError>;
    /// Returns the next completion, driving the device if needed.
    fn reap(&mut self) -> Result<(u16, IoResult), TransportError>;
    /// I/O commands submitted and not yet reaped.
    fn in_flight(&self) -> usize;
    /// Virtual time of a simulated device; `None` for real hardware.
    fn device_time(&self) -> Option<DeviceTime>;
    /// The most bytes one command may move through this transport, where
    /// the transport itself sets a limit (the kernel's passthrough takes at
    /// most 504 KiB); `None` where only the device's limit applies.
    fn max_transfer(&self) -> Option<usize> {
        None
    }
    /// Whether a command's work happens in, or holds, the calling thread:
    /// the simulated board computes when completions are reaped, a
    /// passthrough ioctl blocks until its command completes, the board link
    /// serves the device's DMA from the caller. An array runs such devices
    /// in threads of their own; asynchronous transports (io_uring,
    /// NVMe/TCP) need none.
    fn holds_caller(&self) -> bool {
        false
    }
}
