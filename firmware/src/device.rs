//! The device core: one object owning the board, the FTL and the sequence
//! table, serving commands one at a time.

use crate::config::DeviceConfig;
use crate::error::DeviceError;
use crate::hal::{Clock, Engine, HostInterface, Nand};

/// What one [`Device::poll`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// No command was waiting.
    Idle,
    /// One command was served and completed (successfully or with an error
    /// status).
    Served,
}

/// The device core running on board `B`.
#[derive(Debug)]
pub struct Device<B> {
    pub(crate) board: B,
    pub(crate) state: crate::dispatch::State,
}

impl<B> Device<B>
where
    B: HostInterface + Nand + Engine + Clock,
{
    /// Starts the core on `board`.
    pub fn new(board: B, config: DeviceConfig) -> Result<Self, DeviceError> {
        log_info!(
            "device core up: {=u32} sequences, {=u32} B pages",
            config.max_sequences,
            config.ftl.geometry.page_size
        );
        let state = crate::dispatch::State::new(config)?;
        Ok(Self { board, state })
    }

    /// Serves at most one command.
    pub fn poll(&mut self) -> Result<Progress, DeviceError> {
        crate::dispatch::poll(self)
    }

    /// Serves commands until every queue is empty; returns how many.
    pub fn run_until_idle(&mut self) -> Result<usize, DeviceError> {
        let mut served = 0;
        while self.poll()? == Progress::Served {
            served += 1;
        }
        Ok(served)
    }

    /// The board.
    pub fn board(&self) -> &B {
        &self.board
    }

    /// The board, mutably (the simulated host uses it to reach host memory
    /// and doorbells).
    pub fn board_mut(&mut self) -> &mut B {
        &mut self.board
    }

    /// The statistics log page as the host would read it.
    pub fn stats(&self) -> proto::StatsLog {
        crate::stats::snapshot(self)
    }

    /// The flash translation layer, for inspection (block accounting in
    /// tests and tools).
    pub fn ftl(&self) -> &ftl::Ftl {
        &self.state.ftl
    }
}
