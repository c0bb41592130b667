//! SolidAttention on a commodity NVMe SSD: the KV cache of a model on the
//! drive (or raw namespace), block-sparse decode attention on the host,
//! reading only the blocks each step chooses, with speculative prefetch
//! overlapped with compute. The store and the backend need Linux
//! (`O_DIRECT` through io_uring).
//!
//! | module | owns |
//! | --- | --- |
//! | [`layout`] | the store's on-disk layout: interleaved K/V blocks, the header |
//! | [`store`] | [`KvStore`]: coalesced block writes, `O_DIRECT` io_uring reads, representatives in DRAM, reopen |
//! | [`backend`] | [`SolidBackend`]: the attention backend and its prefetch/overlap scheduler |
//! | [`setup`] | [`SsdSetup`]: the CLI's options (`--kv-dir`, `--budget`, `--block`, `--prefetch`) to a backend |
//! | [`stats`] | per-layer hit rates and blocking time |

#[cfg(target_os = "linux")]
pub mod backend;
pub mod layout;
pub mod setup;
pub mod stats;
#[cfg(target_os = "linux")]
pub mod store;

#[cfg(target_os = "linux")]
pub use backend::{SolidBackend, SolidOptions};
pub use layout::Layout;
pub use setup::{Budget, KvLocation, Prefetch, SsdSetup};
pub use stats::{LayerStats, SolidStats};
#[cfg(target_os = "linux")]
pub use store::{KvStore, StoreStats};

#[cfg(all(test, target_os = "linux"))]
mod tests;
