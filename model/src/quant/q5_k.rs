//! Q5_K: a super-block of 256 is f16 `d`, f16 `dmin`, `scales[12]`,
//! `qh[32]`, `qs[128]` (176 bytes). Scales, mins and low nibbles are as in
//! Q4_K; bit 4 of element e's q is (qh[e % 32] >> (e / 32)) & 1.

use super::kquant::{KBlock, Unpacked};
use super::q4_k::group_scales;
use super::simd::k_nibbles;

pub(super) struct Q5K;

impl KBlock for Q5K {
    const BYTES: usize = 176;
    const GROUP: usize = 32;
    const HAS_MIN: bool = true;
    const OFFSET: i32 = 0;

    fn unpack(blk: &[u8], u: &mut Unpacked) {
        group_scales(blk, u);
        let (qh, qs) = blk[16..].split_at(32);
        k_nibbles(qs, &mut u.q);
        for (i, out) in u.q.chunks_exact_mut(32).enumerate() {
            for (q, h) in out.iter_mut().zip(qh) {
                *q |= ((h >> i) & 1) << 4;
            }
        }
    }
}
