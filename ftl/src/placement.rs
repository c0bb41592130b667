//! Which die a page goes to. Striping is what lets one head's groups be
//! read from all channels at once, while the block-batched writer
//! (writer.rs) packs many heads' pages into each die's open block.
//!
//! * token group `g` → die index `g + salt` for K, `g + salt + dies/2`
//!   for V;
//! * dim page (block `b`, run `t`) → die index `b + t·(head_dim/m) + salt`;
//!
//! with `salt` = stream id × a golden-ratio stride (an odd number near
//! 0.618 × dies, coprime with the die count), modulo the dies, and die
//! indices mapped channel-first (`Geometry::die_at`). Different heads start
//! on different dies, and the starts of consecutive heads are spread over
//! all dies rather than packed next to each other: with plain `salt` =
//! stream id, 40 heads of 32 groups on 64 dies loaded the busiest die with
//! four times the pages of the least busy one, and a decode waited for
//! that die. V sits half the dies away from K of the same group: a
//! sparse read set takes K and V of the same groups, and on one die the
//! two would add up (the busiest die of SparF's reads at 4 KiB pages held
//! 1.19× the mean); apart, they spread like two independent sets.

use crate::geometry::Geometry;
use crate::stream::{Kind, StreamId};

/// The stride between consecutive streams' first dies: odd, near
/// 0.618 × `dies`, coprime with `dies`.
fn stride(dies: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut s = (dies * 618 / 1000) | 1;
    while s > 1 && gcd(s, dies) != 1 {
        s -= 2;
    }
    s.max(1)
}

/// The die offset of stream `id`.
pub(crate) fn salt(geo: &Geometry, id: StreamId) -> u64 {
    let dies = u64::from(geo.channels) * u64::from(geo.ways);
    (u64::from(id.0) * stride(dies)) % dies.max(1)
}

/// Die index (as used by `BlockTable`) for the `kind` page of token group
/// `group`.
pub(crate) fn token_die(geo: &Geometry, id: StreamId, kind: Kind, group: u32) -> u32 {
    let dies = u64::from(geo.channels) * u64::from(geo.ways);
    let half = match kind {
        Kind::K => 0,
        Kind::V => dies / 2,
    };
    let (c, w) = geo.die_at(u64::from(group) + salt(geo, id) + half);
    geo.die_index(c, w)
}

/// Die index for dim page (`block`, `run`) of a stream with `dim_blocks`
/// dim blocks.
pub(crate) fn dim_die(geo: &Geometry, id: StreamId, dim_blocks: u32, block: u32, run: u32) -> u32 {
    let i = u64::from(block) + u64::from(run) * u64::from(dim_blocks) + salt(geo, id);
    let (c, w) = geo.die_at(i);
    geo.die_index(c, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_coprime_with_the_die_count() {
        for dies in 1..=512u64 {
            let s = stride(dies);
            let (mut a, mut b) = (s, dies);
            while b != 0 {
                (a, b) = (b, a % b);
            }
            assert_eq!(a, 1, "dies {dies} stride {s}");
        }
        assert_eq!(stride(64), 39);
    }

    #[test]
    fn many_heads_load_the_dies_evenly() {
        // 40 heads × 32 groups on 8 channels × 8 ways.
        let geo = Geometry {
            channels: 8,
            ways: 8,
            blocks_per_die: 16,
            pages_per_block: 16,
            page_size: 16384,
        };
        let mut load = [0u32; 64];
        for h in 0..40 {
            for g in 0..32 {
                load[token_die(&geo, StreamId(h), Kind::K, g) as usize] += 1;
            }
        }
        let (lo, hi) = (load.iter().min().unwrap(), load.iter().max().unwrap());
        assert!(*hi <= 24 && *lo >= 16, "pages per die from {lo} to {hi}");
    }

    #[test]
    fn v_sits_half_the_dies_away_from_k() {
        let geo = Geometry {
            channels: 8,
            ways: 8,
            blocks_per_die: 16,
            pages_per_block: 16,
            page_size: 4096,
        };
        for (h, g) in [(0, 0), (3, 17), (39, 63)] {
            let k = token_die(&geo, StreamId(h), Kind::K, g);
            let v = token_die(&geo, StreamId(h), Kind::V, g);
            assert_eq!(v, token_die(&geo, StreamId(h), Kind::K, g + 32));
            assert_ne!(k, v);
        }
    }
}
