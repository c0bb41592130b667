//! [`LinkHost`]: the device core's NVMe host interface over a byte stream
//! (the board link of [`proto::link`]). The QEMU boards carry the stream
//! over semihosting files on named pipes; a test can carry it in memory.
//!
//! Every call is one request and its reply: `fetch` asks for the next
//! submission (the host answers when it has one, or tells the device to
//! stop), `dma_read` / `dma_write` move data at the command's bus addresses,
//! `complete` posts the CQE (the host owns the queue's phase and head).

use core::fmt::Debug;

use firmware::hal::{HostInterface, Submission};
use proto::link::{Kind, MAX_PAYLOAD, Reply, ReplyStatus, Request};
use proto::{Cqe, ProtoError, Sqe, Status};

/// A reliable, ordered byte stream to the host.
pub trait ByteLink {
    /// Why the stream failed.
    type Error: Debug;
    /// Reads exactly `buf.len()` bytes.
    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), Self::Error>;
    /// Writes all of `data`.
    fn write_all(&mut self, data: &[u8]) -> Result<(), Self::Error>;
}

/// A host interface failure.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkError<E> {
    /// The stream failed.
    Link(E),
    /// The host's reply is malformed.
    Proto(ProtoError),
    /// The host refused the bus address.
    BadAddress(u64),
    /// The host sent a reply that does not answer the request.
    Unexpected,
}

/// The host interface over a [`ByteLink`].
#[derive(Debug)]
pub struct LinkHost<L> {
    link: L,
    shutdown: bool,
}

impl<L: ByteLink> LinkHost<L> {
    /// Says Hello as board `board` and waits for the host's answer.
    pub fn connect(mut link: L, board: u16) -> Result<Self, LinkError<L::Error>> {
        link.write_all(&Request::hello(board).to_bytes())
            .map_err(LinkError::Link)?;
        let mut h = Self {
            link,
            shutdown: false,
        };
        let r = h.reply()?;
        if r.status != ReplyStatus::Ok || r.len != 0 {
            return Err(LinkError::Unexpected);
        }
        Ok(h)
    }

    /// The host told the device to stop (a Fetch answered Shutdown).
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown
    }

    /// The stream.
    pub fn link_mut(&mut self) -> &mut L {
        &mut self.link
    }

    fn send(&mut self, req: Request, payload: &[u8]) -> Result<(), LinkError<L::Error>> {
        self.link
            .write_all(&req.to_bytes())
            .map_err(LinkError::Link)?;
        if !payload.is_empty() {
            self.link.write_all(payload).map_err(LinkError::Link)?;
        }
        Ok(())
    }

    fn reply(&mut self) -> Result<Reply, LinkError<L::Error>> {
        let mut b = [0u8; Reply::SIZE];
        self.link.read_exact(&mut b).map_err(LinkError::Link)?;
        Reply::from_bytes(&b).map_err(LinkError::Proto)
    }

    /// A status-only reply to a request about `addr`.
    fn ack(&mut self, addr: u64) -> Result<(), LinkError<L::Error>> {
        let r = self.reply()?;
        match (r.status, r.len) {
            (ReplyStatus::Ok, 0) => Ok(()),
            (ReplyStatus::BadAddress, 0) => Err(LinkError::BadAddress(addr)),
            _ => Err(LinkError::Unexpected),
        }
    }

    fn chunks(len: usize) -> impl Iterator<Item = (usize, usize)> {
        let step = MAX_PAYLOAD as usize;
        (0..len)
            .step_by(step)
            .map(move |o| (o, (len - o).min(step)))
    }
}

impl<L: ByteLink> HostInterface for LinkHost<L> {
    type HostError = LinkError<L::Error>;

    fn fetch(&mut self) -> nb::Result<Submission, Self::HostError> {
        if self.shutdown {
            return Err(nb::Error::WouldBlock);
        }
        let req = Request {
            kind: Kind::Fetch,
            qid: 0,
            len: 0,
            addr: 0,
        };
        self.send(req, &[])?;
        let r = self.reply()?;
        match (r.status, r.len) {
            (ReplyStatus::Shutdown, 0) => {
                self.shutdown = true;
                Err(nb::Error::WouldBlock)
            }
            (ReplyStatus::Ok, 64) => {
                let mut b = [0u8; 64];
                self.link.read_exact(&mut b).map_err(LinkError::Link)?;
                let sqe = Sqe::from_bytes(&b).map_err(LinkError::Proto)?;
                Ok(Submission { queue: r.qid, sqe })
            }
            _ => Err(nb::Error::Other(LinkError::Unexpected)),
        }
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Self::HostError> {
        for (o, n) in Self::chunks(buf.len()) {
            let a = addr.wrapping_add(o as u64);
            let req = Request {
                kind: Kind::DmaRead,
                qid: 0,
                len: n as u32,
                addr: a,
            };
            self.send(req, &[])?;
            let r = self.reply()?;
            match r.status {
                ReplyStatus::Ok if r.len as usize == n => {}
                ReplyStatus::BadAddress => return Err(LinkError::BadAddress(a)),
                _ => return Err(LinkError::Unexpected),
            }
            self.link
                .read_exact(&mut buf[o..o + n])
                .map_err(LinkError::Link)?;
        }
        Ok(())
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::HostError> {
        for (o, n) in Self::chunks(data.len()) {
            let a = addr.wrapping_add(o as u64);
            let req = Request {
                kind: Kind::DmaWrite,
                qid: 0,
                len: n as u32,
                addr: a,
            };
            self.send(req, &data[o..o + n])?;
            self.ack(a)?;
        }
        Ok(())
    }

    fn complete(
        &mut self,
        sub: &Submission,
        status: Status,
        dw0: u32,
    ) -> nb::Result<(), Self::HostError> {
        // Head and phase are the host's: it owns the queues.
        let cqe = Cqe::new(sub.sqe.cid(), sub.queue, 0, status, dw0, false);
        let req = Request {
            kind: Kind::Complete,
            qid: sub.queue,
            len: Cqe::SIZE as u32,
            addr: 0,
        };
        self.send(req, &cqe.to_bytes())?;
        self.ack(0)?;
        Ok(())
    }

    /// No: the host answers a fetch only when it has a command, and a
    /// host that waits for a completion has none to give.
    fn fetch_ahead(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::collections::VecDeque;
    use std::vec::Vec;

    use super::*;
    use proto::Opcode;

    /// A scripted host: what the device wrote, and the replies queued.
    #[derive(Default)]
    struct Script {
        sent: Vec<u8>,
        replies: VecDeque<u8>,
    }

    impl ByteLink for Script {
        type Error = &'static str;
        fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), &'static str> {
            for b in buf {
                *b = self.replies.pop_front().ok_or("host said nothing")?;
            }
            Ok(())
        }
        fn write_all(&mut self, data: &[u8]) -> Result<(), &'static str> {
            self.sent.extend_from_slice(data);
            Ok(())
        }
    }

