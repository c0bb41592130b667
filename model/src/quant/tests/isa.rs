//! Every instruction set this CPU has gives the scalar path's bits: matvec
//! and matmul of random encoded rows of every kind (scales drawn from any
//! finite f16, quants from random bytes, so every quant value and sign
//! occurs), and the f32 dot product at lengths around its lane width.

use super::noise;
use super::random_rows::{Floats, random_tensor};
use crate::TensorKind;
use crate::quant::Isa;
use crate::quant::simd;

#[test]
fn every_isa_matches_scalar_bits() {
    let isas = Isa::available();
    assert_eq!(isas.first(), Some(&Isa::Scalar));
    #[cfg(target_arch = "aarch64")]
    assert!(isas.contains(&Isa::Neon), "NEON is part of aarch64");
    // 7 inputs: the kernels take them four, two and one at a time.
    let (rows, n) = (19, 7);
    // Blocks of 32: 29 (the last group of 8 short), 20 and 18 (a last
    // group of 4 and 2: half a tile in lane order); K-quants: 4 and 9
    // super-blocks (groups of 8 short, and one over).
    let shapes = |kind: TensorKind| match kind.block_len() {
        32 => [928, 640, 576],
        _ => [1024, 2304, 2048],
    };
    for (k, (kind, cols)) in TensorKind::ALL
        .into_iter()
        .flat_map(|kind| shapes(kind).map(|c| (kind, c)))
        .enumerate()
    {
        for floats in [Floats::Unit, Floats::AnyFinite] {
            let t = random_tensor(kind, rows, cols, 900 + k as u64, floats);
            // Inputs with a wide range, so some blocks quantize to ±127.
            let xs: Vec<f32> = noise(n * cols, 40 + k as u64)
                .iter()
                .enumerate()
                .map(|(i, v)| v * (1 + i % 7) as f32)
                .collect();
            let mut want = vec![0f32; rows];
            t.matvec_with(&xs[..cols], &mut want, 1, Isa::Scalar);
            let mut want_mm = vec![0f32; n * rows];
            t.matmul_with(&xs, n, &mut want_mm, 1, Isa::Scalar);
            // matmul (K-quant rows unpacked once for all inputs) gives each
            // input matvec's bits.
            assert_eq!(
                want_mm[..rows]
                    .iter()
                    .map(|f| f.to_bits())
                    .collect::<Vec<_>>(),
                want.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
                "{kind} matmul vs matvec"
            );
            for isa in &isas[1..] {
                let mut got = vec![0f32; rows];
                t.matvec_with(&xs[..cols], &mut got, 2, *isa);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{kind} matvec on {isa:?}");
                let mut got_mm = vec![0f32; n * rows];
                t.matmul_with(&xs, n, &mut got_mm, 2, *isa);
                assert_eq!(bits(&got_mm), bits(&want_mm), "{kind} matmul on {isa:?}");
            }
        }
    }
}

#[test]
fn f32_dot_matches_scalar_bits_at_every_tail() {
    for len in [0, 1, 15, 16, 17, 31, 64, 100, 257] {
        let a = noise(len, 1 + len as u64);
        let b = noise(len, 2 + len as u64);
        let want = simd::dot_f32(Isa::Scalar, &a, &b);
        for isa in Isa::available() {
            assert_eq!(
                simd::dot_f32(isa, &a, &b).to_bits(),
                want.to_bits(),
                "len {len} on {isa:?}"
            );
        }
    }
}

