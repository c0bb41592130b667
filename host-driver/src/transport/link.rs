//! [`LinkTransport`]: the host end of the board link ([`proto::link`]), for
//! a device core that is not behind PCIe (the firmware under QEMU).
//!
//! The host keeps the host memory the device reads and writes
//! ([`board_sim::HostMemory`], scattered 4 KiB pages with real PRPs) and the
//! queues: a submission waits here until the device asks for the next one,
//! and the device's requests (DMA reads and writes, completions) are served
//! one by one, in order, while the host waits for a completion. A device
//! request that asks for the next command while the host waits for a
//! completion that no queued command can give means the device has lost a
//! command: [`TransportError::NoCompletion`].

use std::collections::VecDeque;
use std::io::{Read, Write};

use board_sim::HostMemory;
use proto::link::{Kind, Reply, ReplyStatus, Request};
use proto::{Cqe, Sqe};

use super::inflight::Inflight;
use super::staging::{self, Buffers};
use super::{DeviceTime, IoRequest, IoResult, Transport, TransportError};

/// Queue id of the I/O commands on the link.
const IO_QID: u16 = 1;
/// I/O commands in flight at most (the queue depth the link emulates).
pub const IO_DEPTH: usize = 64;

/// The host end of a board link over a reader and a writer.
#[derive(Debug)]
pub struct LinkTransport<R, W> {
    rx: R,
    tx: W,
    mem: HostMemory,
    board: u16,
    /// Commands not yet fetched by the device.
    queue: VecDeque<(u16, Sqe)>,
    /// The device asked for a command and has not been answered.
    fetch_waiting: bool,
    next_admin_cid: u16,
    /// I/O commands on the device (their staged buffers) or completed.
    cmds: Inflight<Buffers>,
}

impl<R: Read, W: Write> LinkTransport<R, W> {
    /// Waits for the device's Hello on `rx` and answers it.
    pub fn connect(mut rx: R, mut tx: W) -> Result<Self, TransportError> {
        let req = read_request(&mut rx)?;
        if req.kind != Kind::Hello {
            return Err(TransportError::DeviceFailed(format!(
                "the board link started with {:?}, not Hello",
                req.kind
            )));
        }
        tx.write_all(&Reply::status(ReplyStatus::Ok).to_bytes())?;
        tx.flush()?;
        Ok(Self {
            rx,
            tx,
            mem: HostMemory::new(),
            board: req.board(),
            queue: VecDeque::new(),
            fetch_waiting: false,
            next_admin_cid: 0,
            cmds: Inflight::default(),
        })
    }

    /// The board id the device announced.
    pub fn board(&self) -> u16 {
        self.board
    }

    /// Tells the device to stop: the next command it asks for is a
    /// Shutdown. Every queued command is served first.
    pub fn shutdown(&mut self) -> Result<(), TransportError> {
        while !self.queue.is_empty() || !self.fetch_waiting {
            if self.serve()?.is_some() {
                continue;
            }
        }
        self.tx
            .write_all(&Reply::status(ReplyStatus::Shutdown).to_bytes())?;
        self.tx.flush()?;
        self.fetch_waiting = false;
        Ok(())
    }

