//! Q5_1 row kernels. A block of 32 is f16 `d`, f16 `m`, then `qh` and `qs`
//! laid out as in Q5_0; x = q·d + m. As for Q4_1, the dot product is
//! d·Σq·x + m·Σx per block with Σx precomputed per block of x.

use super::float::f16_at;
use super::q5_0::{pack5, unpack5};

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
