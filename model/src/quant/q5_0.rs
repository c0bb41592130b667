//! Q5_0 row kernels. A block of 32 is f16 `d`, 4 bytes `qh` (a little-endian
//! u32 holding bit 4 of every q) and 16 bytes `qs` (the low nibbles, element
//! j in `qs[j] & 0xF`, element j+16 in `qs[j] >> 4`); x = (q − 16)·d.

use super::float::f16_at;
use super::q4_0::signed_absmax;

pub(super) const BLOCK: usize = 32;
pub(super) const BLOCK_BYTES: usize = 22;

/// `1 << i`: testing bit i of `qh` with a fixed mask per element (not a
/// shift by a varying amount) keeps the loops vectorizable.
pub(super) const BIT: [u32; BLOCK] = {
    let mut b = [0; BLOCK];
    let mut i = 0;
    while i < BLOCK {
        b[i] = 1 << i;
        i += 1;
    }
    b
};

/// The 32 five-bit quants of a block whose `qh` and `qs` start at `blk[0]`.
#[inline]
pub(super) fn unpack5(blk: &[u8]) -> [u8; BLOCK] {
    let qh = u32::from_le_bytes([blk[0], blk[1], blk[2], blk[3]]);
    let mut q = [0u8; BLOCK];
    for (v, m) in q.iter_mut().zip(BIT) {
        *v = if qh & m != 0 { 16 } else { 0 };
    }
    let (lo, hi) = q.split_at_mut(BLOCK / 2);
    for ((b, l), h) in blk[4..4 + BLOCK / 2].iter().zip(lo).zip(hi) {
        *l |= b & 0xF;
        *h |= b >> 4;
    }
    q
}

/// Packs 32 five-bit quants as `qh` then `qs`.
pub(super) fn pack5(q: &[u8; BLOCK], out: &mut Vec<u8>) {
    let qh = q
        .iter()
        .enumerate()
        .fold(0u32, |h, (i, v)| h | (u32::from(v >> 4) << i));
    out.extend_from_slice(&qh.to_le_bytes());
    let (l, h) = q.split_at(BLOCK / 2);
    out.extend(l.iter().zip(h).map(|(l, h)| (l & 0xF) | (h << 4)));
}

fn value(q: u8) -> f32 {
    f32::from(i16::from(q) - 16)
}

pub(super) fn dequantize(row: &[u8], out: &mut [f32]) {
    for (blk, o) in row
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16_at(blk[0], blk[1]);
        for (q, v) in unpack5(&blk[2..]).iter().zip(o) {
            *v = value(*q) * d;
        }
    }
}

/// Quantizes one row (length a multiple of 32) as ggml's reference does:
/// d = max / −16 (`max` the value of largest magnitude),
/// q = min(31, trunc(x/d + 16.5)).
pub(super) fn quantize(x: &[f32], out: &mut Vec<u8>) {
    for b in x.chunks_exact(BLOCK) {
        let d = signed_absmax(b) / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        let mut q = [0u8; BLOCK];
        for (q, v) in q.iter_mut().zip(b) {
            *q = ((v * id + 16.5) as u8).min(31);
        }
        pack5(&q, out);
    }
}
