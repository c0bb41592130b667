//! The start-up configuration the OpenSSD boards share. (The board itself
//! is a [`firmware::hal::Parts`] of this crate's drivers.)

use alloc::vec::Vec;

use firmware::{DeviceConfig, EngineInfo, Identity};
use ftl::Geometry;

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
        identity: Identity {
            vendor_id: VENDOR_ID,
            serial: Identity::field(serial),
            model: Identity::field(model),
            firmware_rev: Identity::field(env!("CARGO_PKG_VERSION")),
        },
        engine,
    }
}