#[test]
fn extreme_quants_do_not_saturate() {
    // Largest quants against ±127 inputs: a saturating pairwise add would
    // lose the sum. Q8_0 weights of −128 included.
    for (kind, fill) in [
        (TensorKind::Q4_0, 0xFFu8),
        (TensorKind::Q5_0, 0xFF),
        (TensorKind::Q8_0, 0x80),
        (TensorKind::Q8_0, 0x7F),
        (TensorKind::Q6_K, 0xFF),
    ] {
        let mut data = vec![fill; kind.block_bytes() * (256 / kind.block_len())];
        // Unit scales (f16 1.0 = 0x3C00) wherever a block keeps one.
        let scale_at: &[usize] = match kind {
            TensorKind::Q6_K => &[208],
            _ => &[0],
        };
        for b in 0..256 / kind.block_len() {
            for off in scale_at {
                let at = b * kind.block_bytes() + off;
                data[at..at + 2].copy_from_slice(&[0x00, 0x3C]);
            }
        }
        let t = crate::QTensor::new(kind, 1, 256, data).expect("tensor");
        let x: Vec<f32> = (0..256)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let w = t.dequantize();
        let want: f64 = w
            .iter()
            .zip(&x)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum();
        for isa in Isa::available() {
            let mut out = [0f32];
            t.matvec_with(&x, &mut out, 1, isa);
            assert!(
                (f64::from(out[0]) - want).abs() <= 1e-3 * want.abs().max(1.0),
                "{kind} fill {fill:#x} on {isa:?}: {} vs {want}",
                out[0]
            );
        }
    }
}

#[test]
fn many_row_dots_match_scalar_bits() {
    for d in [1, 16, 17, 64, 100, 256] {
        let q = noise(d, 3 + d as u64);
        let keys = noise(d * 9, 4 + d as u64);
        let mut want = vec![0f32; 9];
        simd::dots_f32(Isa::Scalar, &q, &keys, &mut want);
        for (j, w) in want.iter().enumerate() {
            let exact: f64 = q
                .iter()
                .zip(&keys[j * d..])
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
            assert!((f64::from(*w) - exact).abs() < 1e-4, "d {d} row {j}");
        }
        for isa in Isa::available() {
            let mut got = vec![0f32; 9];
            simd::dots_f32(isa, &q, &keys, &mut got);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "d {d} on {isa:?}");
        }
    }
}

#[test]
fn weighted_rows_match_row_by_row_adds() {
    for d in [1, 8, 12, 64, 72, 200] {
        let p = noise(13, 5 + d as u64);
        let rows = noise(13 * d, 6 + d as u64);
        let start = noise(d, 7 + d as u64);
        let mut want = start.clone();
        for (w, row) in p.iter().zip(rows.chunks_exact(d)) {
            for (o, v) in want.iter_mut().zip(row) {
                *o += w * v;
            }
        }
        for isa in Isa::available() {
            let mut got = start.clone();
            simd::weighted_rows(isa, &p, &rows, &mut got);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "d {d} on {isa:?}");
        }
    }
}

#[test]
fn a_group_of_matvecs_gives_each_matvecs_bits() {
    // Mixed kinds (an input prepared per kind), row counts that do not
    // split evenly, enough work for the pool on two or more cores.
    let cols = 512;
    let a = random_tensor(TensorKind::Q4_1, 137, cols, 1, Floats::Unit);
    let b = random_tensor(TensorKind::Q4_K, 64, cols, 2, Floats::Unit);
    let c = random_tensor(TensorKind::Q4_1, 45, cols, 3, Floats::Unit);
    let x = noise(cols, 4);
    let (mut oa, mut ob, mut oc) = (vec![0f32; 137], vec![0f32; 64], vec![0f32; 45]);
    crate::QTensor::matvec_group(&[&a, &b, &c], &x, &mut [&mut oa, &mut ob, &mut oc]);
    for (t, got) in [(&a, &oa), (&b, &ob), (&c, &oc)] {
        let mut want = vec![0f32; t.rows()];
        t.matvec_with(&x, &mut want, 1, Isa::active());
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(got), bits(&want), "{}", t.kind());
    }
}

#[test]
fn a_group_of_matmuls_gives_each_matmuls_bits() {
    // Kinds of one input family (Q5_0 and Q8_0 share their prepared
    // inputs) beside a K-quant, row counts that split unevenly and past a
    // tile of rows, inputs past one chunk of the pool's parts.
    let (cols, n) = (512, 9);
    let a = random_tensor(TensorKind::Q5_0, 137, cols, 11, Floats::Unit);
    let b = random_tensor(TensorKind::Q4_K, 64, cols, 12, Floats::Unit);
    let c = random_tensor(TensorKind::Q8_0, 45, cols, 13, Floats::Unit);
    let xs = noise(n * cols, 14);
    let (mut oa, mut ob, mut oc) = (vec![0f32; n * 137], vec![0f32; n * 64], vec![0f32; n * 45]);
    crate::QTensor::matmul_group(&[&a, &b, &c], &xs, n, &mut [&mut oa, &mut ob, &mut oc]);
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    for (t, got) in [(&a, &oa), (&b, &ob), (&c, &oc)] {
        // Each output is row · input, whatever the grouping and parts:
        // the same bits as the matvec of that input alone.
        let mut want = vec![0f32; n * t.rows()];
        for (x, w) in xs.chunks_exact(cols).zip(want.chunks_exact_mut(t.rows())) {
            t.matvec_with(x, w, 1, Isa::active());
        }
        assert_eq!(bits(got), bits(&want), "{}", t.kind());
    }
}

