//! Stream identity and shape. A stream is the KV of one attention head of
//! one sequence of one layer; the firmware owns the (sequence, layer,
//! kv_head) → `StreamId` table.

use crate::error::FtlError;

/// Handle of an open stream; ids are small and reused after close.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u32);

/// Which half of the KV pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Keys: stored token-indexed and, a second time, dim-indexed.
    K,
    /// Values: stored token-indexed only.
    V,
}

/// Per-stream layout parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamShape {
    /// Elements per token (1..=256, even).
    pub head_dim: u16,
    /// `m`: dims per dim-indexed page (1..=8, divides `head_dim`).
    pub dim_group: u8,
}

impl StreamShape {
    /// Checks the supported range.
    pub fn validate(&self) -> Result<(), FtlError> {
        let hd = self.head_dim;
        let m = u16::from(self.dim_group);
        if (1..=256).contains(&hd)
            && hd.is_multiple_of(2)
            && (1..=8).contains(&m)
            && hd.is_multiple_of(m)
        {
            Ok(())
        } else {
            Err(FtlError::InvalidShape)
        }
    }

    /// Dim blocks (`head_dim / m`).
    pub const fn dim_blocks(&self) -> u32 {
        if self.dim_group == 0 {
            0
        } else {
            self.head_dim as u32 / self.dim_group as u32
        }
    }

    /// Group-buffer bytes one token costs while held in DRAM: K + V rows
    /// (2·head_dim elements) plus its dim-copy column (head_dim elements).
    pub const fn bytes_per_token(&self) -> u64 {
        6 * self.head_dim as u64
    }
}
