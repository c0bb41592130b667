//! The host side of the drive: NVMe submission/completion queues and DMA.
//!
//! The board's queue engine owns the queues (doorbells, phase tags, queue
//! creation); the core sees one command at a time and moves its data with
//! plain DMA reads/writes of host bus addresses, walking PRPs itself with
//! [`proto::prp`].

use proto::{Sqe, Status};

/// One fetched command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submission {
    /// Submission queue id (0 = admin).
    pub queue: u16,
    /// The 64-byte command as fetched.
    pub sqe: Sqe,
}

/// NVMe host interface of a board.
pub trait HostInterface {
    /// Transport-level failure (a bad bus address, a dead link).
    type HostError: core::fmt::Debug;
    /// The next command, or `WouldBlock` when every queue is empty.
    fn fetch(&mut self) -> nb::Result<Submission, Self::HostError>;
    /// Read host memory at bus address `addr`.
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Self::HostError>;
    /// Write host memory at bus address `addr`.
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::HostError>;
    /// Post the completion of `sub`; `WouldBlock` while its CQ is full.
    fn complete(
        &mut self,
        sub: &Submission,
        status: Status,
        dw0: u32,
    ) -> nb::Result<(), Self::HostError>;
    /// Whether the core may fetch the next command before it has completed
    /// the ones it holds (to admit decodes together). A host interface
    /// whose fetch waits until the host has a command says no.
    fn fetch_ahead(&self) -> bool {
        true
    }
}
