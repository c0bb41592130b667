//! [`EmuBoard`]: the four HAL traits of the device core inside an
//! emulator — the emulator's host memory ([`CommandHost`]), flash in RAM
//! ([`RamNand`], with the NFC row filter), the engine in software
//! ([`SoftEngine`]) and a [`TimeSource`].

use alloc::vec::Vec;

use board_ram::{RamNand, RamNandError};
use firmware::hal::{
    Clock, Engine, HostInterface, LogitJob, Nand, NandCmd, NandDone, SoftEngine, Submission,
    WeightedSumJob,
};
use proto::Status;

use crate::clock::TimeSource;
use crate::host::{CommandHost, DmaError, HostDma};

/// The board; see the module docs.
#[derive(Debug)]
pub struct EmuBoard<D, T> {
    /// The emulator's side of the NVMe interface.
    pub host: CommandHost<D>,
    /// The flash.
    pub nand: RamNand,
    /// The attention engine.
    pub engine: SoftEngine,
    /// The clock.
    pub time: T,
}

impl<D: HostDma, T> HostInterface for EmuBoard<D, T> {
    type HostError = DmaError;

    fn fetch(&mut self) -> nb::Result<Submission, DmaError> {
        self.host.fetch()
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.host.dma_read(addr, buf)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        self.host.dma_write(addr, data)
    }

    fn complete(&mut self, sub: &Submission, status: Status, dw0: u32) -> nb::Result<(), DmaError> {
        self.host.complete(sub, status, dw0)
    }
}

impl<D, T> Nand for EmuBoard<D, T> {
    type NandError = RamNandError;

    fn submit(&mut self, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), RamNandError> {
        self.nand.submit(tag, cmd)
    }

    fn poll(&mut self, out: &mut [u8]) -> nb::Result<NandDone, RamNandError> {
        self.nand.poll(out)
    }

    fn in_flight(&self) -> usize {
        self.nand.in_flight()
    }
}

impl<D, T> Engine for EmuBoard<D, T> {
    fn logits(&mut self, job: LogitJob<'_>) {
        self.engine.logits(job);
    }

    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]) {
        self.engine.softmax(logits, probs);
    }

    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) {
        self.engine.argtopk(keys, k, out);
    }

    fn weighted_sum(&mut self, job: WeightedSumJob<'_>) {
        self.engine.weighted_sum(job);
    }
}

impl<D, T: TimeSource> Clock for EmuBoard<D, T> {
    fn now_ns(&self) -> u64 {
        self.time.now_ns()
    }
}
