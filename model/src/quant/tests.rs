//! Kernel tests: hand-written blocks decode to hand-computed values;
//! matvec/matmul agree with dequantize-then-dot; thread count never
//! changes a bit.

use super::*;

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
    assert!(QTensor::new(TensorKind::Q8_0, 1, 16, vec![0; 17]).is_err());
    assert!(QTensor::new(TensorKind::F32, 2, 2, vec![0; 12]).is_err());
    assert!(QTensor::quantize(TensorKind::Q4_1, 1, 30, &[0.0; 30]).is_err());
}

/// Deterministic pseudo-random values in [-1, 1).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = attention::testdata::SplitMix64::new(seed);
    (0..n).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
}

fn reference(t: &QTensor, xs: &[f32], n: usize) -> Vec<f64> {
    let w = t.dequantize();
    let (rows, cols) = (t.rows(), t.cols());
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

fn close(got: &[f32], want: &[f64]) {
    let scale = want.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
    for (g, w) in got.iter().zip(want) {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-4 * scale.max(w.abs()),
            "{g} vs {w}"
        );
    }
}

const KINDS: [TensorKind; 4] = [
    TensorKind::F32,
    TensorKind::F16,
    TensorKind::Q4_1,
    TensorKind::Q8_0,
];

#[test]
fn matvec_and_matmul_match_dequantized_dot() {
    let (rows, cols, n) = (37, 96, 5);
    for (k, kind) in KINDS.into_iter().enumerate() {
        let t =
            QTensor::quantize(kind, rows, cols, &noise(rows * cols, k as u64)).expect("quantize");
        let xs = noise(n * cols, 100 + k as u64);
        let want = reference(&t, &xs, n);
        let mut out = vec![0f32; rows];
        t.matvec(&xs[..cols], &mut out);
        close(&out, &want[..rows]);
        let mut out = vec![0f32; n * rows];
        t.matmul(&xs, n, &mut out);
        close(&out, &want);
    }
}

#[test]
fn thread_count_does_not_change_bits() {
    let (rows, cols, n) = (67, 128, 7);
    for (k, kind) in KINDS.into_iter().enumerate() {
        let t = QTensor::quantize(kind, rows, cols, &noise(rows * cols, 7 + k as u64))
            .expect("quantize");
        let xs = noise(n * cols, 9);
        let mut one = vec![0f32; rows];
        t.matvec_threads(&xs[..cols], &mut one, 1);
        let mut one_mm = vec![0f32; n * rows];
        t.matmul_threads(&xs, n, &mut one_mm, 1);
        for threads in [2, 3, 8] {
            let mut many = vec![0f32; rows];
            t.matvec_threads(&xs[..cols], &mut many, threads);
            assert_eq!(one, many, "{kind} matvec on {threads} threads");
            let mut many_mm = vec![0f32; n * rows];
            t.matmul_threads(&xs, n, &mut many_mm, threads);
            assert_eq!(one_mm, many_mm, "{kind} matmul on {threads} threads");
        }
    }
}

#[test]
fn quantize_round_trips_within_a_step() {
    let v = noise(64, 3);
    for kind in KINDS {
        let t = QTensor::quantize(kind, 2, 32, &v).expect("quantize");
        let step = match kind {
            TensorKind::F32 => 0.0,
            TensorKind::F16 => 1e-3,
            TensorKind::Q4_1 => 2.0 / 15.0,
            TensorKind::Q8_0 => 1.0 / 127.0,
        };
        for (a, b) in t.dequantize().iter().zip(&v) {
            assert!((a - b).abs() <= step * 0.51 + 1e-3, "{kind}: {a} vs {b}");
        }
    }
}
