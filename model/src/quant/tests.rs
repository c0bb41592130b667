//! Kernel tests: hand-written blocks decode to hand-computed values;
//! matvec/matmul agree with dequantize-then-dot; thread count never
//! changes a bit. Submodules: the newer formats by hand, random encoded
//! rows of every kind, and decoding compared with gguf-py bit for bit.

use super::*;

mod by_hand;
mod gguf_py;
mod isa;
mod random_rows;

fn f16(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_le_bytes()
}

#[test]
fn q4_1_block_by_hand() {
    // d = 0.5, m = -1; qs[j] = j | (15 - j) << 4.
    let mut blk = Vec::new();
    blk.extend_from_slice(&f16(0.5));
    blk.extend_from_slice(&f16(-1.0));
    blk.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let t = QTensor::new(TensorKind::Q4_1, 1, 32, blk).expect("tensor");
    let got = t.dequantize();
    for j in 0..16 {
        assert_eq!(got[j], j as f32 * 0.5 - 1.0);
        assert_eq!(got[j + 16], (15 - j) as f32 * 0.5 - 1.0);
    }
    assert_eq!((got[0], got[15], got[16], got[31]), (-1.0, 6.5, 6.5, -1.0));
}

#[test]
fn q8_0_block_by_hand() {
    let mut blk = Vec::new();
    blk.extend_from_slice(&f16(0.25));
    blk.extend((0..32i8).map(|j| (j - 16) as u8));
    let t = QTensor::new(TensorKind::Q8_0, 1, 32, blk).expect("tensor");
    let got = t.dequantize();
    for (j, v) in got.iter().enumerate() {
        assert_eq!(*v, (j as f32 - 16.0) * 0.25);
    }
    assert_eq!((got[0], got[31]), (-4.0, 3.75));
}

#[test]
fn float_rows_by_hand() {
    let f32s: Vec<u8> = [1.5f32, -2.0, 0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let t = QTensor::new(TensorKind::F32, 1, 3, f32s).expect("f32");
    assert_eq!(t.dequantize(), [1.5, -2.0, 0.0]);
    let f16s: Vec<u8> = [0.5f32, -3.0].iter().flat_map(|v| f16(*v)).collect();
    let t = QTensor::new(TensorKind::F16, 1, 2, f16s).expect("f16");
    assert_eq!(t.dequantize(), [0.5, -3.0]);
}

#[test]
fn wrong_sizes_are_errors() {
    assert!(QTensor::new(TensorKind::Q4_1, 1, 32, vec![0; 19]).is_err());
    assert!(QTensor::new(TensorKind::Q4_K, 1, 128, vec![0; 72]).is_err());
    assert!(QTensor::new(TensorKind::Q6_K, 2, 256, vec![0; 210]).is_err());
    assert!(QTensor::new(TensorKind::Q8_0, 1, 16, vec![0; 17]).is_err());
    assert!(QTensor::new(TensorKind::F32, 2, 2, vec![0; 12]).is_err());
    assert!(QTensor::quantize(TensorKind::Q4_1, 1, 30, &[0.0; 30]).is_err());
}

/// Deterministic pseudo-random values in [-1, 1).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = attention::testdata::SplitMix64::new(seed);
    (0..n).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
}

/// Dequantized weights times the inputs as the kernels quantize them, in f64.
fn reference(t: &QTensor, xs: &[f32], n: usize) -> Vec<f64> {
    let w = t.dequantize();
    let (rows, cols) = (t.rows(), t.cols());
    let xs: Vec<f32> = xs
        .chunks_exact(cols)
        .flat_map(|x| t.prepare(x).effective(x))
        .collect();
    let mut out = vec![0f64; n * rows];
    for i in 0..n {
        for r in 0..rows {
            out[i * rows + r] = (0..cols)
                .map(|c| f64::from(w[r * cols + c]) * f64::from(xs[i * cols + c]))
                .sum();
        }
    }
    out
}

/// Within 1e-3 of the largest value: the formats with a minimum take
/// d·Σq of each input block rounded to f16 (ggml's Q8_1), ~5e-4 relative.
fn close(got: &[f32], want: &[f64]) {
    let scale = want.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
    for (g, w) in got.iter().zip(want) {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-3 * scale.max(w.abs()),
            "{g} vs {w}"
        );
    }
}

/// The kinds `QTensor::quantize` can encode.
const KINDS: [TensorKind; 8] = [
    TensorKind::F32,
    TensorKind::F16,
    TensorKind::BF16,
    TensorKind::Q4_0,
    TensorKind::Q4_1,
    TensorKind::Q5_0,
    TensorKind::Q5_1,
    TensorKind::Q8_0,
];

