//! [`CommandHost`]: the device core's NVMe host interface inside an
//! emulator. The emulator owns the queues; it hands the core one SQE at a
//! time, so `fetch` yields that SQE once and then `WouldBlock`, DMA goes to
//! the emulator's [`HostDma`], and `complete` captures the CQE for the
//! caller instead of posting it.

use firmware::hal::{HostInterface, Submission};
use proto::{Cqe, Status};

/// Host memory as the emulator exposes it: bus addresses (the PRP values
/// of the SQE) to bytes.
///
/// The core never asks for an empty range, nor one that crosses a 4 KiB
/// host page: a PRP data segment stays within its page and a PRP list read
/// within its list page.
pub trait HostDma {
    /// Reads `buf.len()` bytes at bus address `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError>;
    /// Writes `data` at bus address `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError>;
}

/// A DMA the emulator refused; the command completes with Data Transfer
/// Error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaError {
    /// The emulator's (nonzero) return code.
    pub code: i32,
    /// The bus address of the refused access.
    pub addr: u64,
}

/// The host interface of one emulated controller; see the module docs.
#[derive(Debug)]
pub struct CommandHost<D> {
    dma: D,
    pending: Option<Submission>,
    completion: Option<Cqe>,
    last_dma_error: Option<DmaError>,
}

impl<D: HostDma> CommandHost<D> {
    /// A host with nothing submitted.
    pub fn new(dma: D) -> Self {
        Self {
            dma,
            pending: None,
            completion: None,
            last_dma_error: None,
        }
    }

    /// Hands the core its next command (replacing one not yet fetched) and
    /// forgets the previous completion.
    pub fn put(&mut self, sub: Submission) {
        self.pending = Some(sub);
        self.completion = None;
    }

    /// The completion the core posted since the last [`Self::put`].
    pub fn take_completion(&mut self) -> Option<Cqe> {
        self.completion.take()
    }

    /// The most recent DMA the emulator refused.
    pub fn last_dma_error(&self) -> Option<DmaError> {
        self.last_dma_error
    }

    /// The emulator's DMA.
    pub fn dma(&self) -> &D {
        &self.dma
    }

    /// The emulator's DMA, mutably.
    pub fn dma_mut(&mut self) -> &mut D {
        &mut self.dma
    }

    fn note(&mut self, r: Result<(), DmaError>) -> Result<(), DmaError> {
        if let Err(e) = r {
            self.last_dma_error = Some(e);
        }
        r
    }
}

impl<D: HostDma> HostInterface for CommandHost<D> {
    type HostError = DmaError;

    fn fetch(&mut self) -> nb::Result<Submission, DmaError> {
        self.pending.take().ok_or(nb::Error::WouldBlock)
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        if buf.is_empty() {
            return Ok(());
        }
        let r = self.dma.read(addr, buf);
        self.note(r)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if data.is_empty() {
            return Ok(());
        }
        let r = self.dma.write(addr, data);
        self.note(r)
    }

    fn complete(&mut self, sub: &Submission, status: Status, dw0: u32) -> nb::Result<(), DmaError> {
        // SQ head and phase tag are the emulator's: it owns the queues.
        self.completion = Some(Cqe::new(sub.sqe.cid(), sub.queue, 0, status, dw0, false));
        Ok(())
    }
}
