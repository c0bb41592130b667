//! [`Uring`]: NVMe I/O passthrough through io_uring (`IORING_OP_URING_CMD`
//! on the namespace's char device `/dev/ngXnY`, 128-byte SQEs carrying
//! `struct nvme_uring_cmd`, 32-byte CQEs carrying the result dword), with
//! many commands in flight. Buffers belong to the ring until their command
//! completes.
#![allow(unsafe_code)] // io_uring entries that point at user buffers

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::Path;

use io_uring::{IoUring, cqueue, opcode, squeue, types};
use proto::Sqe;

use crate::NvmeError;
use crate::cmd::{NVME_URING_CMD_IO, PassthruCmd};
use crate::device::{Completion, KERNEL_MAX_TRANSFER};

/// A command in flight: its buffer and direction.
struct InFlight {
    buf: Vec<u8>,
    read: bool,
}

/// An io_uring on one NVMe namespace char device.
pub struct Uring {
    ring: IoUring<squeue::Entry128, cqueue::Entry32>,
    ns: File,
    nsid: u32,
    next: u64,
    inflight: HashMap<u64, InFlight>,
    timeout_ms: u32,
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring")
            .field("nsid", &self.nsid)
            .field("in_flight", &self.inflight.len())
            .finish_non_exhaustive()
    }
}

fn io_err(what: &str, source: std::io::Error) -> NvmeError {
    NvmeError::Io {
        what: what.into(),
        source,
    }
}

impl Uring {
    /// A ring of `entries` on the char device `ng` (`/dev/ngXnY`) of
    /// namespace `nsid`.
    pub fn open(ng: &Path, nsid: u32, entries: u32) -> Result<Self, NvmeError> {
        let ns = OpenOptions::new()
            .read(true)
            .write(true)
            .open(ng)
            .map_err(|e| io_err(&format!("open {}", ng.display()), e))?;
        let ring = IoUring::builder()
            .build(entries)
            .map_err(|e| io_err("io_uring setup (SQE128, CQE32)", e))?;
        Ok(Self {
            ring,
            ns,
            nsid,
            next: 0,
            inflight: HashMap::new(),
            timeout_ms: crate::COMMAND_TIMEOUT_MS,
        })
    }

    /// Sets the timeout of every later command, ms (at least 1; see
    /// [`crate::COMMAND_TIMEOUT_MS`]): the kernel completes a command that
    /// outlives it with an error, so [`Self::complete`] never waits longer.
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms.max(1);
    }

    /// Commands submitted and not completed.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Queues I/O command `sqe` with `buf` (written to the device, or read
    /// into when `read`); returns its tag. Submits when the ring is full.
    pub fn push(&mut self, sqe: &Sqe, buf: Vec<u8>, read: bool) -> Result<u64, NvmeError> {
        if buf.len() > KERNEL_MAX_TRANSFER {
            return Err(NvmeError::TooLarge {
                len: buf.len(),
                limit: KERNEL_MAX_TRANSFER,
            });
        }
        let mut cmd = PassthruCmd::from_sqe(sqe);
        if cmd.nsid == 0 {
            cmd.nsid = self.nsid;
        }
        cmd.timeout_ms = self.timeout_ms;
        let tag = self.next;
        self.next += 1;
        let mut f = InFlight { buf, read };
        cmd.addr = f.buf.as_mut_ptr() as u64;
        cmd.data_len = f.buf.len() as u32;
        let entry = opcode::UringCmd80::new(types::Fd(self.ns.as_raw_fd()), NVME_URING_CMD_IO)
            .cmd(cmd.uring_bytes())
            .build()
            .user_data(tag);
        // The buffer moves into the map; its heap allocation (what `addr`
        // points to) does not move.
        self.inflight.insert(tag, f);
        loop {
            // SAFETY: the SQE points at the buffer now owned by `inflight`,
            // which keeps it alive and unmoved until the CQE of `tag` is
            // reaped in `complete`; the file stays open as long as `self`.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_ok() {
                return Ok(tag);
            }
            self.ring
                .submit()
                .map_err(|e| io_err("io_uring submit", e))?;
        }
    }

    /// Submits what is queued and waits for one completion: its tag, the
    /// NVMe completion, and the buffer (with the data, for reads).
    pub fn complete(&mut self) -> Result<(u64, Completion, Vec<u8>), NvmeError> {
        loop {
            if let Some(cqe) = self.ring.completion().next() {
                let tag = cqe.user_data();
                let f = self.inflight.remove(&tag).ok_or_else(|| {
                    io_err(
                        "io_uring",
                        std::io::Error::other(format!("unknown tag {tag}")),
                    )
                })?;
                let res = cqe.result();
                if res < 0 {
                    return Err(io_err(
                        "io_uring passthrough",
                        std::io::Error::from_raw_os_error(-res),
                    ));
                }
                let _ = f.read;
                return Ok((
                    tag,
                    Completion {
                        status: res as u16,
                        dw0: cqe.big_cqe()[0] as u32,
                    },
                    f.buf,
                ));
            }
            if self.inflight.is_empty() {
                return Err(io_err(
                    "io_uring",
                    std::io::Error::other("nothing in flight"),
                ));
            }
            self.ring
                .submit_and_wait(1)
                .map_err(|e| io_err("io_uring submit_and_wait", e))?;
        }
    }
}
