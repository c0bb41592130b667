//! Q3_K: a super-block of 256 is `hmask[32]`, `qs[64]`, `scales[12]`, f16
//! `d` (110 bytes). Element e = 128·n + 32·j + l (n < 2, j < 4, l < 32)
//! has low bits (qs[32·n + l] >> 2·j) & 3 and high bit
//! (hmask[l] >> (e / 32)) & 1; q = low − 4 when the high bit is clear,
//! else low (q in −4..=3). Group g (16 elements) has a 6-bit scale s:
//! its low nibble is nibble g of `scales[0..8]` (low nibbles first), its
//! top two bits are bits 2·(g / 4).. of `scales[8 + g % 4]`;
//! dl = d·(s − 32) and x = dl·q.

use super::float::f16_at;
use super::kquant::{KBlock, QK_K, Unpacked};

pub(super) struct Q3K;

/// The 16 signed 6-bit group scales (s − 32) of a packed `scales[12]`.
pub(super) fn scales(p: &[u8]) -> [i8; 16] {
    let mut s = [0i8; 16];
    for (g, v) in s.iter_mut().enumerate() {
        let low = if g < 8 { p[g] & 0xF } else { p[g - 8] >> 4 };
        let high = (p[8 + g % 4] >> (2 * (g / 4))) & 3;
        *v = (low | (high << 4)) as i8 - 32;
    }
    s
}

impl KBlock for Q3K {
    const BYTES: usize = 110;
    const GROUP: usize = 16;
    const HAS_MIN: bool = false;
    const OFFSET: i32 = 4;

    fn unpack(blk: &[u8], u: &mut Unpacked) {
        let (hmask, rest) = blk.split_at(QK_K / 8);
        let (qs, rest) = rest.split_at(QK_K / 4);
        let (packed, ds) = rest.split_at(12);
        u.d = f16_at(ds[0], ds[1]);
        for (sc, s) in u.sc.iter_mut().zip(scales(packed)) {
            *sc = i32::from(s);
        }
        // 32 elements (n, j) at a time: crumb j of the 32 bytes of half n,
        // and bit i = 4·n + j of every hmask byte.
        for (i, out) in u.q.chunks_exact_mut(32).enumerate() {
            let (bytes, shift) = (&qs[32 * (i / 4)..][..32], 2 * (i % 4));
            for ((q, b), h) in out.iter_mut().zip(bytes).zip(hmask) {
                // Stored as q + 4 (`OFFSET`).
                let low = (b >> shift) & 3;
                *q = if (h >> i) & 1 == 1 { low + 4 } else { low };
            }
        }
    }
}
