//! [`LinkBoard`]: a whole board for the device core from the parts of this
//! crate: the NVMe host interface over a byte link, NAND in RAM, the engine
//! model in software and the board's clock. The QEMU boards are this with
//! semihosting files for the link and the CPU's counter for the clock.

use alloc::vec::Vec;

use firmware::hal::{Parts, SoftEngine};
use firmware::{DeviceConfig, EngineInfo, Identity};
use ftl::Geometry;

use crate::link::LinkHost;
use crate::nand::RamNand;

/// A board: link host interface, RAM NAND, software engine, clock `C`.
pub type LinkBoard<L, C> = Parts<LinkHost<L>, RamNand, SoftEngine, C>;

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
        // Model choice: 32 MiB of the guest heap for decodes in flight.
        decode_dram_bytes: 32 << 20,
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
