//! [`SimConfig`]: everything that shapes a simulated board, with sourced
//! defaults, and the [`firmware::DeviceConfig`] the core starts with.

use firmware::{DeviceConfig, EngineInfo, Identity};
use ftl::{BlockAddr, Geometry};

use crate::engine::EngineModel;
use crate::nand::{NandFaults, NandTiming};
use crate::pcie::{GpuModel, PcieModel};
use crate::queues::QueueLimits;

/// Configuration of a simulated board.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Flash geometry. Default `ftl::Geometry::sim_default(page_size)`
    /// (8 channels, as InstInfer's emulated CSD, × 4 ways).
    pub geometry: Geometry,
    /// Flash timing (see [`NandTiming::for_page_size`] for the sources).
    pub nand: NandTiming,
    /// Host link. Default PCIe Gen3 x4 (Daisyplus).
    pub pcie: PcieModel,
    /// Engine timing. Default 285 MHz (InstInfer on Daisyplus), 64 lanes.
    pub engine: EngineModel,
    /// NVMe queue limits (model choice: 64 I/O queues of up to 1024).
    pub queues: QueueLimits,
    /// Device DRAM for group buffers in bytes. Model choice: 256 MiB (the
    /// Daisyplus board has 2 GB of DRAM).
    pub dram_budget: u64,
    /// Device DRAM for the working sets of decode commands in flight, in
    /// bytes (the admission bound of a batch). Model choice: 512 MiB of
    /// the Daisyplus board's 2 GB beside the group buffers.
    pub decode_dram_bytes: u64,
    /// Sequences open at once. Model choice: 1024.
    pub max_sequences: u32,
    /// FTL stream slots, one per (sequence, layer, KV head), allocated up
    /// front. Model choice: 65 536 (e.g. 30 layers × 3 KV heads × 728
    /// sequences of SmolLM2-135M).
    pub max_streams: u32,
    /// Factory bad blocks.
    pub bad_blocks: Vec<BlockAddr>,
    /// Largest transfer of one command. Model choice: 2 MiB.
    pub mdts_bytes: u32,
    /// The GPU beside the drive: switch latency of peer-to-peer DMA and
    /// the GPU's own link for bounce copies (see [`GpuModel`]).
    pub gpu: GpuModel,
    /// Seeded NAND faults (none by default).
    pub faults: NandFaults,
    /// Keep the sequence journal in flash and boot through it (survives
    /// power loss: see `firmware::Device::boot`). On by default, as on
    /// every board; off only to measure what it costs.
    pub journal: bool,
    /// Garbage collection settings (`None`: the FTL's defaults for the
    /// geometry).
    pub gc: Option<ftl::GcConfig>,
}

impl SimConfig {
    /// Defaults for flash pages of `page_size` bytes (4096 or 16384).
    pub fn new(page_size: u32) -> Self {
        Self {
            geometry: Geometry::sim_default(page_size),
            nand: NandTiming::for_page_size(page_size),
            pcie: PcieModel::gen3_x4(),
            engine: EngineModel::default(),
            queues: QueueLimits::default(),
            dram_budget: 256 << 20,
            decode_dram_bytes: 512 << 20,
            max_sequences: 1024,
            max_streams: 1 << 16,
            bad_blocks: Vec::new(),
            mdts_bytes: 2 << 20,
            gpu: GpuModel::default(),
            faults: NandFaults::default(),
            journal: true,
            gc: None,
        }
    }

    /// The start-up configuration of the device core on this board.
    pub fn device_config(&self) -> DeviceConfig {
        DeviceConfig {
            ftl: ftl::FtlConfig {
                geometry: self.geometry,
                dram_budget: self.dram_budget,
                max_streams: self.max_streams,
                bad_blocks: self.bad_blocks.clone(),
            },
            max_sequences: self.max_sequences,
            max_layers: 256,
            max_kv_heads: 64,
            max_group: 16,
            max_head_dim: 256,
            mdts_bytes: self.mdts_bytes,
            max_tokens_per_stream: 1 << 20,
            decode_dram_bytes: self.decode_dram_bytes,
            identity: Identity {
                vendor_id: 0x1d1d,
                serial: Identity::field("SIM-0001"),
                model: Identity::field("InstCSD simulated board"),
                firmware_rev: Identity::field("0.1.0"),
            },
            engine: EngineInfo {
                clock_khz: (self.engine.clock_hz / 1000) as u32,
                lanes: self.engine.lanes,
            },
        }
    }
}

impl Default for SimConfig {
    /// 16 KiB pages, as on the Daisyplus and Cosmos+ boards.
    fn default() -> Self {
        Self::new(16384)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = SimConfig::new(4096);
        assert_eq!(
            (c.geometry.channels, c.geometry.ways, c.geometry.page_size),
            (8, 4, 4096)
        );
        assert_eq!(c.nand.t_read_ns, 36_000);
        assert_eq!(SimConfig::default().nand.t_read_ns, 75_000);
        let d = c.device_config();
        assert_eq!(
            d.engine,
            EngineInfo {
                clock_khz: 285_000,
                lanes: 64
            }
        );
        assert_eq!(&d.identity.serial[..8], b"SIM-0001");
        assert_eq!(d.identity.vendor_id, 0x1d1d);
        assert_eq!(d.mdts_bytes, 2 << 20);
    }
}
