//! `libinstinfer`: the `offload` crate's calls for C and C++ programs,
//! the same operations as the Python package: drives opened from spec
//! strings (or the SSD block-sparse backend) behind one opaque handle,
//! sequences, KV append, decode with split submit/fetch, identify and
//! statistics. The crate root holds the header's structs and constants.
//! `include/instinfer.h` is generated from this crate by
//! cbindgen and checked by a test.
//!
//! | module | owns |
//! | --- | --- |
//! | [`handle`] | `Handle`: the safe Rust behind each C function |
//! | [`ffi`] | the `extern "C"` functions: pointers checked, panics caught (all the unsafe code) |
//! | [`last`] | the thread's last error (message and NVMe status) |
//!
//! Unsafe code is allowed in `ffi` and in the tests that call it.
#![deny(unsafe_code)]
#![allow(non_camel_case_types)]

// Raw pointers from C callers: every block says why it is sound.
#[allow(unsafe_code)]
pub mod ffi;
pub mod handle;
pub mod last;

/// Success.
pub const INSTINFER_OK: i32 = 0;
/// A bad argument: a spec, a shape, a length, a method, a null pointer.
pub const INSTINFER_EINVALID: i32 = 1;
/// The sequence is not open.
pub const INSTINFER_ENOSEQ: i32 = 2;
/// The sequence is already open.
pub const INSTINFER_EEXIST: i32 = 3;
/// No such pending batch.
pub const INSTINFER_ENOBATCH: i32 = 4;
/// The drive completed a command with an error status
/// (instinfer_last_nvme_status()).
pub const INSTINFER_ESTATUS: i32 = 5;
/// The command could not be moved to or from the drive.
pub const INSTINFER_ETRANSPORT: i32 = 6;
/// The device is no InstCSD drive, or answered nonsense.
pub const INSTINFER_EDEVICE: i32 = 7;
/// The SSD store failed.
pub const INSTINFER_ESTORAGE: i32 = 8;
/// A fault inside the library (a caught panic): the handle should be freed.
pub const INSTINFER_EINTERNAL: i32 = 9;

/// Element type of an array: IEEE fp16 bit patterns (uint16_t).
pub const INSTINFER_F16: u32 = 1;
/// Element type of an array: float.
pub const INSTINFER_F32: u32 = 2;

/// Counters in a statistics log (instinfer_stat_name() names them).
pub const INSTINFER_STATS: usize = 33;
const _: () = assert!(INSTINFER_STATS == proto::StatsLog::COUNTERS);

/// Layouts of a sequence's keys on the drive (instinfer_seq_options).
pub const INSTINFER_LAYOUT_TIME: u32 = 0;
/// Placed by similarity, for the `pages` method.
pub const INSTINFER_LAYOUT_PAGES: u32 = 1;
/// Time order for the `quest` method.
pub const INSTINFER_LAYOUT_QUEST: u32 = 2;

/// Bases of the dim-indexed key copy (instinfer_seq_options).
pub const INSTINFER_BASIS_RAW: u32 = 0;
/// A per-head PCA basis of the first keys (the `sparf-pca` methods).
pub const INSTINFER_BASIS_PCA: u32 = 1;
/// The PCA basis scaled by the keys' RMS (`sparf-bal`).
pub const INSTINFER_BASIS_BALANCED: u32 = 2;

/// A model's attention shape.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct instinfer_shape {
    /// Layers.
    pub layers: u32,
    /// Query heads (a multiple of kv_heads).
    pub q_heads: u32,
    /// KV heads.
    pub kv_heads: u32,
    /// Head dimension.
    pub head_dim: u32,
}

/// How a sequence is opened besides its shape (NULL: the defaults, all 0
/// but dim_group 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct instinfer_seq_options {
    /// INSTINFER_BASIS_*.
    pub basis: u32,
    /// INSTINFER_LAYOUT_*.
    pub layout: u32,
    /// Dims per flash row of the dim-indexed copy (0 means 1).
    pub dim_group: u32,
}

/// A decode method: `name` (`dense`, `sparf`, `sparf-pca`, `pages`,
/// `block`, …) at `compression` in (0, 1]; `sparf_r` > 0 sets SparF's
/// r, k and local by hand (name must be `sparf`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct instinfer_method {
    /// NUL-terminated method name.
    pub name: *const core::ffi::c_char,
    /// Elements of K and V read ÷ dense's.
    pub compression: f64,
    /// SparF's dims for the approximate scores (0: from compression).
    pub sparf_r: u32,
    /// SparF's tokens attended exactly.
    pub sparf_k: u32,
    /// SparF's most recent tokens always kept.
    pub sparf_local: u32,
}

/// One step's counters (see the Python report's `steps`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct instinfer_report {
    /// Tokens attended over (the new one included).
    pub tokens: u32,
    /// Tokens whose V rows entered the weighted sum.
    pub tokens_attended: u32,
    /// Flash pages read.
    pub pages_read: u32,
    /// Flash pages a sparse method did not read.
    pub pages_skipped: u32,
    /// KV heads whose k the guardrail widened.
    pub guard_widened: u32,
    /// Bytes through the engines (SSD backend: bytes read from the store).
    pub engine_bytes: u64,
    /// Elements the NAND-controller filters dropped.
    pub elements_filtered: u64,
}

/// A drive's Identify: the InstCSD capability block's main fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct instinfer_caps {
    /// Methods the drive runs: bit 0 dense, bit 1 SparF (and SparF+), bit 2 pages.
    pub methods: u32,
    /// Flash page size, bytes.
    pub page_size: u32,
    /// Flash channels.
    pub channels: u32,
    /// Dies per channel.
    pub ways: u32,
    /// Largest head dimension.
    pub max_head_dim: u32,
    /// Largest query-heads-per-KV-head group.
    pub max_group: u32,
    /// Largest KV heads per drive.
    pub max_kv_heads: u32,
    /// Largest layer count.
    pub max_layers: u32,
    /// Sequences open at once.
    pub max_sequences: u32,
    /// Most tokens per (sequence, layer, head).
    pub max_tokens_per_stream: u32,
    /// Largest transfer of one command, bytes.
    pub max_transfer: u64,
    /// Device DRAM for KV tails and results, bytes.
    pub dram_budget_bytes: u64,
}

/// The SSD backend's store (instinfer_open_ssd).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct instinfer_ssd_options {
    /// Tokens per sequence at most.
    pub capacity: u32,
    /// Sequences open at once at most.
    pub slots: u32,
    /// Tokens per block (0: 32).
    pub block: u32,
    /// Layers of prefetch ahead, 0 to 4.
    pub prefetch: u32,
}

#[cfg(test)]
// The tests call the C functions, which are unsafe to call.
#[allow(unsafe_code)]
mod tests;
