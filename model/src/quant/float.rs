//! Decoding the unquantized kinds F32, F16 and BF16, and f16 fields.

/// The f16 in two little-endian bytes, exactly (NaNs made quiet, as F16C
/// and `half` do). Written out because `half` picks F16C at run time on
/// every call, which keeps it out of the kernels' inner loops: a finite
/// f16's bits moved into f32 position are its value times 2^-112.
#[inline]
pub(super) fn f16_at(b0: u8, b1: u8) -> f32 {
    const TWO_POW_112: f32 = f32::from_bits((127 + 112) << 23);
    let h = u32::from(u16::from_le_bytes([b0, b1]));
    let mag = h & 0x7FFF;
    let bits = if mag >= 0x7C00 {
        let quiet = if mag > 0x7C00 { 0x0040_0000 } else { 0 };
        0x7F80_0000 | ((mag & 0x3FF) << 13) | quiet
    } else {
        (f32::from_bits(mag << 13) * TWO_POW_112).to_bits()
    };
    f32::from_bits(((h & 0x8000) << 16) | bits)
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

/// Rounds every element to the nearest fp16 value (kept as f32), a slice
/// at a time (`half` converts with F16C where the CPU has it): the block
/// scales of the Q8 inputs, and q, k and v before any attention (the KV
/// cache's precision, the drive's and llama.cpp's by default, so that
/// prompt and decode positions attend over the same values).
pub(crate) fn round_f16(xs: &mut [f32]) {
    use half::slice::HalfFloatSliceExt;
    let mut buf = [half::f16::ZERO; 256];
    for chunk in xs.chunks_mut(buf.len()) {
        let b = &mut buf[..chunk.len()];
        b.convert_from_f32_slice(chunk);
        b.convert_to_f32_slice(chunk);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn f16_at_matches_half_on_every_value() {
        for h in 0..=u16::MAX {
            let [b0, b1] = h.to_le_bytes();
            let want = half::f16::from_bits(h).to_f32();
            assert_eq!(super::f16_at(b0, b1).to_bits(), want.to_bits(), "{h:#06x}");
        }
    }
}
