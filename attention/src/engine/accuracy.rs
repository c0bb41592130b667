//! Error-bound tests: the integer engine against the f64 reference on the
//! same fp16 inputs (see "Accuracy" in the module docs of `engine`). Two
//! bounds are asserted per output element: a worst-case bound from first
//! principles, and the practical bound device tests should use.

use alloc::vec::Vec;

use super::{
    ALPHA_EPS, DENSE_EPS, P_ONE, ROUNDING, SPARF_EPS, dense_group, f32_to_f16_bits, fx_to_f32,
    sparf_group,
};
use crate::math::{exp, sqrt};
use crate::reference::{dense, sparf_traced};
use crate::shape::{GroupShape, SparseParams};
use crate::testdata::{structured_kv, structured_query};

const Q16: f64 = 1.0 / 65536.0;
const Q15: f64 = 1.0 / 32768.0;

const DIMS: [usize; 2] = [64, 128];
const LENGTHS: [usize; 6] = [1, 15, 16, 17, 1000, 4096];
const GROUPS: [usize; 2] = [1, 3];

/// One test case: structured data of one KV group, fp16-exact.
struct Case {
    d: usize,
    g: usize,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
}

impl Case {
    fn new(d: usize, s: usize, g: usize) -> Self {
        let seed = ((d as u64) << 32) | ((s as u64) << 4) | g as u64;
        let (k, v) = structured_kv(seed, 1, s, d);
        let q = structured_query(seed, g, d, 1);
        Self { d, g, q, k, v }
    }

    fn bits(x: &[f32]) -> Vec<u16> {
        x.iter().map(|&f| f32_to_f16_bits(f)).collect()
    }

    fn shape(&self) -> GroupShape {
        GroupShape {
            group: self.g,
            head_dim: self.d,
        }
    }

    fn q_h(&self, h: usize) -> &[f32] {
        &self.q[h * self.d..(h + 1) * self.d]
    }

    fn max_abs_v(&self) -> f64 {
        self.v
            .iter()
            .map(|x| f64::from(x.abs()))
            .fold(0.0, f64::max)
    }

    /// Worst-case logit error of head `h` over `dims` with real scale `c`
    /// and Q16 scale `c_q16`: the floor of the Q16 scale (relative error
    /// (c − c_q16/2^16)/c), the Q16 floor of the logit, and fp16 → Q14
    /// rounding of q and k (≤ 2^−15 per element).
    fn logit_err(&self, h: usize, dims: &[usize], c: f64, c_q16: u32) -> (f64, f64) {
        let q_h = self.q_h(h);
        let mut max_logit = 0.0f64;
        let mut max_l1_k = 0.0f64;
        for kj in self.k.chunks_exact(self.d) {
            let dot: f64 = dims
                .iter()
                .map(|&i| f64::from(q_h[i]) * f64::from(kj[i]))
                .sum();
            max_logit = max_logit.max((dot * c).abs());
            max_l1_k = max_l1_k.max(dims.iter().map(|&i| f64::from(kj[i].abs())).sum());
        }
        let l1_q: f64 = dims.iter().map(|&i| f64::from(q_h[i].abs())).sum();
        let scale_rel = if c > 0.0 {
            (c - f64::from(c_q16) * Q16) / c
        } else {
            0.0
        };
        let rounding = Q15 * (l1_q + max_l1_k) + dims.len() as f64 * Q15 * Q15;
        let err = scale_rel.abs() * max_logit + Q16 + rounding * c;
        (err, max_logit)
    }
}

/// Bound on Σ_j |δp_j| of a softmax over `n` logits each off by at most
/// `logit_err`, with weights off by a relative 1.4e−5 + 4.9e−6·|t| (|t| ≤
/// 2·max|logit|, see softmax tests) and Q30 rounding: e^(2·(ε + η)) − 1 +
/// n·2^−29.
fn softmax_l1(logit_err: f64, max_logit: f64, n: usize) -> f64 {
    let weight_err = 1.4e-5 + 4.9e-6 * 2.0 * max_logit;
    exp(2.0 * (logit_err + weight_err)) - 1.0 + n as f64 / f64::from(1u32 << 29)
}

