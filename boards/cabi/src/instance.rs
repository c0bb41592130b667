//! [`Instance`]: one emulated InstCSD controller, the safe Rust API under
//! the C functions. `submit` runs one command to completion and returns
//! its CQE; it cannot fail — every problem of the command is a status.

use board_ram::RamNand;
use firmware::Device;
use firmware::hal::{SoftEngine, Submission};
use proto::{Cqe, Sqe, Status};

use crate::board::EmuBoard;
use crate::clock::TimeSource;
use crate::config::Config;
use crate::error::ConfigError;
use crate::host::{CommandHost, HostDma};

/// Flash commands in flight at once (RamNand completes them in order; the
/// depth only bounds the core's look-ahead).
const NAND_QUEUE_DEPTH: usize = 32;

/// One emulated controller.
#[derive(Debug)]
pub struct Instance<D, T> {
    dev: Device<EmuBoard<D, T>>,
}

impl<D: HostDma, T: TimeSource> Instance<D, T> {
    /// Starts the device core: `dma` reaches host memory, `time` is its
    /// clock. Allocates the FTL tables and the sequence table up front.
    pub fn new(dma: D, time: T, cfg: &Config) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let ram_pages = usize::try_from(cfg.ram_pages).unwrap_or(usize::MAX);
        let board = EmuBoard {
            host: CommandHost::new(dma),
            nand: RamNand::new(cfg.geometry, ram_pages, NAND_QUEUE_DEPTH),
            engine: SoftEngine::default(),
            clock: time,
        };
        // Through the sequence journal, as every board boots.
        let dev = Device::boot(board, cfg.device_config()).map_err(ConfigError::Core)?;
        Ok(Self { dev })
    }

    /// Runs the command `sqe` from submission queue `qid` (0 = admin) to
    /// completion. The CQE carries the command's cid, `qid`, status and
    /// DW0; its SQ head and phase tag are 0 (the emulator's to fill).
    pub fn submit(&mut self, qid: u16, sqe: &[u8; Sqe::SIZE]) -> Cqe {
        let sqe = match Sqe::from_bytes(sqe) {
            Ok(s) => s,
            // Unreachable with exactly 64 bytes; answered, not panicked.
            Err(_) => return Cqe::new(0, qid, 0, Status::INTERNAL_ERROR, 0, false),
        };
        let board = self.dev.board_mut();
        board.clock.command_started();
        board.host.put(Submission { queue: qid, sqe });
        // The host interface never fails and never blocks a completion, so
        // one poll serves the command; anything else is an internal error.
        let served = self.dev.poll();
        let cqe = self.dev.board_mut().host.take_completion();
        match (served, cqe) {
            (Ok(_), Some(cqe)) => cqe,
            _ => Cqe::new(sqe.cid(), qid, 0, Status::INTERNAL_ERROR, 0, false),
        }
    }

    /// The device core (statistics, the board).
    pub fn device(&self) -> &Device<EmuBoard<D, T>> {
        &self.dev
    }

    /// The board, mutably (the emulator's DMA object).
    pub fn board_mut(&mut self) -> &mut EmuBoard<D, T> {
        self.dev.board_mut()
    }
}

#[cfg(test)]
mod tests;