    fn reply(s: &mut Script, status: ReplyStatus, qid: u16, payload: &[u8]) {
        let r = Reply {
            status,
            qid,
            len: payload.len() as u32,
        };
        s.replies.extend(r.to_bytes());
        s.replies.extend(payload.iter().copied());
    }

    #[test]
    fn a_command_round_trip() {
        let mut s = Script::default();
        reply(&mut s, ReplyStatus::Ok, 0, &[]);
        let mut sqe = Sqe::new(Opcode(0x86));
        sqe.set_cid(7);
        reply(&mut s, ReplyStatus::Ok, 1, &sqe.to_bytes());
        reply(&mut s, ReplyStatus::Ok, 0, &[1, 2, 3]);
        reply(&mut s, ReplyStatus::Ok, 0, &[]);
        reply(&mut s, ReplyStatus::Ok, 0, &[]);
        reply(&mut s, ReplyStatus::Shutdown, 0, &[]);
        let mut h = LinkHost::connect(s, 3).unwrap();
        let sub = h.fetch().unwrap();
        assert_eq!((sub.queue, sub.sqe.cid()), (1, 7));
        let mut buf = [0u8; 3];
        h.dma_read(0x1000, &mut buf).unwrap();
        assert_eq!(buf, [1, 2, 3]);
        h.dma_write(0x2000, &[9; 5]).unwrap();
        h.complete(&sub, Status::SUCCESS, 42).unwrap();
        assert!(matches!(h.fetch(), Err(nb::Error::WouldBlock)));
        assert!(h.shutdown_requested());
        // What went out: Hello, Fetch, DmaRead, DmaWrite + data, Complete + CQE, Fetch.
        let sent = &h.link_mut().sent;
        let hdr = |o: usize| Request::from_bytes(sent[o..o + 16].try_into().unwrap()).unwrap();
        assert_eq!(hdr(0), Request::hello(3));
        assert_eq!(hdr(16).kind, Kind::Fetch);
        assert_eq!(
            (hdr(32).kind, hdr(32).addr, hdr(32).len),
            (Kind::DmaRead, 0x1000, 3)
        );
        assert_eq!((hdr(48).kind, hdr(48).len), (Kind::DmaWrite, 5));
        assert_eq!(&sent[64..69], &[9; 5]);
        assert_eq!((hdr(69).kind, hdr(69).qid), (Kind::Complete, 1));
        let cqe = Cqe::from_bytes(&sent[85..101]).unwrap();
        assert_eq!((cqe.cid, cqe.dw0, cqe.status()), (7, 42, Status::SUCCESS));
        assert_eq!(hdr(101).kind, Kind::Fetch);
    }

    #[test]
    fn host_refusals_and_garbage_are_errors() {
        let mut s = Script::default();
        reply(&mut s, ReplyStatus::Ok, 0, &[]);
        reply(&mut s, ReplyStatus::BadAddress, 0, &[]);
        reply(&mut s, ReplyStatus::Ok, 0, &[1, 2]);
        s.replies.extend([7u8, 0, 0, 0, 0, 0, 0, 0]);
        let mut h = LinkHost::connect(s, 0).unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(h.dma_read(0x10, &mut buf), Err(LinkError::BadAddress(0x10)));
        assert_eq!(
            h.dma_read(0x10, &mut buf),
            Err(LinkError::Unexpected),
            "short"
        );
        let mut h2 = h;
        h2.link_mut().replies.drain(..2);
        assert!(matches!(
            h2.fetch(),
            Err(nb::Error::Other(LinkError::Proto(_)))
        ));
        assert!(matches!(
            h2.fetch(),
            Err(nb::Error::Other(LinkError::Link(_)))
        ));
    }
}
