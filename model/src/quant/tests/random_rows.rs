//! Every kind on random encoded rows (random bytes, float fields rewritten
//! finite): the dot product on the encoded row (matvec) and matmul agree
//! with dequantize-then-dot, and the thread count never changes a bit.

use attention::testdata::SplitMix64;

use super::{kernels_match_dequantized, noise, threads_agree};
use crate::{QTensor, TensorKind};

/// How the float fields (scales, minima, F16/BF16/F32 elements) are drawn.
#[derive(Clone, Copy)]
pub(super) enum Floats {
    /// Uniform in [−1, 1): sums stay well conditioned.
    Unit,
    /// Any finite bit pattern: subnormals, negative zero, the largest
    /// finite values.
    AnyFinite,
}

/// Byte offsets of the f16 fields of one block (all of it for F16/BF16/F32).
fn float_fields(kind: TensorKind) -> &'static [usize] {
    match kind {
        TensorKind::F32 | TensorKind::F16 | TensorKind::BF16 => &[0],
        TensorKind::Q4_0 | TensorKind::Q5_0 | TensorKind::Q8_0 => &[0],
        TensorKind::Q4_1 | TensorKind::Q5_1 | TensorKind::Q4_K | TensorKind::Q5_K => &[0, 2],
        TensorKind::Q2_K => &[80, 82],
        TensorKind::Q3_K => &[108],
        TensorKind::Q6_K => &[208],
    }
}

/// A float field's little-endian bytes.
fn float_bytes(kind: TensorKind, floats: Floats, rng: &mut SplitMix64) -> Vec<u8> {
    let unit = rng.next_f32() * 2.0 - 1.0;
    let bits = rng.next_u64();
    match (kind, floats) {
        (TensorKind::F32, Floats::Unit) => unit.to_le_bytes().to_vec(),
        (TensorKind::BF16, Floats::Unit) => half::bf16::from_f32(unit).to_le_bytes().to_vec(),
        (_, Floats::Unit) => half::f16::from_f32(unit).to_le_bytes().to_vec(),
        // An all-ones exponent (inf/NaN) loses its lowest exponent bit.
        (TensorKind::F32, Floats::AnyFinite) => {
            let mut b = bits as u32;
            if b & 0x7F80_0000 == 0x7F80_0000 {
                b &= !0x0080_0000;
            }
            b.to_le_bytes().to_vec()
        }
        (TensorKind::BF16, Floats::AnyFinite) => {
            let mut b = bits as u16;
            if b & 0x7F80 == 0x7F80 {
                b &= !0x0080;
            }
            b.to_le_bytes().to_vec()
        }
        (_, Floats::AnyFinite) => {
            let mut b = bits as u16;
            if b & 0x7C00 == 0x7C00 {
                b &= !0x0400;
            }
            b.to_le_bytes().to_vec()
        }
    }
}

/// `rows × cols` of `kind` from random bytes, float fields per `floats`.
pub(super) fn random_tensor(
    kind: TensorKind,
    rows: usize,
    cols: usize,
    seed: u64,
    floats: Floats,
) -> QTensor {
    let mut rng = SplitMix64::new(seed);
    let blocks = rows * cols / kind.block_len();
    let mut data = Vec::with_capacity(blocks * kind.block_bytes());
    for _ in 0..blocks {
        let start = data.len();
        data.extend((0..kind.block_bytes()).map(|_| rng.next_u64() as u8));
        for off in float_fields(kind) {
            let f = float_bytes(kind, floats, &mut rng);
            data[start + off..start + off + f.len()].copy_from_slice(&f);
        }
    }
    QTensor::new(kind, rows, cols, data).expect("random tensor")
}

#[test]
fn random_rows_dot_matches_dequantized_dot() {
    let (rows, cols, n) = (37, 512, 5);
    for (k, kind) in TensorKind::ALL.into_iter().enumerate() {
        let t = random_tensor(kind, rows, cols, 500 + k as u64, Floats::Unit);
        kernels_match_dequantized(&t, &noise(n * cols, 600 + k as u64), n);
    }
}

#[test]
fn random_rows_thread_count_does_not_change_bits() {
    let (rows, cols, n) = (67, 512, 7);
    for (k, kind) in TensorKind::ALL.into_iter().enumerate() {
        let t = random_tensor(kind, rows, cols, 700 + k as u64, Floats::Unit);
        threads_agree(&t, &noise(n * cols, 9), n);
    }
}