    /// Serves one device request (answering a waiting fetch first if a
    /// command is queued); returns a completion if that was one.
    fn serve(&mut self) -> Result<Option<(u16, Cqe)>, TransportError> {
        if self.fetch_waiting {
            let Some((qid, sqe)) = self.queue.pop_front() else {
                return Err(TransportError::NoCompletion(
                    self.cmds.pending.len() + usize::from(!self.queue.is_empty()),
                ));
            };
            let r = Reply {
                status: ReplyStatus::Ok,
                qid,
                len: 64,
            };
            self.tx.write_all(&r.to_bytes())?;
            self.tx.write_all(&sqe.to_bytes())?;
            self.tx.flush()?;
            self.fetch_waiting = false;
        }
        let req = read_request(&mut self.rx)?;
        match req.kind {
            Kind::Fetch => {
                self.fetch_waiting = true;
                Ok(None)
            }
            Kind::DmaRead => {
                let mut buf = vec![0u8; req.len as usize];
                match self.mem.read(req.addr, &mut buf) {
                    Ok(()) => {
                        let r = Reply {
                            status: ReplyStatus::Ok,
                            qid: 0,
                            len: req.len,
                        };
                        self.tx.write_all(&r.to_bytes())?;
                        self.tx.write_all(&buf)?;
                    }
                    Err(_) => self
                        .tx
                        .write_all(&Reply::status(ReplyStatus::BadAddress).to_bytes())?,
                }
                self.tx.flush()?;
                Ok(None)
            }
            Kind::DmaWrite => {
                let mut buf = vec![0u8; req.len as usize];
                self.rx.read_exact(&mut buf)?;
                let status = match self.mem.write(req.addr, &buf) {
                    Ok(()) => ReplyStatus::Ok,
                    Err(_) => ReplyStatus::BadAddress,
                };
                self.tx.write_all(&Reply::status(status).to_bytes())?;
                self.tx.flush()?;
                Ok(None)
            }
            Kind::Complete => {
                let mut raw = [0u8; Cqe::SIZE];
                self.rx.read_exact(&mut raw)?;
                let cqe = Cqe::from_bytes(&raw)?;
                self.tx
                    .write_all(&Reply::status(ReplyStatus::Ok).to_bytes())?;
                self.tx.flush()?;
                Ok(Some((req.qid, cqe)))
            }
            Kind::Hello => Err(TransportError::DeviceFailed(
                "the device restarted (a second Hello on the link)".into(),
            )),
        }
    }

    /// Serves requests until a completion arrives.
    fn next_completion(&mut self) -> Result<(u16, Cqe), TransportError> {
        loop {
            if let Some(c) = self.serve()? {
                return Ok(c);
            }
        }
    }

    /// Moves one I/O completion to `ready`.
    fn harvest_one(&mut self) -> Result<(), TransportError> {
        let (qid, cqe) = self.next_completion()?;
        let bufs = match (qid == IO_QID && cqe.sq_id == IO_QID)
            .then(|| self.cmds.pending.remove(&cqe.cid))
            .flatten()
        {
            Some(b) => b,
            None => {
                return Err(TransportError::UnexpectedCompletion {
                    cid: cqe.cid,
                    sq_id: cqe.sq_id,
                });
            }
        };
        let data = staging::unstage(&mut self.mem, bufs)?;
        self.cmds.complete(cqe.cid, IoResult { cqe, data });
        Ok(())
    }
}

fn read_request(rx: &mut impl Read) -> Result<Request, TransportError> {
    let mut b = [0u8; Request::SIZE];
    rx.read_exact(&mut b)?;
    Ok(Request::from_bytes(&b)?)
}

impl<R: Read + Send, W: Write + Send> Transport for LinkTransport<R, W> {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        if !self.cmds.is_empty() {
            // One command at a time on the link's device: reap first.
            return Err(TransportError::QueueFull(self.in_flight()));
        }
        let mut sqe = req.sqe;
        let cid = self.next_admin_cid;
        self.next_admin_cid = self.next_admin_cid.wrapping_add(1);
        sqe.set_cid(cid);
        let bufs = staging::stage(&mut self.mem, &mut sqe, &req.data)?;
        self.queue.push_back((0, sqe));
        let (qid, cqe) = match self.next_completion() {
            Ok(c) => c,
            Err(e) => {
                staging::release(&mut self.mem, &bufs);
                return Err(e);
            }
        };
        if qid != 0 || cqe.cid != cid || cqe.sq_id != 0 {
            staging::release(&mut self.mem, &bufs);
            return Err(TransportError::UnexpectedCompletion {
                cid: cqe.cid,
                sq_id: cqe.sq_id,
            });
        }
        let data = staging::unstage(&mut self.mem, bufs)?;
        Ok(IoResult { cqe, data })
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        if self.cmds.pending.len() >= IO_DEPTH {
            return Err(TransportError::QueueFull(self.cmds.pending.len()));
        }
        let cid = self.cmds.free_cid();
        let mut sqe = req.sqe;
        sqe.set_cid(cid);
        let bufs = staging::stage(&mut self.mem, &mut sqe, &req.data)?;
        self.cmds.pending.insert(cid, bufs);
        self.queue.push_back((IO_QID, sqe));
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        if self.cmds.must_harvest()? {
            self.harvest_one()?;
        }
        self.cmds.pop()
    }

    fn in_flight(&self) -> usize {
        self.cmds.len()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }

    fn holds_caller(&self) -> bool {
        true
    }
}
