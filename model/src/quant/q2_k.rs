//! Q2_K: a super-block of 256 is `scales[16]`, `qs[64]`, f16 `d`, f16
//! `dmin` (84 bytes). Group g (16 elements) has scale byte `scales[g]`:
//! dl = d·(low nibble), ml = dmin·(high nibble); x = dl·q − ml.
//! Element e = 128·n + 32·j + l (n < 2, j < 4, l < 32) has
//! q = (qs[32·n + l] >> 2·j) & 3.

use super::float::f16_at;
use super::kquant::{KBlock, QK_K, Unpacked};

pub(super) struct Q2K;

impl KBlock for Q2K {
    const BYTES: usize = 84;
    const GROUP: usize = 16;
    const HAS_MIN: bool = true;
    const OFFSET: i32 = 0;

    fn unpack(blk: &[u8], u: &mut Unpacked) {
        let (scales, rest) = blk.split_at(QK_K / 16);
        let (qs, ds) = rest.split_at(QK_K / 4);
        u.d = f16_at(ds[0], ds[1]);
        u.dmin = f16_at(ds[2], ds[3]);
        for (g, sc) in scales.iter().enumerate() {
            u.sc[g] = i32::from(sc & 0xF);
            u.m[g] = i32::from(sc >> 4);
        }
        // 32 elements (n, j) at a time: crumb j of the 32 bytes of half n.
        for (i, out) in u.q.chunks_exact_mut(32).enumerate() {
            let (bytes, shift) = (&qs[32 * (i / 4)..][..32], 2 * (i % 4));
            for (q, b) in out.iter_mut().zip(bytes) {
                *q = (b >> shift) & 3;
            }
        }
    }
}