#[test]
fn engine_dense_within_bound_of_reference() {
    let mut worst_practical = 0.0f64;
    for d in DIMS {
        let all: Vec<usize> = (0..d).collect();
        let c = 1.0 / sqrt(d as f64);
        for s in LENGTHS {
            for g in GROUPS {
                let case = Case::new(d, s, g);
                let (q, k, v) = (
                    Case::bits(&case.q),
                    Case::bits(&case.k),
                    Case::bits(&case.v),
                );
                let engine = dense_group(&q, &k, &v, case.shape()).unwrap();
                let reference = dense(&case.q, &case.k, &case.v, case.shape()).unwrap();
                let vmax = case.max_abs_v();
                let practical = DENSE_EPS * vmax + ROUNDING;
                for h in 0..g {
                    let (e, l) = case.logit_err(h, &all, c, super::dense_scale(d));
                    let worst_case = vmax * softmax_l1(e, l, s) + ROUNDING;
                    for i in h * d..(h + 1) * d {
                        let err = f64::from((fx_to_f32(engine[i]) - reference[i]).abs());
                        assert!(
                            err <= worst_case,
                            "d={d} s={s} g={g} i={i}: {err} > {worst_case}"
                        );
                        assert!(
                            err <= practical,
                            "d={d} s={s} g={g} i={i}: {err} > {practical}"
                        );
                        worst_practical = worst_practical.max(err / practical);
                    }
                }
            }
        }
    }
    // Not vacuous: the practical bound is within a small factor of reality.
    assert!(worst_practical > 0.1, "worst err/bound {worst_practical}");
}

/// SparF parameters per case: r = d/4, 4 local tokens; long sequences put
/// the top-k boundary among the heavy tokens (≈ S/32 of them, with well
/// separated scores); short ones keep about half the tokens.
fn sparse_params(d: usize, s: usize) -> SparseParams {
    let local = s.min(4);
    let k = if s >= 1000 { local + s / 64 } else { s / 2 + 1 };
    SparseParams { r: d / 4, k, local }
}

#[test]
fn engine_sparf_within_bound_of_reference() {
    let mut worst_practical = 0.0f64;
    for d in DIMS {
        for s in LENGTHS {
            for g in GROUPS {
                let case = Case::new(d, s, g);
                let p = sparse_params(d, s);
                let (q, k, v) = (
                    Case::bits(&case.q),
                    Case::bits(&case.k),
                    Case::bits(&case.v),
                );
                let engine = sparf_group(&q, &k, &v, case.shape(), p).unwrap();
                let reference = sparf_traced(&case.q, &case.k, &case.v, case.shape(), p).unwrap();
                // Same choices first: only then are the outputs comparable.
                assert_eq!(engine.dims, reference.dims, "d={d} s={s} g={g}");
                assert_eq!(engine.tokens, reference.tokens, "d={d} s={s} g={g}");

                let vmax = case.max_abs_v();
                let practical = SPARF_EPS * vmax + ROUNDING;
                let dims: Vec<usize> = engine.dims.iter().map(|&i| usize::from(i)).collect();
                let all: Vec<usize> = (0..d).collect();
                for h in 0..g {
                    let q_h = case.q_h(h);
                    let l1 =
                        |ix: &[usize]| ix.iter().map(|&i| f64::from(q_h[i].abs())).sum::<f64>();
                    let c_hat = (1.0 / sqrt(d as f64 * l1(&dims) / l1(&all))).min(16.0);
                    let qf: Vec<i32> = q[h * d..(h + 1) * d]
                        .iter()
                        .map(|&b| super::fx(b))
                        .collect();
                    let (e_hat, l_hat) =
                        case.logit_err(h, &dims, c_hat, super::approx_scale(&qf, &engine.dims));
                    let (e, l) =
                        case.logit_err(h, &all, 1.0 / sqrt(d as f64), super::dense_scale(d));
                    // α error ≤ Σ|δŝ|; it moves the output by at most
                    // δα · |o − v̄| ≤ δα · 2·max|V|.
                    let alpha_err = softmax_l1(e_hat, l_hat, s);
                    let worst_case =
                        2.0 * vmax * alpha_err + vmax * softmax_l1(e, l, p.k) + 2.0 * ROUNDING;
                    let a = f64::from(engine.alphas[h]) / f64::from(P_ONE);
                    let da = (a - reference.alphas[h]).abs();
                    assert!(
                        da <= alpha_err && da <= ALPHA_EPS,
                        "d={d} s={s} g={g}: δα={da}"
                    );
                    for i in h * d..(h + 1) * d {
                        let err = f64::from((fx_to_f32(engine.out[i]) - reference.out[i]).abs());
                        assert!(
                            err <= worst_case,
                            "d={d} s={s} g={g} i={i}: {err} > {worst_case}"
                        );
                        assert!(
                            err <= practical,
                            "d={d} s={s} g={g} i={i}: {err} > {practical}"
                        );
                        worst_practical = worst_practical.max(err / practical);
                    }
                }
            }
        }
    }
    assert!(worst_practical > 0.1, "worst err/bound {worst_practical}");
}
