//! Q4_K: a super-block of 256 is f16 `d`, f16 `dmin`, `scales[12]`,
//! `qs[128]` (144 bytes). Group g (32 elements) has a 6-bit scale sc and
//! 6-bit min m packed in `scales` (`scale_min`); dl = d·sc, ml = dmin·m,
//! x = dl·q − ml. Element e = 64·c + 32·h + l (c < 4, h < 2, l < 32) has
//! q = nibble h (low first) of qs[32·c + l].

use super::float::f16_at;
use super::kquant::{KBlock, QK_K, Unpacked};
use super::simd::k_nibbles;

pub(super) struct Q4K;

/// Scale and min of group `g` (< 8) from a packed `scales[12]` (ggml's
/// `get_scale_min_k4`): groups 0–3 keep theirs in the low 6 bits of bytes
/// g and g + 4; groups 4–7 keep the low 4 bits in the nibbles of byte
/// g + 4 (scale low, min high) and the top 2 bits in the top 2 bits of
/// bytes g − 4 (scale) and g (min).
pub(super) fn scale_min(p: &[u8], g: usize) -> (u8, u8) {
    if g < 4 {
        (p[g] & 63, p[g + 4] & 63)
    } else {
        (
            (p[g + 4] & 0xF) | ((p[g - 4] >> 6) << 4),
            (p[g + 4] >> 4) | ((p[g] >> 6) << 4),
        )
    }
}

/// d, dmin and the 8 groups' scales and minima, from the first 16 bytes
/// of a Q4_K/Q5_K block.
pub(super) fn group_scales(head: &[u8], u: &mut Unpacked) {
    u.d = f16_at(head[0], head[1]);
    u.dmin = f16_at(head[2], head[3]);
    for g in 0..QK_K / 32 {
        let (sc, m) = scale_min(&head[4..16], g);
        u.sc[g] = i32::from(sc);
        u.m[g] = i32::from(m);
    }
}

impl KBlock for Q4K {
    const BYTES: usize = 144;
    const GROUP: usize = 32;
    const HAS_MIN: bool = true;
    const OFFSET: i32 = 0;

    fn unpack(blk: &[u8], u: &mut Unpacked) {
        group_scales(blk, u);
        k_nibbles(&blk[16..], &mut u.q);
    }
}
