//! Physical addresses: a page (`Ppa`) and an erase block (`BlockAddr`).
//! A die is one (channel, way) pair.

/// Physical page address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ppa {
    /// NAND channel (bus), `0..Geometry::channels`.
    pub channel: u8,
    /// Die on that channel, `0..Geometry::ways`.
    pub way: u8,
    /// Erase block within the die, `0..Geometry::blocks_per_die`.
    pub block: u32,
    /// Page within the block, `0..Geometry::pages_per_block`; a block's
    /// pages are programmed in increasing order.
    pub page: u32,
}

/// Physical erase-block address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockAddr {
    /// NAND channel (bus), `0..Geometry::channels`.
    pub channel: u8,
    /// Die on that channel, `0..Geometry::ways`.
    pub way: u8,
    /// Erase block within the die, `0..Geometry::blocks_per_die`.
    pub block: u32,
}

impl Ppa {
    /// The erase block this page belongs to.
    pub const fn block(&self) -> BlockAddr {
        BlockAddr {
            channel: self.channel,
            way: self.way,
            block: self.block,
        }
    }
}

impl BlockAddr {
    /// Page `page` of this block.
    pub const fn page(&self, page: u32) -> Ppa {
        Ppa {
            channel: self.channel,
            way: self.way,
            block: self.block,
            page,
        }
    }
}
