//! [`LinkBoard`]: a whole board for the device core from the parts of this
//! crate: the NVMe host interface over a byte link, NAND in RAM, the engine
//! model in software and the board's clock. The QEMU boards are this with
//! semihosting files for the link and the CPU's counter for the clock.

use alloc::vec::Vec;

use firmware::hal::{
    Clock, Engine, HostInterface, LogitJob, Nand, NandCmd, NandDone, SoftEngine, Submission,
    WeightedSumJob,
};
use firmware::{DeviceConfig, EngineInfo, Identity};
use ftl::Geometry;
use proto::Status;

use crate::link::{ByteLink, LinkError, LinkHost};
use crate::nand::{RamNand, RamNandError};

/// A board: link host interface, RAM NAND, software engine, clock `C`.
#[derive(Debug)]
pub struct LinkBoard<L, C> {
    /// The host interface.
    pub host: LinkHost<L>,
    /// The flash.
    pub nand: RamNand,
    /// The engine (the model in software).
    pub engine: SoftEngine,
    /// The clock.
    pub clock: C,
}

/// The start-up configuration of a board without a timing model: geometry
/// `geo`, `dram_budget` bytes of group buffers, and its identity. Limits are
/// sized for a guest with a few hundred MiB of heap (model choices: 64
/// sequences, 4096 streams, 1 MiB transfers).
pub fn device_config(geo: Geometry, dram_budget: u64, serial: &str, model: &str) -> DeviceConfig {
    DeviceConfig {
        ftl: ftl::FtlConfig {
            geometry: geo,
            dram_budget,
            max_streams: 4096,
            bad_blocks: Vec::new(),
        },
        max_sequences: 64,
        max_layers: 256,
        max_kv_heads: 64,
        max_group: 16,
        max_head_dim: 256,
        mdts_bytes: 1 << 20,
        max_tokens_per_stream: 1 << 20,
        identity: Identity {
            vendor_id: 0x1d1d,
            serial: Identity::field(serial),
            model: Identity::field(model),
            firmware_rev: Identity::field(env!("CARGO_PKG_VERSION")),
        },
        // The engine runs in software on these boards; the figures are
        // those of the hardware engine they stand in for (285 MHz, 64
        // lanes), as the simulated board advertises.
        engine: EngineInfo {
            clock_khz: 285_000,
            lanes: 64,
        },
    }
}

impl<L: ByteLink, C> HostInterface for LinkBoard<L, C> {
    type HostError = LinkError<L::Error>;

    fn fetch(&mut self) -> nb::Result<Submission, Self::HostError> {
        self.host.fetch()
    }

    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Self::HostError> {
        self.host.dma_read(addr, buf)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::HostError> {
        self.host.dma_write(addr, data)
    }

    fn complete(
        &mut self,
        sub: &Submission,
        status: Status,
        dw0: u32,
    ) -> nb::Result<(), Self::HostError> {
        self.host.complete(sub, status, dw0)
    }
}

impl<L, C> Nand for LinkBoard<L, C> {
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

impl<L, C> Engine for LinkBoard<L, C> {
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

impl<L, C: Clock> Clock for LinkBoard<L, C> {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }
}
