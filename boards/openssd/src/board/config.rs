//! The start-up configuration the OpenSSD boards share, and a board's own
//! from its [`OpenSsd`] description and its engine.

use alloc::vec::Vec;

use firmware::{DeviceConfig, EngineInfo, Identity};
use ftl::Geometry;

use super::{Board, OpenSsd};
use crate::mmio::Regs;

/// Engine lanes advertised when no engine answers its probe: the
/// synthesized engine's 2 kernels × 8 lanes.
pub const SYNTH_LANES: u32 = 16;

/// The PCI vendor id the boards report (the value the other boards of
/// this project use).
pub const VENDOR_ID: u16 = 0x1d1d;

/// What a board tells the core at start-up: geometry, the DRAM the group
/// buffers may use, identity, and the engine it advertises. Limits follow
/// the board-without-timing defaults of this project (64 sequences, 4096
/// streams, 1 MiB transfers); `max_sequences` and friends can be raised
/// once measured on a board.
pub fn device_config(
    geo: Geometry,
    dram_budget: u64,
    serial: &str,
    model: &str,
    engine: EngineInfo,
) -> DeviceConfig {
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
        // Model choice: 64 MiB of the board's DDR for decodes in flight.
        decode_dram_bytes: 64 << 20,
        identity: Identity {
            vendor_id: VENDOR_ID,
            serial: Identity::field(serial),
            model: Identity::field(model),
            firmware_rev: Identity::field(env!("CARGO_PKG_VERSION")),
        },
        engine,
    }
}

/// [`OpenSsd::config`].
pub(super) fn config<B: OpenSsd, R: Regs, M, T>(board: &mut Board<B, R, M, T>) -> DeviceConfig {
    let lanes = board
        .engine
        .hardware()
        .map(|hw| hw.config().kernels * hw.config().lanes)
        .unwrap_or(SYNTH_LANES);
    device_config(
        B::GEOMETRY,
        B::DRAM_BUDGET,
        B::SERIAL,
        B::MODEL,
        EngineInfo {
            clock_khz: B::ENGINE_CLOCK_KHZ,
            lanes: lanes as u16,
        },
    )
}
