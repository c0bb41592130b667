//! [`Hardware`], what a board is built from, and [`assemble`], which
//! builds the board from it.

use alloc::vec::Vec;

use firmware::hal::Parts;

use super::{Board, OpenSsd};
use crate::clock::{TickClock, Ticks};
use crate::engine::BoardEngine;
use crate::flash::{FlashArray, FlashError};
use crate::mmio::{DmaMemory, Regs};
use crate::nvme::{HostError, NvmeHost};

/// What a board is built from.
#[derive(Debug)]
pub struct Hardware<R, M, T> {
    /// The NVMe host controller's registers.
    pub nvme: R,
    /// Each channel's NAND controller registers.
    pub nsc: Vec<R>,
    /// The engine's registers.
    pub engine: R,
    /// The NVMe bounce buffer.
    pub host_bounce: M,
    /// The NAND page buffers.
    pub nand_buffers: M,
    /// The free-running counter.
    pub counter: T,
}

/// Why the board could not be assembled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BringUpError {
    /// The host interface refused its bounce buffer.
    Host(HostError),
    /// The flash array refused its buffers.
    Flash(FlashError),
    /// Not one NAND controller per channel.
    Channels {
        /// Controllers given.
        got: usize,
    },
}

/// [`OpenSsd::assemble`].
pub(super) fn assemble<B: OpenSsd, R: Regs, M: DmaMemory, T: Ticks>(
    hw: Hardware<R, M, T>,
) -> Result<Board<B, R, M, T>, BringUpError> {
    if hw.nsc.len() != usize::from(B::GEOMETRY.channels) {
        return Err(BringUpError::Channels { got: hw.nsc.len() });
    }
    let host = NvmeHost::new(hw.nvme, B::HOST, hw.host_bounce).map_err(BringUpError::Host)?;
    let nsc = B::nsc(hw.nsc);
    let nand = FlashArray::new(nsc, hw.nand_buffers, B::GEOMETRY).map_err(BringUpError::Flash)?;
    Ok(Parts {
        host,
        nand,
        engine: BoardEngine::probe(hw.engine),
        clock: TickClock::new(hw.counter),
    })
}
