//! Flash geometry: how many channels, ways (dies per channel), blocks,
//! pages and bytes per page, plus the die numbering used by placement.
//!
//! Dies are numbered channel-first: die index `i` is channel `i % channels`,
//! way `(i / channels) % ways`, so consecutive indices walk the channels
//! before the ways (that is what stripes one head over all channels).

use crate::address::{BlockAddr, Ppa};
use crate::error::FtlError;

/// Largest number of erase blocks the FTL will manage. Block metadata is
/// allocated up front (a few dozen bytes per block), so this caps it.
pub const MAX_TOTAL_BLOCKS: u64 = 1 << 22;
/// Largest pages-per-block supported.
pub const MAX_PAGES_PER_BLOCK: u32 = 1 << 16;

/// Shape of the NAND array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Independent NAND channels (buses) that transfer in parallel; 1..=32.
    pub channels: u8,
    /// Dies sharing each channel; 1..=16.
    pub ways: u8,
    /// Erase blocks in each die; nonzero.
    pub blocks_per_die: u32,
    /// Pages in each erase block; 1..=`MAX_PAGES_PER_BLOCK`.
    pub pages_per_block: u32,
    /// Bytes per page (the unit of program and read): 4096 or 16384.
    pub page_size: u32,
}

impl Geometry {
    /// DaisyPlus board: 4 channels × 2 ways, 16 KiB pages, 64 GiB raw:
    /// 64 GiB / 16 KiB = 4 Mi pages / 8 dies = 512 Ki pages per die
    /// = 2048 blocks × 256 pages.
    pub const fn daisyplus() -> Geometry {
        Geometry {
            channels: 4,
            ways: 2,
            blocks_per_die: 2048,
            pages_per_block: 256,
            page_size: 16384,
        }
    }

    /// Cosmos+ OpenSSD: 8 channels × 8 ways, 4096 blocks/die of 256 pages of
    /// 16 KiB = 64 dies × 4096 × 256 × 16 KiB = 1 TiB raw.
    pub const fn cosmos_plus() -> Geometry {
        Geometry {
            channels: 8,
            ways: 8,
            blocks_per_die: 4096,
            pages_per_block: 256,
            page_size: 16384,
        }
    }

    /// Small simulated array for tests: 8 channels × 4 ways × 256 blocks ×
    /// 64 pages (2 GiB raw at 4 KiB pages, 8 GiB at 16 KiB).
    pub const fn sim_default(page_size: u32) -> Geometry {
        Geometry {
            channels: 8,
            ways: 4,
            blocks_per_die: 256,
            pages_per_block: 64,
            page_size,
        }
    }

    /// Checks the supported range: page_size ∈ {4096, 16384}, every count
    /// nonzero, channels ≤ 32, ways ≤ 16, bounded metadata size.
    pub fn validate(&self) -> Result<(), FtlError> {
        let ok = matches!(self.page_size, 4096 | 16384)
            && (1..=32).contains(&self.channels)
            && (1..=16).contains(&self.ways)
            && self.blocks_per_die > 0
            && (1..=MAX_PAGES_PER_BLOCK).contains(&self.pages_per_block)
            && self.total_blocks() <= MAX_TOTAL_BLOCKS;
        if ok {
            Ok(())
        } else {
            Err(FtlError::InvalidGeometry)
        }
    }

    /// Number of dies (channels × ways).
    pub const fn dies(&self) -> u32 {
        self.channels as u32 * self.ways as u32
    }

    /// Total erase blocks.
    pub const fn total_blocks(&self) -> u64 {
        self.dies() as u64 * self.blocks_per_die as u64
    }

    /// Raw capacity in bytes.
    pub const fn capacity_bytes(&self) -> u64 {
        self.total_blocks() * self.pages_per_block as u64 * self.page_size as u64
    }

    /// (channel, way) of die index `die` (channel-first, wraps modulo dies).
    pub const fn die_at(&self, die: u64) -> (u8, u8) {
        let ch = self.channels as u64;
        let ways = self.ways as u64;
        if ch == 0 || ways == 0 {
            return (0, 0);
        }
        ((die % ch) as u8, ((die / ch) % ways) as u8)
    }

    /// Die index of (channel, way): inverse of [`Geometry::die_at`].
    pub const fn die_index(&self, channel: u8, way: u8) -> u32 {
        way as u32 * self.channels as u32 + channel as u32
    }

    /// Whether the page address exists in this geometry.
    pub const fn contains(&self, ppa: Ppa) -> bool {
        self.contains_block(ppa.block()) && ppa.page < self.pages_per_block
    }

    /// Whether the block address exists in this geometry.
    pub const fn contains_block(&self, b: BlockAddr) -> bool {
        b.channel < self.channels && b.way < self.ways && b.block < self.blocks_per_die
    }

    /// Tokens of one head (fp16, `head_dim` elements each) per token page:
    /// `page_size / (head_dim·2)`; 0 for `head_dim == 0`.
    pub const fn tokens_per_page(&self, head_dim: u16) -> u32 {
        if head_dim == 0 {
            0
        } else {
            self.page_size / (head_dim as u32 * 2)
        }
    }

    /// Tokens per dim-indexed page holding `dim_group` dims:
    /// `page_size / (2·dim_group)` rounded down to a multiple of 8, so each
    /// dim row is a whole number of the NFC filter's 16-byte beats; 0 for
    /// `dim_group == 0`.
    pub const fn tokens_per_dim_page(&self, dim_group: u8) -> u32 {
        if dim_group == 0 {
            0
        } else {
            (self.page_size / (dim_group as u32 * 2)) & !7
        }
    }
}