/// An activation for the gated test: anything that mixes both inputs.
fn mix(g: &mut [f32], u: &[f32]) {
    for (g, u) in g.iter_mut().zip(u) {
        *g = *g * 0.5 + *u * *u;
    }
}

#[test]
fn a_gated_matmul_gives_the_two_matmuls_then_the_activation() {
    // One input family (the parts take both matrices' rows), and two
    // families (the products one after the other); rows past a chunk.
    let (cols, n, rows) = (256, 7, 300);
    for (gk, uk) in [
        (TensorKind::Q5_0, TensorKind::Q8_0),
        (TensorKind::Q4_K, TensorKind::Q5_0),
    ] {
        let gate = random_tensor(gk, rows, cols, 21, Floats::Unit);
        let up = random_tensor(uk, rows, cols, 22, Floats::Unit);
        let xs = noise(n * cols, 23);
        let mut got = vec![0f32; n * rows];
        crate::QTensor::matmul_gated(&gate, &up, &xs, n, &mut got, mix);
        let (mut want, mut u) = (vec![0f32; n * rows], vec![0f32; n * rows]);
        gate.matmul_with(&xs, n, &mut want, 1, Isa::active());
        up.matmul_with(&xs, n, &mut u, 1, Isa::active());
        mix(&mut want, &u);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{gk} gated by {uk}");
    }
}

#[test]
fn q8_quantization_matches_scalar() {
    use crate::quant::act::Q8Blocks;
    // Blocks of noise, a block of zeros, and exact ties (±0.5 steps).
    let mut x = noise(32 * 40, 31);
    x.extend([0f32; 32]);
    x.extend((0..32).map(|i| (i as f32 - 15.5) * 127.0 / 15.5));
    let n = x.len() / 32;
    let fill = |isa| {
        let mut out = Q8Blocks {
            q: vec![0; 32 * n],
            d: vec![0.0; n],
            sum: vec![0; n],
            s: vec![0.0; n],
            lanes: Vec::new(),
        };
        simd::q8_fill(isa, &x, &mut out);
        out
    };
    let want = fill(Isa::Scalar);
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    for isa in Isa::available() {
        let got = fill(isa);
        assert_eq!(got.q, want.q, "{isa:?}");
        assert_eq!(bits(&got.d), bits(&want.d), "{isa:?}");
        assert_eq!(got.sum, want.sum, "{isa:?}");
        assert_eq!(bits(&got.s), bits(&want.s), "{isa:?}");
    }
}

#[test]
fn k_quant_unpacking_matches_scalar() {
    use crate::quant::simd::{k_nibbles, k_nibbles_scalar, q6k_quants, q6k_quants_scalar};
    for seed in 0..64u64 {
        let bytes: Vec<u8> = noise(192, 7000 + seed)
            .iter()
            .map(|v| (v.to_bits() >> 7) as u8)
            .collect();
        let (ql, qh): (&[u8; 128], &[u8; 64]) = (
            bytes[..128].try_into().unwrap(),
            bytes[128..].try_into().unwrap(),
        );
        let (mut got, mut want) = ([0u8; 256], [0u8; 256]);
        k_nibbles(ql, &mut got);
        k_nibbles_scalar(ql, &mut want);
        assert_eq!(got, want, "nibbles, seed {seed}");
        q6k_quants(ql, qh, &mut got);
        q6k_quants_scalar(ql, qh, &mut want);
        assert_eq!(got, want, "Q6_K quants, seed {seed}");
        assert!(got.iter().all(|q| *q < 64));
    }
}
