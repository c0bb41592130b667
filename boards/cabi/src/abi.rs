//! The C types and constants of `include/instcsd.h`, field for field: the
//! callback table an emulator hands over ([`Env`]), the start-up
//! configuration ([`RawConfig`]) and the header's `#define`s.
//!
//! Plain `#[repr(C)]` data; nothing here dereferences anything (that is
//! `ffi`). The sizes are checked at compile time here and by the
//! header's `_Static_assert`s, and `tests/it/header.rs` checks that the two
//! agree.

use core::ffi::{c_char, c_int, c_void};

/// `int (*dma_read)(void *ctx, uint64_t addr, void *buf, size_t len)`.
pub type DmaReadFn =
    unsafe extern "C" fn(ctx: *mut c_void, addr: u64, buf: *mut c_void, len: usize) -> c_int;
/// `int (*dma_write)(void *ctx, uint64_t addr, const void *buf, size_t len)`.
pub type DmaWriteFn =
    unsafe extern "C" fn(ctx: *mut c_void, addr: u64, buf: *const c_void, len: usize) -> c_int;
/// `void *(*alloc)(void *ctx, size_t size, size_t align)`.
pub type AllocFn = unsafe extern "C" fn(ctx: *mut c_void, size: usize, align: usize) -> *mut c_void;
/// `void (*free)(void *ctx, void *p, size_t size, size_t align)`.
pub type FreeFn = unsafe extern "C" fn(ctx: *mut c_void, p: *mut c_void, size: usize, align: usize);
/// `uint64_t (*now_ns)(void *ctx)`.
pub type NowFn = unsafe extern "C" fn(ctx: *mut c_void) -> u64;
/// `void (*panic)(void *ctx, const char *msg, size_t len)`.
pub type PanicFn = unsafe extern "C" fn(ctx: *mut c_void, msg: *const c_char, len: usize);

/// `instcsd_env`: what the emulator provides.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Env {
    /// Passed back to every callback.
    pub ctx: *mut c_void,
    /// Required.
    pub dma_read: Option<DmaReadFn>,
    /// Required.
    pub dma_write: Option<DmaWriteFn>,
    /// Required on `x86_64-unknown-none` (the global allocator); ignored on
    /// hosted targets.
    pub alloc: Option<AllocFn>,
    /// As `alloc`.
    pub free: Option<FreeFn>,
    /// Optional device clock.
    pub now_ns: Option<NowFn>,
    /// Optional; called by the `x86_64-unknown-none` panic handler.
    pub panic: Option<PanicFn>,
}

/// `instcsd_config`: the start-up configuration as the emulator writes it.
/// Zero means "default" wherever the header says so; every reserved field
/// must be zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawConfig {
    /// Must be [`ABI_VERSION`].
    pub abi_version: u32,
    /// Flash page size: 4096 or 16384.
    pub page_size: u32,
    /// One of the `GEOMETRY_*` presets.
    pub geometry: u32,
    /// Channels ([`GEOMETRY_CUSTOM`] only, else 0).
    pub channels: u8,
    /// Ways (dies per channel; [`GEOMETRY_CUSTOM`] only, else 0).
    pub ways: u8,
    /// Must be 0.
    pub reserved0: u16,
    /// Erase blocks per die ([`GEOMETRY_CUSTOM`] only, else 0).
    pub blocks_per_die: u32,
    /// Pages per erase block ([`GEOMETRY_CUSTOM`] only, else 0).
    pub pages_per_block: u32,
    /// Flash pages kept in RAM at once (1..=pages of the geometry).
    pub ram_pages: u64,
    /// Device DRAM for group buffers in bytes; 0 = default.
    pub dram_budget_bytes: u64,
    /// Sequences open at once; 0 = default.
    pub max_sequences: u32,
    /// FTL stream slots; 0 = default.
    pub max_streams: u32,
    /// Largest transfer of one command; 0 = default.
    pub mdts_bytes: u32,
    /// PCI vendor id in Identify; 0 = default.
    pub vendor_id: u16,
    /// Must be 0.
    pub reserved1: u16,
    /// Identify serial number: printable ASCII, NUL padded; all NUL =
    /// default.
    pub serial: [c_char; 20],
    /// Identify model number, as `serial`.
    pub model: [c_char; 40],
    /// Identify firmware revision, as `serial`.
    pub firmware_rev: [c_char; 8],
    /// Must be 0.
    pub reserved2: u32,
}

