//! [`UringNvme`]: a drive behind the Linux NVMe driver with its I/O
//! commands in flight together through io_uring (`nvme_linux::Uring` on
//! the namespace's char device) and its admin commands through the
//! passthrough ioctl.

use std::collections::HashMap;
use std::path::Path;

use nvme_linux::{Data, Device, Uring};
use proto::{Cqe, Status};

use super::{DeviceTime, IoData, IoRequest, IoResult, Transport, TransportError};

/// Commands in flight at most.
pub const DEPTH: u32 = 64;

/// A drive reached through io_uring (I/O) and ioctls (admin).
#[derive(Debug)]
pub struct UringNvme {
    admin: Device,
    ring: Uring,
    /// Ring tag → (command id, bytes to return for reads).
    tags: HashMap<u64, (u16, Option<usize>)>,
    next_cid: u16,
}

impl UringNvme {
    /// Opens the namespace char device `ng` (`/dev/ngXnY`).
    pub fn open(ng: &Path) -> Result<Self, TransportError> {
        let admin = Device::open(ng)?;
        let ring = Uring::open(ng, admin.nsid(), DEPTH)?;
        Ok(Self {
            admin,
            ring,
            tags: HashMap::new(),
            next_cid: 0,
        })
    }
}

impl Transport for UringNvme {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        let (c, data) = match req.data {
            IoData::None => (self.admin.exec(true, &req.sqe, Data::None)?, Vec::new()),
            IoData::ToDevice(b) => (self.admin.exec(true, &req.sqe, Data::Out(&b))?, Vec::new()),
            IoData::FromDevice(n) => {
                let mut b = vec![0u8; n];
                let c = self.admin.exec(true, &req.sqe, Data::In(&mut b))?;
                (c, b)
            }
        };
        let cqe = Cqe::new(
            req.sqe.cid(),
            0,
            0,
            Status::from_field(c.status),
            c.dw0,
            false,
        );
        Ok(IoResult { cqe, data })
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        if self.ring.in_flight() >= DEPTH as usize {
            return Err(TransportError::QueueFull(self.ring.in_flight()));
        }
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        let (buf, read) = match req.data {
            IoData::None => (Vec::new(), None),
            IoData::ToDevice(b) => (b, None),
            IoData::FromDevice(n) => (vec![0u8; n], Some(n)),
        };
        let tag = self.ring.push(&req.sqe, buf, read.is_some())?;
        self.tags.insert(tag, (cid, read));
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        if self.tags.is_empty() {
            return Err(TransportError::NothingInFlight);
        }
        let (tag, c, buf) = self.ring.complete()?;
        let (cid, read) = self
            .tags
            .remove(&tag)
            .ok_or(TransportError::UnexpectedCompletion { cid: 0, sq_id: 1 })?;
        let cqe = Cqe::new(cid, 1, 0, Status::from_field(c.status), c.dw0, false);
        let data = if read.is_some() { buf } else { Vec::new() };
        Ok((cid, IoResult { cqe, data }))
    }

    fn in_flight(&self) -> usize {
        self.tags.len()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }

    fn max_transfer(&self) -> Option<usize> {
        // The ring's commands and the admin ioctls share the kernel's limit.
        Some(
            nvme_linux::Passthru::max_transfer(&self.admin)
                .min(nvme_linux::device::KERNEL_MAX_TRANSFER),
        )
    }
}