#[test]
fn matvec_and_matmul_match_dequantized_dot() {
    let (rows, cols, n) = (37, 96, 5);
    for (k, kind) in KINDS.into_iter().enumerate() {
        let t =
            QTensor::quantize(kind, rows, cols, &noise(rows * cols, k as u64)).expect("quantize");
        kernels_match_dequantized(&t, &noise(n * cols, 100 + k as u64), n);
    }
}

/// matvec (on the first of the `n` inputs in `xs`) and matmul agree with
/// dequantize-then-dot.
fn kernels_match_dequantized(t: &QTensor, xs: &[f32], n: usize) {
    let (rows, cols) = (t.rows(), t.cols());
    let want = reference(t, xs, n);
    let mut out = vec![0f32; rows];
    t.matvec(&xs[..cols], &mut out);
    close(&out, &want[..rows]);
    let mut out = vec![0f32; n * rows];
    t.matmul(xs, n, &mut out);
    close(&out, &want);
}

#[test]
fn thread_count_does_not_change_bits() {
    let (rows, cols, n) = (67, 128, 7);
    for (k, kind) in KINDS.into_iter().enumerate() {
        let t = QTensor::quantize(kind, rows, cols, &noise(rows * cols, 7 + k as u64))
            .expect("quantize");
        threads_agree(&t, &noise(n * cols, 9), n);
    }
}

/// matvec and matmul give the same bits on 1, 2, 3 and 8 threads.
fn threads_agree(t: &QTensor, xs: &[f32], n: usize) {
    let (rows, cols, kind) = (t.rows(), t.cols(), t.kind());
    let mut one = vec![0f32; rows];
    t.matvec_threads(&xs[..cols], &mut one, 1);
    let mut one_mm = vec![0f32; n * rows];
    t.matmul_threads(xs, n, &mut one_mm, 1);
    for threads in [2, 3, 8] {
        let mut many = vec![0f32; rows];
        t.matvec_threads(&xs[..cols], &mut many, threads);
        assert_eq!(one, many, "{kind} matvec on {threads} threads");
        let mut many_mm = vec![0f32; n * rows];
        t.matmul_threads(xs, n, &mut many_mm, threads);
        assert_eq!(one_mm, many_mm, "{kind} matmul on {threads} threads");
    }
}

#[test]
fn quantize_round_trips_within_a_step() {
    let v = noise(64, 3);
    for kind in KINDS {
        let t = QTensor::quantize(kind, 2, 32, &v).expect("quantize");
        // The symmetric formats may clamp the end opposite `max` by a
        // whole step, hence twice the step there.
        let step = match kind {
            TensorKind::F32 => 0.0,
            TensorKind::F16 => 1e-3,
            TensorKind::BF16 => 1.0 / 256.0,
            TensorKind::Q4_0 => 2.0 / 8.0,
            TensorKind::Q4_1 => 2.0 / 15.0,
            TensorKind::Q5_0 => 2.0 / 16.0,
            TensorKind::Q5_1 => 2.0 / 31.0,
            TensorKind::Q8_0 => 1.0 / 127.0,
            _ => unreachable!("{kind} has no quantizer"),
        };
        for (a, b) in t.dequantize().iter().zip(&v) {
            assert!((a - b).abs() <= step * 0.51 + 1e-3, "{kind}: {a} vs {b}");
        }
    }
}

#[test]
fn kinds_agree_with_ggml_numbering() {
    // (type, block elements, block bytes) from gguf-py's GGML_QUANT_SIZES.
    let want = [
        (0, 1, 4, "F32"),
        (1, 1, 2, "F16"),
        (2, 32, 18, "Q4_0"),
        (3, 32, 20, "Q4_1"),
        (6, 32, 22, "Q5_0"),
        (7, 32, 24, "Q5_1"),
        (8, 32, 34, "Q8_0"),
        (10, 256, 84, "Q2_K"),
        (11, 256, 110, "Q3_K"),
        (12, 256, 144, "Q4_K"),
        (13, 256, 176, "Q5_K"),
        (14, 256, 210, "Q6_K"),
        (30, 1, 2, "BF16"),
    ];
    assert_eq!(want.len(), TensorKind::ALL.len());
    for (kind, (ty, len, bytes, name)) in TensorKind::ALL.into_iter().zip(want) {
        assert_eq!(kind.ggml_type(), ty);
        assert_eq!(TensorKind::from_ggml(ty), Some(kind));
        assert_eq!(
            (kind.block_len(), kind.block_bytes()),
            (len, bytes),
            "{kind}"
        );
        assert_eq!(kind.to_string(), name);
    }
    for ty in [4, 5, 9, 15, 16, 23, 31, 1000] {
        assert_eq!(TensorKind::from_ggml(ty), None, "type {ty}");
    }
    assert_eq!(ggml_type_name(16), Some("IQ2_XXS"));
    assert_eq!(ggml_type_name(4), None);
}
