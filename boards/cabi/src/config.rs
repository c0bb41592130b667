//! [`Config`]: the validated start-up configuration, from the C struct
//! ([`Config::from_raw`]) or built in Rust ([`Config::new`]), and the
//! [`firmware::DeviceConfig`] the core starts with.
//!
//! The defaults mirror the simulated board (`board_sim::SimConfig`): the
//! same core limits, DRAM budget, transfer limit and engine description, so
//! the two answer every command alike (a unit test compares them); only the
//! Identify strings differ unless the emulator sets them.

use firmware::{DeviceConfig, EngineInfo, Identity};
use ftl::{FtlConfig, Geometry};

use crate::abi::{self, RawConfig};
use crate::error::ConfigError;

/// Default device DRAM for group buffers (the simulated board's: 256 MiB).
pub const DEFAULT_DRAM_BUDGET: u64 = 256 << 20;
/// Default sequences open at once.
pub const DEFAULT_MAX_SEQUENCES: u32 = 1024;
/// Largest `max_sequences` accepted (the table is allocated up front).
pub const MAX_SEQUENCES: u32 = 1 << 16;
/// Default FTL stream slots (allocated up front).
pub const DEFAULT_MAX_STREAMS: u32 = 1 << 16;
/// Default largest transfer of one command: 2 MiB.
pub const DEFAULT_MDTS: u32 = 2 << 20;
/// Default PCI vendor id in Identify.
pub const DEFAULT_VENDOR_ID: u16 = 0x1d1d;
/// The engine advertised in the capability block: the simulated board's
/// (InstInfer's 285 MHz, 64 lanes). The arithmetic is `SoftEngine`'s,
/// bit-exact with it.
pub const ENGINE: EngineInfo = EngineInfo {
    clock_khz: 285_000,
    lanes: 64,
};

/// A validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Flash geometry.
    pub geometry: Geometry,
    /// Flash pages kept in RAM at once.
    pub ram_pages: u64,
    /// Device DRAM for group buffers in bytes.
    pub dram_budget: u64,
    /// Sequences open at once.
    pub max_sequences: u32,
    /// FTL stream slots.
    pub max_streams: u32,
    /// Largest transfer of one command in bytes.
    pub mdts_bytes: u32,
    /// Identify strings and vendor id.
    pub identity: Identity,
}

