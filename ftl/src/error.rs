//! The one error type of the crate. Every fallible entry point returns it;
//! nothing in the FTL panics on caller input.

use core::fmt;

/// Why an FTL call was refused. A refused call leaves the FTL unchanged
/// (appends are planned in full before anything is mutated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FtlError {
    /// The geometry is out of the supported range (see `Geometry::validate`).
    InvalidGeometry,
    /// `FtlConfig` is inconsistent (e.g. `max_streams` out of range).
    InvalidConfig,
    /// A configured bad block lies outside the geometry.
    BadBlockOutOfRange,
    /// The stream shape is unsupported (head_dim odd / 0 / > 256, or the
    /// dim group does not divide it).
    InvalidShape,
    /// All `max_streams` stream slots are in use.
    TooManyStreams,
    /// The stream id is not open.
    UnknownStream,
    /// `k` and `v` differ in length or are not whole `[n][head_dim]` rows.
    BadLength,
    /// The stream would exceed `u32::MAX` tokens.
    StreamTooLong,
    /// Group, run or dim block index beyond what the stream holds.
    OutOfRange,
    /// A physical address outside the geometry.
    InvalidAddress,
    /// The DRAM budget cannot hold even one token of this stream's
    /// group buffers (K + V + dim copy = 6·head_dim bytes).
    DramBudget,
    /// Not enough free pages on the dies this append must write to.
    /// Nothing was changed; draining ops (which releases blocks whose
    /// erase was deferred) or closing streams may make room.
    NoSpace,
    /// A page of this stream could not be read back when it had to be
    /// moved or merged (it failed every read retry): the stream's data is
    /// lost, and it is refused rather than served from what is left.
    DataLost,
}

impl fmt::Display for FtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            FtlError::InvalidGeometry => "flash geometry out of supported range",
            FtlError::InvalidConfig => "invalid FTL configuration",
            FtlError::BadBlockOutOfRange => "configured bad block outside the geometry",
            FtlError::InvalidShape => "unsupported stream shape",
            FtlError::TooManyStreams => "no free stream slot",
            FtlError::UnknownStream => "stream is not open",
            FtlError::BadLength => "k/v are not matching whole [n][head_dim] rows",
            FtlError::StreamTooLong => "stream length would overflow",
            FtlError::OutOfRange => "group, run or block index out of range",
            FtlError::InvalidAddress => "physical address outside the geometry",
            FtlError::DramBudget => "DRAM budget too small for this stream",
            FtlError::NoSpace => "no free flash space for this append",
            FtlError::DataLost => {
                "a page of the stream could not be read back to be moved: its data is lost"
            }
        };
        f.write_str(s)
    }
}

impl core::error::Error for FtlError {}
