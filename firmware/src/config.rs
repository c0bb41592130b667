//! What a board tells the core about itself at start-up.

use ftl::FtlConfig;

/// Strings of Identify Controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// PCI vendor id.
    pub vendor_id: u16,
    /// Serial number (ASCII, space padded to 20).
    pub serial: [u8; 20],
    /// Model number (ASCII, space padded to 40).
    pub model: [u8; 40],
    /// Firmware revision (ASCII, space padded to 8).
    pub firmware_rev: [u8; 8],
}

impl Identity {
    /// Pads `s` with spaces into a fixed field (truncating).
    pub fn field<const N: usize>(s: &str) -> [u8; N] {
        let mut out = [b' '; N];
        for (o, b) in out.iter_mut().zip(s.bytes()) {
            *o = b;
        }
        out
    }
}

/// The engine a board carries, as advertised to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineInfo {
    /// Engine clock in kHz.
    pub clock_khz: u32,
    /// GeMV lanes (MACs per cycle).
    pub lanes: u16,
}

/// Start-up configuration of the device core.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Flash geometry, DRAM budget for group buffers, bad blocks.
    pub ftl: FtlConfig,
    /// Sequences open at once.
    pub max_sequences: u32,
    /// Layers per sequence.
    pub max_layers: u16,
    /// KV heads per sequence (on this device).
    pub max_kv_heads: u8,
    /// Query heads per KV head.
    pub max_group: u8,
    /// Largest head dimension.
    pub max_head_dim: u16,
    /// Largest transfer of one command (bytes), advertised as MDTS.
    pub mdts_bytes: u32,
    /// Tokens one stream may hold.
    pub max_tokens_per_stream: u32,
    /// Device DRAM for the working sets of decode commands in flight
    /// (bytes): the admission bound of a batch of decodes.
    pub decode_dram_bytes: u64,
    /// Identify strings.
    pub identity: Identity,
    /// Engine description.
    pub engine: EngineInfo,
}
