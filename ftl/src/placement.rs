//! Which die a page goes to. Striping is what lets one head's groups be
//! read from all channels at once, while the block-batched writer
//! (writer.rs) packs many heads' pages into each die's open block.
//!
//! * token group `g` (K and V alike) → die index `g + salt`;
//! * dim page (block `b`, run `t`) → die index `b + t·(head_dim/m) + salt`;
//!
//! with `salt` = stream id (different heads start on different channels)
//! and die indices mapped channel-first (`Geometry::die_at`).

use crate::geometry::Geometry;
use crate::stream::StreamId;

/// Die index (as used by `BlockTable`) for token group `group`.
pub(crate) fn token_die(geo: &Geometry, id: StreamId, group: u32) -> u32 {
    let (c, w) = geo.die_at(u64::from(group) + u64::from(id.0));
    geo.die_index(c, w)
}

/// Die index for dim page (`block`, `run`) of a stream with `dim_blocks`
/// dim blocks.
pub(crate) fn dim_die(geo: &Geometry, id: StreamId, dim_blocks: u32, block: u32, run: u32) -> u32 {
    let i = u64::from(block) + u64::from(run) * u64::from(dim_blocks) + u64::from(id.0);
    let (c, w) = geo.die_at(i);
    geo.die_index(c, w)
}
