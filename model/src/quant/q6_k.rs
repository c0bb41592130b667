//! Q6_K: a super-block of 256 is `ql[128]`, `qh[64]`, `scales[16]` (i8),
//! f16 `d` (210 bytes). Element e = 128·n + 32·k + l (n < 2, k < 4,
//! l < 32) has low nibble k / 2 (low first) of ql[64·n + 32·(k % 2) + l]
//! and top two bits (qh[32·n + l] >> 2·k) & 3; q = that 6-bit value − 32.
//! Group g (16 elements): dl = d·scales[g], x = dl·q.

use super::float::f16_at;
use super::kquant::{KBlock, QK_K, Unpacked};
use super::simd::q6k_quants;

pub(super) struct Q6K;

impl KBlock for Q6K {
    const BYTES: usize = 210;
    const GROUP: usize = 16;
    const HAS_MIN: bool = false;
    const OFFSET: i32 = 32;

    fn unpack(blk: &[u8], u: &mut Unpacked) {
        let (ql, rest) = blk.split_at(QK_K / 2);
        let (qh, rest) = rest.split_at(QK_K / 4);
        let (scales, ds) = rest.split_at(QK_K / 16);
        u.d = f16_at(ds[0], ds[1]);
        for (sc, s) in u.sc.iter_mut().zip(scales) {
            *sc = i32::from(*s as i8);
        }
        // Stored as q + 32 (`OFFSET`).
        q6k_quants(ql, qh, &mut u.q);
    }
}