/// Version of the ABI this library implements.
pub const ABI_VERSION: u32 = 1;

/// 8 channels × 4 ways × 256 blocks × 64 pages (the simulated board's).
pub const GEOMETRY_SIM: u32 = 0;
/// DaisyPlus: 4 × 2 × 2048 × 256, 16 KiB pages only.
pub const GEOMETRY_DAISYPLUS: u32 = 1;
/// Cosmos+ OpenSSD: 8 × 8 × 4096 × 256, 16 KiB pages only.
pub const GEOMETRY_COSMOS_PLUS: u32 = 2;
/// The geometry fields of [`RawConfig`].
pub const GEOMETRY_CUSTOM: u32 = 3;

/// Success.
pub const OK: c_int = 0;
/// The device is poisoned: a panic was caught in an earlier call.
pub const EIO: c_int = -5;
/// The allocator hooks are already installed with other functions.
pub const EBUSY: c_int = -16;
/// A null pointer, a missing callback or an invalid configuration.
pub const EINVAL: c_int = -22;
/// `abi_version` is not [`ABI_VERSION`].
pub const ENOTSUP: c_int = -95;

/// Size of [`Env`] on a 64-bit target (the header asserts the same).
pub const ENV_SIZE: usize = 56;
/// Size of [`RawConfig`] (the header asserts the same).
pub const CONFIG_SIZE: usize = 128;

#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Env>() == ENV_SIZE);
const _: () = assert!(core::mem::size_of::<RawConfig>() == CONFIG_SIZE);
const _: () = assert!(core::mem::offset_of!(RawConfig, ram_pages) == 24);
const _: () = assert!(core::mem::offset_of!(RawConfig, serial) == 56);
const _: () = assert!(core::mem::offset_of!(RawConfig, reserved2) == 124);

/// Every numeric `#define` of the header with its value, for the test
/// that keeps the two in step.
pub const HEADER_CONSTANTS: &[(&str, i64)] = &[
    ("INSTCSD_ABI_VERSION", ABI_VERSION as i64),
    ("INSTCSD_GEOMETRY_SIM", GEOMETRY_SIM as i64),
    ("INSTCSD_GEOMETRY_DAISYPLUS", GEOMETRY_DAISYPLUS as i64),
    ("INSTCSD_GEOMETRY_COSMOS_PLUS", GEOMETRY_COSMOS_PLUS as i64),
    ("INSTCSD_GEOMETRY_CUSTOM", GEOMETRY_CUSTOM as i64),
    ("INSTCSD_OK", OK as i64),
    ("INSTCSD_EIO", EIO as i64),
    ("INSTCSD_EBUSY", EBUSY as i64),
    ("INSTCSD_EINVAL", EINVAL as i64),
    ("INSTCSD_ENOTSUP", ENOTSUP as i64),
    ("INSTCSD_ENV_SIZE", ENV_SIZE as i64),
    ("INSTCSD_CONFIG_SIZE", CONFIG_SIZE as i64),
    ("INSTCSD_SQE_SIZE", proto::Sqe::SIZE as i64),
    ("INSTCSD_CQE_SIZE", proto::Cqe::SIZE as i64),
];

impl RawConfig {
    /// All zero (every field "default"/unset), with `abi_version`,
    /// `page_size` and `ram_pages` filled in.
    pub const fn new(page_size: u32, ram_pages: u64) -> Self {
        Self {
            abi_version: ABI_VERSION,
            page_size,
            geometry: GEOMETRY_SIM,
            channels: 0,
            ways: 0,
            reserved0: 0,
            blocks_per_die: 0,
            pages_per_block: 0,
            ram_pages,
            dram_budget_bytes: 0,
            max_sequences: 0,
            max_streams: 0,
            mdts_bytes: 0,
            vendor_id: 0,
            reserved1: 0,
            serial: [0; 20],
            model: [0; 40],
            firmware_rev: [0; 8],
            reserved2: 0,
        }
    }
}
