//! Why the NVMe host interface failed.

use super::dma::AddressOverflow;
use super::regs::Direction;

/// A transport-level failure of [`super::NvmeHost`]; the device core turns
/// it into a Data Transfer Error for the command at hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostError {
    /// A direct DMA did not finish within the spin budget.
    DmaTimeout {
        /// Its direction.
        direction: Direction,
        /// Host address of the chunk.
        host: u64,
    },
    /// The host address is wider than the controller's DMA engine carries.
    AddressTooWide(u64),
    /// The transfer runs past the end of the address space.
    AddressOverflow(AddressOverflow),
    /// The bounce buffer is smaller than one DMA (4 KiB) or not reachable
    /// by the controller's 32-bit device address.
    BadBounceBuffer {
        /// Its bus address.
        bus: u64,
        /// Its size.
        len: usize,
    },
    /// A completion for a command this interface did not hand out (or
    /// completed twice).
    UnknownCommand {
        /// Submission queue.
        queue: u16,
        /// Command id.
        cid: u16,
    },
    /// The controller is not enabled (CC.EN = 0), so no DMA can run.
    NotEnabled,
}

impl From<AddressOverflow> for HostError {
    fn from(e: AddressOverflow) -> Self {
        Self::AddressOverflow(e)
    }
}
