//! Errors of the C API and the negative errno-style codes they become at
//! the boundary (the `INSTCSD_E*` constants of the header).
//!
//! A *command* never fails this way: whatever goes wrong inside one (a
//! malformed field, a DMA callback error, flash full) is an NVMe status in
//! its CQE. These errors are about the call itself.

use core::ffi::c_int;
use core::fmt;

use crate::abi;

/// Why a configuration was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// `abi_version` is not [`abi::ABI_VERSION`].
    AbiVersion(u32),
    /// The page size is not 4096 or 16384.
    PageSize(u32),
    /// No such geometry preset.
    UnknownGeometry(u32),
    /// The preset is for another page size.
    PresetPageSize {
        /// The preset.
        preset: u32,
        /// The page size it requires.
        page_size: u32,
    },
    /// A custom geometry field is set with a preset.
    GeometryFieldWithPreset,
    /// The geometry is outside what the FTL supports.
    Geometry,
    /// `ram_pages` is 0 or more than the flash holds.
    RamPages {
        /// Given.
        given: u64,
        /// Pages of the geometry.
        max: u64,
    },
    /// The DRAM budget is smaller than one flash page.
    DramBudget(u64),
    /// `max_sequences` is outside `1..=MAX_SEQUENCES`.
    MaxSequences(u32),
    /// `max_streams` is outside `1..=ftl::MAX_STREAMS`.
    MaxStreams(u32),
    /// `mdts_bytes` is not a power of two in `4096..=proto::prp::MAX_LEN`.
    Mdts(u32),
    /// A reserved field is not zero.
    Reserved(&'static str),
    /// An Identify string is not printable ASCII padded with NULs.
    Text(&'static str),
    /// The device core refused the configuration.
    Core(firmware::DeviceError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AbiVersion(v) => write!(
                f,
                "ABI version {v}, this library implements {}",
                abi::ABI_VERSION
            ),
            Self::PageSize(p) => write!(f, "page size {p} is not 4096 or 16384"),
            Self::UnknownGeometry(g) => write!(f, "unknown geometry preset {g}"),
            Self::PresetPageSize { preset, page_size } => {
                write!(f, "geometry preset {preset} needs {page_size}-byte pages")
            }
            Self::GeometryFieldWithPreset => {
                f.write_str("geometry fields must be zero with a preset")
            }
            Self::Geometry => f.write_str("geometry outside the supported range"),
            Self::RamPages { given, max } => write!(f, "ram_pages {given} not in 1..={max}"),
            Self::DramBudget(b) => write!(f, "DRAM budget {b} bytes is below one page"),
            Self::MaxSequences(n) => write!(f, "max_sequences {n} out of range"),
            Self::MaxStreams(n) => write!(f, "max_streams {n} out of range"),
            Self::Mdts(n) => write!(f, "mdts_bytes {n} is not a power of two in 4 KiB..256 MiB"),
            Self::Reserved(field) => write!(f, "reserved field {field} is not zero"),
            Self::Text(field) => write!(f, "{field} is not NUL-padded printable ASCII"),
            Self::Core(e) => write!(f, "device core: {e}"),
        }
    }
}

/// An error of one C API call.
#[derive(Debug)]
#[non_exhaustive]
pub enum CabiError {
    /// A pointer argument is null.
    Null(&'static str),
    /// A required callback of `instcsd_env` is null.
    MissingCallback(&'static str),
    /// The configuration was refused.
    Config(ConfigError),
    /// `x86_64-unknown-none`: the allocator hooks are installed with other
    /// functions.
    AllocatorBusy,
    /// A panic was caught (in this call or an earlier one); the device
    /// serves nothing more.
    Poisoned,
}

impl CabiError {
    /// The header's code for this error (negative).
    pub fn code(&self) -> c_int {
        match self {
            Self::Null(_) | Self::MissingCallback(_) => abi::EINVAL,
            Self::Config(ConfigError::AbiVersion(_)) => abi::ENOTSUP,
            Self::Config(_) => abi::EINVAL,
            Self::AllocatorBusy => abi::EBUSY,
            Self::Poisoned => abi::EIO,
        }
    }
}

impl From<ConfigError> for CabiError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

impl fmt::Display for CabiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null(what) => write!(f, "{what} is null"),
            Self::MissingCallback(what) => write!(f, "callback {what} is null"),
            Self::Config(e) => write!(f, "bad configuration: {e}"),
            Self::AllocatorBusy => f.write_str("allocator hooks installed with other functions"),
            Self::Poisoned => f.write_str("device poisoned by a panic"),
        }
    }
}

impl core::error::Error for CabiError {}
impl core::error::Error for ConfigError {}

/// The static description of a header code, for `instcsd_strerror`.
pub fn describe(code: c_int) -> &'static core::ffi::CStr {
    match code {
        abi::OK => c"success",
        abi::EIO => c"device poisoned by a panic",
        abi::EBUSY => c"allocator hooks already installed with other functions",
        abi::EINVAL => c"null pointer, missing callback or invalid configuration",
        abi::ENOTSUP => c"unsupported ABI version",
        _ => c"unknown error code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_header_ones() {
        assert_eq!(CabiError::Null("dev").code(), -22);
        assert_eq!(CabiError::Config(ConfigError::AbiVersion(9)).code(), -95);
        assert_eq!(CabiError::Config(ConfigError::PageSize(512)).code(), -22);
        assert_eq!(CabiError::AllocatorBusy.code(), -16);
        assert_eq!(CabiError::Poisoned.code(), -5);
        assert_eq!(describe(-5), c"device poisoned by a panic");
        assert_eq!(describe(1), c"unknown error code");
    }
}
