//! Physical addresses: a page (`Ppa`) and an erase block (`BlockAddr`).
//! A die is one (channel, way) pair.

/// Physical page address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ppa {
    pub channel: u8,
    pub way: u8,
    pub block: u32,
    pub page: u32,
}

/// Physical erase-block address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockAddr {
    pub channel: u8,
    pub way: u8,
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
