//! [`SimBoard`]: the simulated board as the firmware sees it — the four
//! `firmware::hal` traits over the pieces of this crate, sharing one
//! virtual clock.
//!
//! Host DMA, SQE fetches and CQE posts are synchronous (the clock advances
//! to their end); flash commands are split-phase (the clock advances when
//! their completion is polled), so the firmware overlaps flash with DMA and
//! engine work exactly as far as it keeps commands in flight.

use firmware::hal::{
    Clock, Engine, HostInterface, LogitJob, Nand, NandCmd, NandDone, Submission, TimeBreakdown,
    WeightedSumJob,
};
use proto::Status;

use crate::clock::VirtualClock;
use crate::config::SimConfig;
use crate::engine::SimEngine;
use crate::error::{NandError, SimError};
use crate::host_memory::HostMemory;
use crate::nand::NandSim;
use crate::pcie::{CopyEngine, Dma, PcieLink};
use crate::queues::QueueEngine;

/// The simulated board.
#[derive(Debug)]
pub struct SimBoard {
    clock: VirtualClock,
    mem: HostMemory,
    link: PcieLink,
    queues: QueueEngine,
    nand: NandSim,
    engine: SimEngine,
    copy: CopyEngine,
    /// Virtual time the board spent idle, waiting for the host.
    idle_ns: u64,
}

impl SimBoard {
    /// A powered-on board (controller disabled, flash erased) built from
    /// `cfg`.
    pub fn new(cfg: &SimConfig) -> Self {
        Self {
            clock: VirtualClock::new(),
            mem: HostMemory::new(),
            link: {
                let mut l = PcieLink::new(cfg.pcie);
                l.set_switch_latency(cfg.gpu.switch_latency_ns);
                l
            },
            queues: QueueEngine::new(cfg.queues),
            nand: {
                let mut n = NandSim::new(cfg.geometry, cfg.nand, &cfg.bad_blocks);
                n.set_faults(cfg.faults);
                n
            },
            engine: SimEngine::new(cfg.engine),
            copy: CopyEngine::new(cfg.gpu),
            idle_ns: 0,
        }
    }

    /// A board built from `cfg` around flash that already holds data
    /// (power back on after a loss).
    pub fn with_nand(cfg: &SimConfig, mut nand: NandSim) -> Self {
        nand.restore_power();
        let mut b = Self::new(cfg);
        b.nand = nand;
        b
    }

    /// Moves the clock to `t_ns` with nothing to do (the host sent no
    /// command until then); the time is counted as idle. Never goes back.
    pub fn idle_until(&mut self, t_ns: u64) {
        let now = self.clock.now_ns();
        if t_ns > now {
            self.idle_ns += t_ns - now;
            self.clock.advance_to(t_ns);
        }
    }

    /// Virtual time spent idle so far ([`Self::idle_until`]).
    pub fn idle_ns(&self) -> u64 {
        self.idle_ns
    }

    /// The flash, taken out of a board that lost power.
    pub fn into_nand(self) -> NandSim {
        self.nand
    }

    /// A host-side copy of `len` bytes between GPU memory and host DRAM on
    /// the GPU's link (the bounce of a GPU buffer through host memory):
    /// the board's clock moves to the copy's end, since the command that
    /// needs the data cannot start before it (or its result is not in GPU
    /// memory before it).
    pub fn gpu_copy(&mut self, from: u64, to: u64, len: usize) -> Result<(), SimError> {
        let mut buf = vec![0u8; len];
        self.mem.read(from, &mut buf)?;
        self.mem.write(to, &buf)?;
        let end = self.copy.copy(self.clock.now_ns(), len);
        self.clock.advance_to(end);
        Ok(())
    }

    /// The bounce copy engine (bytes, copies, busy time).
    pub fn copy_engine(&self) -> &CopyEngine {
        &self.copy
    }

    /// Host memory (the host side of the simulation writes its buffers
    /// and queues here).
    pub fn host_memory(&mut self) -> &mut HostMemory {
        &mut self.mem
    }

    /// Host memory, read-only.
    pub fn memory(&self) -> &HostMemory {
        &self.mem
    }

    /// The NVMe queue engine.
    pub fn queues(&self) -> &QueueEngine {
        &self.queues
    }

    /// The NVMe queue engine, mutably (enable, doorbells).
    pub fn queues_mut(&mut self) -> &mut QueueEngine {
        &mut self.queues
    }

    /// The flash.
    pub fn nand(&self) -> &NandSim {
        &self.nand
    }

    /// The flash, mutably (fault hooks).
    pub fn nand_mut(&mut self) -> &mut NandSim {
        &mut self.nand
    }

    /// The engine.
    pub fn engine(&self) -> &SimEngine {
        &self.engine
    }

    /// The PCIe link.
    pub fn pcie(&self) -> &PcieLink {
        &self.link
    }

    fn dma(&mut self) -> Dma<'_> {
        Dma {
            mem: &mut self.mem,
            link: &mut self.link,
            clock: &mut self.clock,
        }
    }
}

impl HostInterface for SimBoard {
    type HostError = SimError;

