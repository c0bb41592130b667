//! `TensorKind`: the ggml tensor types this crate computes with, and their
//! block geometry.

use std::fmt;

/// A supported ggml tensor type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    /// ggml type 0: little-endian f32.
    F32,
    /// ggml type 1: little-endian IEEE half.
    F16,
    /// ggml type 3: blocks of 32 as f16 scale `d`, f16 minimum `m`, 16 bytes
    /// of nibbles; element `j` = `(qs[j] & 0xF)·d + m`, element `j+16` = `(qs[j] >> 4)·d + m`.
    Q4_1,
    /// ggml type 8: blocks of 32 as f16 scale `d` and 32 × i8; x = q·d.
    Q8_0,
}

impl TensorKind {
    /// The kind for a ggml type number, `None` when unsupported.
    pub fn from_ggml(ggml_type: u32) -> Option<Self> {
        match ggml_type {
            0 => Some(Self::F32),
            1 => Some(Self::F16),
            3 => Some(Self::Q4_1),
            8 => Some(Self::Q8_0),
            _ => None,
        }
    }

    /// The ggml type number.
    pub fn ggml_type(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q4_1 => 3,
            Self::Q8_0 => 8,
        }
    }

    /// Elements per block.
    pub fn block_len(self) -> usize {
        match self {
            Self::F32 | Self::F16 => 1,
            Self::Q4_1 | Self::Q8_0 => 32,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 => 2,
            Self::Q4_1 => 20,
            Self::Q8_0 => 34,
        }
    }

    /// Bytes of a row of `cols` elements; `None` when `cols` is not a whole
    /// number of blocks or the size overflows.
    pub fn row_bytes(self, cols: u64) -> Option<u64> {
        let block = self.block_len() as u64;
        if cols % block != 0 {
            return None;
        }
        (cols / block).checked_mul(self.block_bytes() as u64)
    }
}

impl fmt::Display for TensorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::F32 => "F32",
            Self::F16 => "F16",
            Self::Q4_1 => "Q4_1",
            Self::Q8_0 => "Q8_0",
        })
    }
}
