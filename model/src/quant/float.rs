//! Row kernels for the unquantized kinds F32, F16 and BF16, plus the dense
//! f32 dot product every kernel ends in and the per-group sums of `x` that
//! the formats with a minimum reuse across rows.

/// Lanes of the f32 accumulators: wide enough for the compiler to keep
/// several vector registers busy, fixed so results do not depend on it.
pub(super) const LANES: usize = 16;

/// `Σ a·b` in `LANES` independent accumulators, summed in a fixed order.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let ca = a.chunks_exact(LANES);
    let cb = b.chunks_exact(LANES);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (xa, xb) in ca.zip(cb) {
        for ((s, x), y) in acc.iter_mut().zip(xa).zip(xb) {
            *s += x * y;
        }
    }
    acc.iter().sum::<f32>() + tail
}

pub(super) fn f16_at(b0: u8, b1: u8) -> f32 {
    half::f16::from_le_bytes([b0, b1]).to_f32()
}

pub(super) fn dequantize_f32(row: &[u8], out: &mut [f32]) {
    for (b, o) in row.chunks_exact(4).zip(out) {
        *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}

pub(super) fn dequantize_f16(row: &[u8], out: &mut [f32]) {
    for (b, o) in row.chunks_exact(2).zip(out) {
        *o = f16_at(b[0], b[1]);
    }
}

/// BF16 is the high half of an f32, so decoding is exact (NaNs included).
pub(super) fn dequantize_bf16(row: &[u8], out: &mut [f32]) {
    for (b, o) in row.chunks_exact(2).zip(out) {
        *o = f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16);
    }
}

/// Sums of `x` over consecutive groups of `n` (a trailing partial group is
/// dropped: rows are whole blocks).
pub(super) fn group_sums(x: &[f32], n: usize) -> Vec<f32> {
    x.chunks_exact(n).map(|g| g.iter().sum()).collect()
}

/// Dot product of an encoded F32/F16/BF16 row with `x`, decoding `LANES`
/// elements at a time into a stack buffer with `decode`.
pub(super) fn dot_encoded(
    row: &[u8],
    x: &[f32],
    elem_bytes: usize,
    decode: fn(&[u8], &mut [f32]),
) -> f32 {
    let mut buf = [0f32; LANES];
    let mut acc = [0f32; LANES];
    let mut tail = 0f32;
    for (chunk, xs) in row.chunks(LANES * elem_bytes).zip(x.chunks(LANES)) {
        decode(chunk, &mut buf);
        if xs.len() == LANES {
            for ((s, w), v) in acc.iter_mut().zip(&buf).zip(xs) {
                *s += w * v;
            }
        } else {
            tail += buf.iter().zip(xs).map(|(w, v)| w * v).sum::<f32>();
        }
    }
    acc.iter().sum::<f32>() + tail
}