    fn fetch(&mut self) -> nb::Result<Submission, SimError> {
        let Self {
            mem,
            link,
            clock,
            queues,
            ..
        } = self;
        queues.fetch(&mut Dma { mem, link, clock })
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), SimError> {
        self.dma().read(addr, buf)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        // Outputs leave once the engine has produced them.
        self.engine.sync(&mut self.clock);
        self.dma().write(addr, data)
    }

    fn complete(&mut self, sub: &Submission, status: Status, dw0: u32) -> nb::Result<(), SimError> {
        self.engine.sync(&mut self.clock);
        let Self {
            mem,
            link,
            clock,
            queues,
            ..
        } = self;
        queues.complete(sub, status, dw0, &mut Dma { mem, link, clock })
    }
}

impl Nand for SimBoard {
    type NandError = NandError;

    fn submit(&mut self, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), NandError> {
        self.nand.submit(self.clock.now_ns(), tag, cmd)
    }

    fn poll(&mut self, out: &mut [u8]) -> nb::Result<NandDone, NandError> {
        let (done, finish) = self.nand.poll(out)?;
        self.clock.advance_to(finish);
        Ok(done)
    }

    fn poll_done(&mut self, out: &mut [u8]) -> nb::Result<NandDone, NandError> {
        let (done, finish) = self.nand.poll_done(self.clock.now_ns(), out)?;
        self.clock.advance_to(finish);
        Ok(done)
    }

    fn in_flight(&self) -> usize {
        self.nand.in_flight()
    }
}

impl Engine for SimBoard {
    fn logits(&mut self, job: LogitJob<'_>) {
        self.engine.logits(&mut self.clock, job);
    }

    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]) {
        self.engine.softmax(&mut self.clock, logits, probs);
    }

    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) {
        self.engine.argtopk(&mut self.clock, keys, k, out);
    }

    fn weighted_sum(&mut self, job: WeightedSumJob<'_>) {
        self.engine.weighted_sum(&mut self.clock, job);
    }
}

impl Clock for SimBoard {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    fn breakdown(&self) -> TimeBreakdown {
        let nand = self.nand.counters();
        TimeBreakdown {
            total: self.clock.now_ns(),
            flash_busy: nand.array_busy_ns,
            bus_busy: nand.bus_busy_ns,
            engine_busy: self.engine.busy_ns(),
            dma_busy: self.link.counters().busy_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firmware::hal::{NandStatus, RowFilter};
    use ftl::Ppa;

    #[test]
    fn flash_polls_advance_the_clock_and_fill_the_breakdown() {
        let cfg = SimConfig::new(4096);
        let mut b = SimBoard::new(&cfg);
        let filter = RowFilter::first_rows(64, 64, 64);
        for ch in 0..2 {
            let ppa = Ppa {
                channel: ch,
                way: 0,
                block: 0,
                page: 0,
            };
            b.submit(u32::from(ch), NandCmd::Read { ppa, filter })
                .unwrap();
        }
        assert_eq!(b.now_ns(), 0, "submitting takes no time");
        let mut out = vec![0u8; 4096];
        for _ in 0..2 {
            let done = b.poll(&mut out).unwrap();
            assert_eq!((done.status, done.bytes), (NandStatus::Ok, 4096));
        }
        let one = cfg.nand.t_read_ns + cfg.nand.bus_ns(4096);
        assert_eq!(b.now_ns(), one, "two channels in parallel");
        assert_eq!(b.in_flight(), 0);

        let mut probs = [0u32; 8];
        b.softmax(&[0; 8], &mut probs);
        assert_eq!(b.now_ns(), one, "the engine runs while the core goes on");
        // The softmax's result leaves the device: the clock follows.
        let p = b.host_memory().alloc(4096)[0];
        b.dma_write(p, &[0; 4]).unwrap();
        assert!(b.now_ns() > one);
        let t = b.breakdown();
        assert_eq!(t.total, b.now_ns());
        assert_eq!(t.flash_busy, 2 * cfg.nand.t_read_ns);
        assert_eq!(t.bus_busy, 2 * cfg.nand.bus_ns(4096));
        assert!(t.engine_busy > 0 && t.engine_busy <= b.now_ns() - one);
        assert!(t.dma_busy > 0);
    }

    #[test]
    fn dma_to_unmapped_memory_is_an_error() {
        let mut b = SimBoard::new(&SimConfig::new(4096));
        assert!(matches!(
            b.dma_read(0x1234, &mut [0; 4]),
            Err(SimError::BadAddress(0x1234))
        ));
        let p = b.host_memory().alloc(4096)[0];
        b.dma_write(p, &[1; 4096]).unwrap();
        assert_eq!(b.breakdown().dma_busy, cfg_dma_4k());
        assert!(
            matches!(b.fetch(), Err(nb::Error::WouldBlock)),
            "controller not enabled"
        );
    }

    #[test]
    fn idle_time_moves_the_clock_and_is_counted() {
        let mut b = SimBoard::new(&SimConfig::new(4096));
        b.idle_until(5_000);
        b.idle_until(3_000);
        assert_eq!((b.now_ns(), b.idle_ns()), (5_000, 5_000));
        b.idle_until(7_500);
        assert_eq!((b.now_ns(), b.idle_ns()), (7_500, 7_500));
        assert_eq!(b.breakdown().total, 7_500);
    }

    fn cfg_dma_4k() -> u64 {
        SimConfig::new(4096).pcie.transaction_ns(4096)
    }
}
