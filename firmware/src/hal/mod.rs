//! Hardware abstraction: the four things a board gives the device core.
//!
//! A board (the simulated one, the QEMU ones, a real OpenSSD) implements
//! [`HostInterface`] (the NVMe queue engine and PCIe DMA), [`Nand`] (the
//! flash controllers with their per-channel filters), [`Engine`] (the
//! attention engine: GeMV lanes, softmax, argtopk) and [`Clock`]. The core in
//! [`crate::device`] is generic over them and never touches registers.
//!
//! NAND and host completions are split-phase (`nb`): the core starts an
//! operation and later polls for its completion, so a board can keep all
//! channels busy while the core plans the next pages.

mod clock;
mod engine;
mod host;
mod nand;
mod parts;

pub use clock::{Clock, TimeBreakdown};
pub use engine::{Engine, EngineWork, FitDots, LogitJob, PortableDots, SoftEngine, WeightedSumJob};
pub use host::{HostInterface, Submission};
pub use nand::{
    FILTER_BEAT_BYTES, MAX_FILTER_ROWS, Nand, NandCmd, NandDone, NandStatus, RowFilter,
};
pub use parts::Parts;
