//! Q4_1 row kernels. A block of 32 is f16 `d`, f16 `m`, 16 bytes `qs`;
//! element j = (qs[j] & 0xF)·d + m, element j+16 = (qs[j] >> 4)·d + m.
//! The dot product (`vecdot`) is d·dx·Σq·qx + m·(dx·Σqx) per block.

use super::float::f16_at;

pub(super) const BLOCK: usize = 32;
pub(super) const BLOCK_BYTES: usize = 20;

pub(super) fn dequantize(row: &[u8], out: &mut [f32]) {
    for (blk, o) in row
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16_at(blk[0], blk[1]);
        let m = f16_at(blk[2], blk[3]);
        let (lo, hi) = o.split_at_mut(BLOCK / 2);
        for ((q, l), h) in blk[4..].iter().zip(lo).zip(hi) {
            *l = f32::from(q & 0xF) * d + m;
            *h = f32::from(q >> 4) * d + m;
        }
    }
}

/// Quantizes one row (length a multiple of 32) the way ggml does:
/// m = min, d = (max − min)/15, q = round((x − m)/d).
pub(super) fn quantize(x: &[f32], out: &mut Vec<u8>) {
    for b in x.chunks_exact(BLOCK) {
        let min = b.iter().copied().fold(f32::INFINITY, f32::min);
        let max = b.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let d = (max - min) / 15.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        out.extend_from_slice(&half::f16::from_f32(min).to_le_bytes());
        for j in 0..BLOCK / 2 {
            let lo = ((b[j] - min) * id).round().clamp(0.0, 15.0) as u8;
            let hi = ((b[j + BLOCK / 2] - min) * id).round().clamp(0.0, 15.0) as u8;
            out.push(lo | (hi << 4));
        }
    }
}