impl Config {
    /// Defaults for the simulated board's geometry with `page_size`-byte
    /// pages, every page of flash held in RAM.
    pub fn new(page_size: u32) -> Result<Self, ConfigError> {
        let geometry = Geometry::sim_default(page_size);
        check_page_size(page_size)?;
        let cfg = Self {
            geometry,
            ram_pages: total_pages(&geometry),
            dram_budget: DEFAULT_DRAM_BUDGET,
            max_sequences: DEFAULT_MAX_SEQUENCES,
            max_streams: DEFAULT_MAX_STREAMS,
            mdts_bytes: DEFAULT_MDTS,
            identity: default_identity(),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Validates the C configuration field by field.
    pub fn from_raw(raw: &RawConfig) -> Result<Self, ConfigError> {
        if raw.abi_version != abi::ABI_VERSION {
            return Err(ConfigError::AbiVersion(raw.abi_version));
        }
        for (field, value) in [
            ("reserved0", u32::from(raw.reserved0)),
            ("reserved1", u32::from(raw.reserved1)),
            ("reserved2", raw.reserved2),
        ] {
            if value != 0 {
                return Err(ConfigError::Reserved(field));
            }
        }
        check_page_size(raw.page_size)?;
        let geometry = geometry(raw)?;
        let default = default_identity();
        let identity = Identity {
            vendor_id: or_default(raw.vendor_id, default.vendor_id),
            serial: text("serial", &raw.serial)?.unwrap_or(default.serial),
            model: text("model", &raw.model)?.unwrap_or(default.model),
            firmware_rev: text("firmware_rev", &raw.firmware_rev)?.unwrap_or(default.firmware_rev),
        };
        let cfg = Self {
            geometry,
            ram_pages: raw.ram_pages,
            dram_budget: or_default(raw.dram_budget_bytes, DEFAULT_DRAM_BUDGET),
            max_sequences: or_default(raw.max_sequences, DEFAULT_MAX_SEQUENCES),
            max_streams: or_default(raw.max_streams, DEFAULT_MAX_STREAMS),
            mdts_bytes: or_default(raw.mdts_bytes, DEFAULT_MDTS),
            identity,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field against what the core supports.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_page_size(self.geometry.page_size)?;
        self.geometry
            .validate()
            .map_err(|_| ConfigError::Geometry)?;
        let max = total_pages(&self.geometry);
        if self.ram_pages == 0 || self.ram_pages > max {
            return Err(ConfigError::RamPages {
                given: self.ram_pages,
                max,
            });
        }
        if self.dram_budget < u64::from(self.geometry.page_size) {
            return Err(ConfigError::DramBudget(self.dram_budget));
        }
        if !(1..=MAX_SEQUENCES).contains(&self.max_sequences) {
            return Err(ConfigError::MaxSequences(self.max_sequences));
        }
        if !(1..=ftl::MAX_STREAMS).contains(&self.max_streams) {
            return Err(ConfigError::MaxStreams(self.max_streams));
        }
        let mdts = self.mdts_bytes;
        if !mdts.is_power_of_two() || mdts < 4096 || mdts as usize > proto::prp::MAX_LEN {
            return Err(ConfigError::Mdts(mdts));
        }
        Ok(())
    }

    /// The core's start-up configuration (the simulated board's limits).
    pub fn device_config(&self) -> DeviceConfig {
        DeviceConfig {
            ftl: FtlConfig {
                geometry: self.geometry,
                dram_budget: self.dram_budget,
                max_streams: self.max_streams,
                bad_blocks: alloc::vec::Vec::new(),
            },
            max_sequences: self.max_sequences,
            max_layers: 256,
            max_kv_heads: 64,
            max_group: 16,
            max_head_dim: proto::vendor::MAX_HEAD_DIM,
            mdts_bytes: self.mdts_bytes,
            max_tokens_per_stream: 1 << 20,
            // As the simulated board (an emulator hands one command at a time, so
            // batches are of one and the bound is never reached).
            decode_dram_bytes: 512 << 20,
            identity: self.identity.clone(),
            engine: ENGINE,
        }
    }
}

/// Identify strings of a device whose emulator sets none.
pub fn default_identity() -> Identity {
    Identity {
        vendor_id: DEFAULT_VENDOR_ID,
        serial: Identity::field("EMU-0001"),
        model: Identity::field("InstCSD emulated (C ABI)"),
        firmware_rev: Identity::field(env!("CARGO_PKG_VERSION")),
    }
}

fn check_page_size(page_size: u32) -> Result<(), ConfigError> {
    match page_size {
        4096 | 16384 => Ok(()),
        p => Err(ConfigError::PageSize(p)),
    }
}

fn total_pages(g: &Geometry) -> u64 {
    u64::from(g.dies()) * u64::from(g.blocks_per_die) * u64::from(g.pages_per_block)
}

fn or_default<T: PartialEq + Default>(v: T, default: T) -> T {
    if v == T::default() { default } else { v }
}

fn geometry(raw: &RawConfig) -> Result<Geometry, ConfigError> {
    let custom_fields =
        raw.channels != 0 || raw.ways != 0 || raw.blocks_per_die != 0 || raw.pages_per_block != 0;
    let preset = |g: Geometry| {
        if custom_fields {
            Err(ConfigError::GeometryFieldWithPreset)
        } else if g.page_size != raw.page_size {
            Err(ConfigError::PresetPageSize {
                preset: raw.geometry,
                page_size: g.page_size,
            })
        } else {
            Ok(g)
        }
    };
    match raw.geometry {
        abi::GEOMETRY_SIM => preset(Geometry::sim_default(raw.page_size)),
        abi::GEOMETRY_DAISYPLUS => preset(Geometry::daisyplus()),
        abi::GEOMETRY_COSMOS_PLUS => preset(Geometry::cosmos_plus()),
        abi::GEOMETRY_CUSTOM => Ok(Geometry {
            channels: raw.channels,
            ways: raw.ways,
            blocks_per_die: raw.blocks_per_die,
            pages_per_block: raw.pages_per_block,
            page_size: raw.page_size,
        }),
        g => Err(ConfigError::UnknownGeometry(g)),
    }
}

/// A NUL-padded printable-ASCII field as a space-padded Identify field;
/// `None` when all NUL.
fn text<const N: usize>(
    field: &'static str,
    raw: &[core::ffi::c_char; N],
) -> Result<Option<[u8; N]>, ConfigError> {
    // `c_char` is i8 or u8 by target; the byte is what counts.
    let bytes: [u8; N] = raw.map(|c| c as u8);
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(N);
    let (s, pad) = bytes.split_at(len);
    if !s.iter().all(|b| (0x20..=0x7e).contains(b)) || pad.iter().any(|&b| b != 0) {
        return Err(ConfigError::Text(field));
    }
    if len == 0 {
        return Ok(None);
    }
    let mut out = [b' '; N];
    out[..len].copy_from_slice(s);
    Ok(Some(out))
}

#[cfg(test)]
mod tests;
