//! Q4_0 row kernels. A block of 32 is f16 `d` and 16 bytes `qs`; element
//! j = ((qs[j] & 0xF) − 8)·d, element j+16 = ((qs[j] >> 4) − 8)·d.

use super::float::f16_at;

pub(super) const BLOCK: usize = 32;
pub(super) const BLOCK_BYTES: usize = 18;

fn lo(q: u8) -> f32 {
    f32::from(i16::from(q & 0xF) - 8)
}

fn hi(q: u8) -> f32 {
    f32::from(i16::from(q >> 4) - 8)
}

pub(super) fn dequantize(row: &[u8], out: &mut [f32]) {
    for (blk, o) in row
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16_at(blk[0], blk[1]);
        let (l, h) = o.split_at_mut(BLOCK / 2);
        for ((q, l), h) in blk[2..].iter().zip(l).zip(h) {
            *l = lo(*q) * d;
            *h = hi(*q) * d;
        }
    }
}

/// Quantizes one row (length a multiple of 32) as ggml's reference does:
/// `max` is the value of largest magnitude, d = max / −8,
/// q = min(15, trunc(x/d + 8.5)).
pub(super) fn quantize(x: &[f32], out: &mut Vec<u8>) {
    for b in x.chunks_exact(BLOCK) {
        let d = signed_absmax(b) / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        let q = |v: f32| ((v * id + 8.5) as u8).min(15);
        let (l, h) = b.split_at(BLOCK / 2);
        out.extend(l.iter().zip(h).map(|(l, h)| q(*l) | (q(*h) << 4)));
    }
}

/// The first element of largest magnitude, with its sign (ggml's `max`).
pub(super) fn signed_absmax(b: &[f32]) -> f32 {
    let mut best = 0f32;
    for v in b {
        if v.abs() > best.abs() {
            best = *v;
        }
    }
    best
}
