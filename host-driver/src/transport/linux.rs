//! [`LinuxNvme`]: a device behind the Linux kernel's NVMe driver, through
//! its passthrough ioctls (`nvme_linux`). Each command runs when it is
//! submitted (the ioctl blocks until it completes); its completion waits
//! in a queue until reaped.
//!
//! The system-call layer is the [`Passthru`] trait: [`nvme_linux::Device`]
//! on a real or emulated drive, or [`SimPassthru`] — the simulated board
//! behind the same command structure — so the code that builds commands
//! and reads completions is tested against the InstCSD firmware here, and
//! against QEMU's NVMe controller in the guest test.

use std::collections::VecDeque;

use nvme_linux::{Completion, Data, NvmeError, Passthru, PassthruCmd};
use proto::{Cqe, Status};

use super::{DeviceTime, IoData, IoRequest, IoResult, SimTransport, Transport, TransportError};
use crate::dma::HostBuf;

/// I/O commands kept completed and unreaped at most.
pub const MAX_UNREAPED: usize = 64;

impl From<NvmeError> for TransportError {
    fn from(e: NvmeError) -> Self {
        match e {
            NvmeError::TooLarge { len, limit } => TransportError::BadTransfer {
                len,
                reason: format!("above the {limit}-byte limit of one passthrough command"),
            },
            other => TransportError::DeviceFailed(other.to_string()),
        }
    }
}

/// A device behind the kernel's NVMe driver (or a stand-in, see the
/// module docs).
#[derive(Debug)]
pub struct LinuxNvme<P> {
    dev: P,
    next_cid: u16,
    ready: VecDeque<(u16, IoResult)>,
}

impl<P: Passthru> LinuxNvme<P> {
    /// Wraps an open device.
    pub fn new(dev: P) -> Self {
        Self {
            dev,
            next_cid: 0,
            ready: VecDeque::new(),
        }
    }

    /// The device.
    pub fn device(&self) -> &P {
        &self.dev
    }

    /// The device, mutable.
    pub fn device_mut(&mut self) -> &mut P {
        &mut self.dev
    }

    fn run(&mut self, admin: bool, req: IoRequest) -> Result<IoResult, TransportError> {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        let (c, data) = match req.data {
            IoData::None => (
                nvme_linux::exec(&mut self.dev, admin, &req.sqe, Data::None)?,
                Vec::new(),
            ),
            // Page-aligned buffers: the kernel pins (and counts against its
            // per-command page limit) the fewest pages.
            IoData::ToDevice(bytes) => {
                let buf = HostBuf::from_slice(&bytes);
                let c =
                    nvme_linux::exec(&mut self.dev, admin, &req.sqe, Data::Out(buf.as_slice()))?;
                (c, Vec::new())
            }
            IoData::FromDevice(n) => {
                let mut buf = HostBuf::zeroed(n);
                let c =
                    nvme_linux::exec(&mut self.dev, admin, &req.sqe, Data::In(buf.as_mut_slice()))?;
                (c, buf.to_vec())
            }
        };
        let sq = if admin { 0 } else { 1 };
        let cqe = Cqe::new(cid, sq, 0, Status::from_field(c.status), c.dw0, false);
        Ok(IoResult { cqe, data })
    }
}

impl<P: Passthru + Send> Transport for LinuxNvme<P> {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        self.run(true, req)
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        if self.ready.len() >= MAX_UNREAPED {
            return Err(TransportError::QueueFull(self.ready.len()));
        }
        let res = self.run(false, req)?;
        let cid = res.cqe.cid;
        self.ready.push_back((cid, res));
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.ready
            .pop_front()
            .ok_or(TransportError::NothingInFlight)
    }

    fn in_flight(&self) -> usize {
        self.ready.len()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }

    fn max_transfer(&self) -> Option<usize> {
        Some(self.dev.max_transfer())
    }

    fn holds_caller(&self) -> bool {
        true
    }
}

/// The simulated board behind the passthrough command structure: what the
/// kernel would turn into an SQE with PRPs, the simulated board's own
/// queues do here.
#[derive(Debug)]
pub struct SimPassthru {
    sim: SimTransport,
}

impl SimPassthru {
    /// A simulated board with `page_size`-byte flash pages.
    pub fn new(page_size: u32) -> Result<Self, TransportError> {
        Ok(Self {
            sim: SimTransport::new(page_size)?,
        })
    }
}

impl Passthru for SimPassthru {
    fn passthru(
        &mut self,
        admin: bool,
        cmd: &mut PassthruCmd,
        data: Data<'_>,
    ) -> Result<Completion, NvmeError> {
        let sqe = cmd.to_sqe();
        let (io, back) = match data {
            Data::None => (IoData::None, None),
            Data::Out(b) => (IoData::ToDevice(b.to_vec()), None),
            Data::In(b) => (IoData::FromDevice(b.len()), Some(b)),
        };
        let req = IoRequest { sqe, data: io };
        let fail = |e: TransportError| NvmeError::Io {
            what: "simulated passthrough".into(),
            source: std::io::Error::other(e.to_string()),
        };
        let res = if admin {
            self.sim.admin(req).map_err(fail)?
        } else {
            self.sim.submit(req).map_err(fail)?;
            self.sim.reap().map_err(fail)?.1
        };
        if let Some(b) = back {
            b.copy_from_slice(&res.data);
        }
        cmd.result = res.cqe.dw0;
        Ok(Completion {
            status: res.cqe.status >> 1,
            dw0: res.cqe.dw0,
        })
    }

    fn max_transfer(&self) -> usize {
        nvme_linux::device::KERNEL_MAX_TRANSFER
    }

    fn nsid(&self) -> u32 {
        1
    }
}
