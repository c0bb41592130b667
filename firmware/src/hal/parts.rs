//! [`Parts`]: a board made of four separate parts, one per HAL trait. Boards
//! whose host interface, flash, engine and clock are independent objects
//! (the QEMU boards, the C ABI, the OpenSSD boards) are this struct; the
//! trait impls just hand each call to its part.

use alloc::vec::Vec;

use proto::Status;

use super::{
    Clock, Engine, HostInterface, LogitJob, Nand, NandCmd, NandDone, Submission, TimeBreakdown,
    WeightedSumJob,
};

/// A board from a host interface `H`, flash `N`, engine `E` and clock `C`.
#[derive(Debug, Default)]
pub struct Parts<H, N, E, C> {
    /// The NVMe host interface.
    pub host: H,
    /// The flash controllers.
    pub nand: N,
    /// The attention engine.
    pub engine: E,
    /// The clock.
    pub clock: C,
}

impl<H: HostInterface, N, E, C> HostInterface for Parts<H, N, E, C> {
    type HostError = H::HostError;

    fn fetch(&mut self) -> nb::Result<Submission, H::HostError> {
        self.host.fetch()
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), H::HostError> {
        self.host.dma_read(addr, buf)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), H::HostError> {
        self.host.dma_write(addr, data)
    }

    fn complete(
        &mut self,
        sub: &Submission,
        status: Status,
        dw0: u32,
    ) -> nb::Result<(), H::HostError> {
        self.host.complete(sub, status, dw0)
    }

    fn fetch_ahead(&self) -> bool {
        self.host.fetch_ahead()
    }
}

impl<H, N: Nand, E, C> Nand for Parts<H, N, E, C> {
    type NandError = N::NandError;

    fn submit(&mut self, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), N::NandError> {
        self.nand.submit(tag, cmd)
    }

    fn poll(&mut self, out: &mut [u8]) -> nb::Result<NandDone, N::NandError> {
        self.nand.poll(out)
    }

    fn poll_done(&mut self, out: &mut [u8]) -> nb::Result<NandDone, N::NandError> {
        self.nand.poll_done(out)
    }

    fn in_flight(&self) -> usize {
        self.nand.in_flight()
    }
}

impl<H, N, E: Engine, C> Engine for Parts<H, N, E, C> {
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

impl<H, N, E, C: Clock> Clock for Parts<H, N, E, C> {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    fn breakdown(&self) -> TimeBreakdown {
        self.clock.breakdown()
    }
}
