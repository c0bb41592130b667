//! Q5_1 row kernels. A block of 32 is f16 `d`, f16 `m`, then `qh` and `qs`
//! laid out as in Q5_0; x = q·d + m. As for Q4_1, the dot product is
//! d·Σq·x + m·Σx per block with Σx precomputed per block of x.

use super::float::f16_at;
use super::q5_0::{BIT, pack5, unpack5};

pub(super) const BLOCK: usize = 32;
pub(super) const BLOCK_BYTES: usize = 24;

pub(super) fn dequantize(row: &[u8], out: &mut [f32]) {
    for (blk, o) in row
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16_at(blk[0], blk[1]);
        let m = f16_at(blk[2], blk[3]);
        for (q, v) in unpack5(&blk[4..]).iter().zip(o) {
            *v = f32::from(*q) * d + m;
        }
    }
}

/// `xsum`: Σx per block of 32 (`float::group_sums`).
pub(super) fn dot(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let mut acc = [0f32; BLOCK / 2];
    let mut min_acc = 0f32;
    let (bit_lo, bit_hi) = BIT.split_at(BLOCK / 2);
    for ((blk, xb), s) in row
        .chunks_exact(BLOCK_BYTES)
        .zip(x.chunks_exact(BLOCK))
        .zip(xsum)
    {
        let d = f16_at(blk[0], blk[1]);
        let m = f16_at(blk[2], blk[3]);
        let qh = u32::from_le_bytes([blk[4], blk[5], blk[6], blk[7]]);
        let (xl, xh) = xb.split_at(BLOCK / 2);
        let high = |mask: u32| if qh & mask != 0 { 16 } else { 0 };
        for (((a, b), (ml, mh)), (l, h)) in acc
            .iter_mut()
            .zip(&blk[8..])
            .zip(bit_lo.iter().zip(bit_hi))
            .zip(xl.iter().zip(xh))
        {
            let ql = f32::from((b & 0xF) | high(*ml));
            let qv = f32::from((b >> 4) | high(*mh));
            *a += d * (ql * l + qv * h);
        }
        min_acc += m * s;
    }
    acc.iter().sum::<f32>() + min_acc
}

/// Quantizes one row (length a multiple of 32) as ggml's reference does:
/// m = min, d = (max − min)/31, q = min(31, trunc((x − m)/d + 0.5)).
pub(super) fn quantize(x: &[f32], out: &mut Vec<u8>) {
    for b in x.chunks_exact(BLOCK) {
        let min = b.iter().copied().fold(f32::INFINITY, f32::min);
        let max = b.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let d = (max - min) / 31.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        out.extend_from_slice(&half::f16::from_f32(min).to_le_bytes());
        let mut q = [0u8; BLOCK];
        for (q, v) in q.iter_mut().zip(b) {
            *q = (((v - min) * id + 0.5) as u8).min(31);
        }
        pack5(&q, out);
    }
}
