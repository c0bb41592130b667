//! Q8_0 row kernels. A block of 32 is f16 `d` and 32 × i8; x = q·d.

use super::float::f16_at;

pub(super) const BLOCK: usize = 32;
pub(super) const BLOCK_BYTES: usize = 34;

pub(super) fn dequantize(row: &[u8], out: &mut [f32]) {
    for (blk, o) in row
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16_at(blk[0], blk[1]);
        for (q, v) in blk[2..].iter().zip(o) {
            *v = f32::from(*q as i8) * d;
        }
    }
}

/// Quantizes one row (length a multiple of 32): d = max|x|/127, q = round(x/d).
pub(super) fn quantize(x: &[f32], out: &mut Vec<u8>) {
    for b in x.chunks_exact(BLOCK) {
        let amax = b.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        out.extend(
            b.iter()
                .map(|v| (v * id).round().clamp(-127.0, 127.0) as i8 as u8),
        );
    }
}
