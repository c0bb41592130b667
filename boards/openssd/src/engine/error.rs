//! Why the engine driver refused or failed.

/// An error of [`super::HwEngine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// ID did not read "ICSD": no engine (or another IP) at the address.
    NotAnEngine {
        /// What ID read.
        id: u32,
    },
    /// VERSION's major number is not this driver's.
    Version {
        /// What VERSION read.
        version: u32,
    },
    /// CONFIG reports an instance outside the register map's limits.
    Config {
        /// What CONFIG read.
        config: u32,
    },
    /// No such kernel in this instance.
    NoSuchKernel(u32),
    /// No such channel in this instance.
    NoSuchChannel(u32),
    /// D the slave refuses (8..=256, a multiple of 8).
    BadD(u32),
    /// S the slave refuses (1..=8192).
    BadS(u32),
    /// A filter the slave cannot hold (≤ 256 rows of whole 16-byte beats,
    /// keep ≤ row, whole fp16 elements).
    BadFilter {
        /// Rows.
        rows: u16,
        /// Bytes per row.
        row_bytes: u16,
        /// Bytes kept per row.
        keep_bytes: u16,
    },
    /// The kernel is running.
    Busy(u32),
    /// k is 0 or above what ARGTOPK_K holds.
    TopKTooLarge {
        /// Requested k.
        k: u32,
        /// The largest k.
        max: u32,
    },
    /// More keys than the top-k unit holds (0 on a 1.0 engine, which has
    /// no key registers).
    TooManyKeys {
        /// Keys offered.
        n: usize,
        /// Keys the unit holds (CONFIG).
        max: u32,
    },
    /// The top-k unit took another number of indices than min(k, n).
    TopKCount {
        /// TOPK_COUNT.
        count: u32,
        /// min(k, n).
        want: u32,
    },
    /// STATUS.ERR is set.
    Hardware {
        /// STATUS.
        status: u32,
    },
    /// The awaited STATUS bits never rose within the spin budget.
    Timeout {
        /// The bits.
        bits: u32,
    },
}
