//! The input vector of a matvec, quantized once for every row's integer
//! dot product, as ggml quantizes it: blocks of 32 as Q8_0/Q8_1 (for the
//! formats with 32-element blocks) or super-blocks of 256 as Q8_K (for the
//! K-quants). The float formats take the input as it is.

use super::kquant::QK_K;
use crate::TensorKind;

/// Blocks of 32: i8 quants, the f16-rounded scale, Σq, and the f16-rounded
/// d·Σq the formats with a minimum use (ggml's `block_q8_1.s`).
#[derive(Clone, Debug, Default)]
pub(super) struct Q8Blocks {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub sum: Vec<i32>,
    pub s: Vec<f32>,
}

/// Super-blocks of 256: i8 quants, the f32 scale, Σq per 16 (ggml's
/// `block_q8_K`).
#[derive(Clone, Debug, Default)]
pub(super) struct Q8K {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub bsums: Vec<i16>,
}

/// An input prepared for one tensor kind.
#[derive(Clone, Debug)]
pub(super) enum Input {
    /// F32/F16/BF16 rows take the f32 input.
    Float,
    Blocks(Q8Blocks),
    K(Q8K),
}

impl Input {
    /// `x` (length a whole number of `kind`'s blocks) prepared for `kind`.
    pub(super) fn new(kind: TensorKind, x: &[f32]) -> Input {
        match kind {
            TensorKind::F32 | TensorKind::F16 | TensorKind::BF16 => Input::Float,
            TensorKind::Q4_0
            | TensorKind::Q4_1
            | TensorKind::Q5_0
            | TensorKind::Q5_1
            | TensorKind::Q8_0 => Input::Blocks(q8_blocks(x)),
            TensorKind::Q2_K
            | TensorKind::Q3_K
            | TensorKind::Q4_K
            | TensorKind::Q5_K
            | TensorKind::Q6_K => Input::K(q8_k(x)),
        }
    }
}

fn f16_round(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

/// ggml's `quantize_row_q8_1`: d = max|x|/127, q = round(x/d) (half away
/// from zero), d and d·Σq stored as f16.
fn q8_blocks(x: &[f32]) -> Q8Blocks {
    let n = x.len() / 32;
    let mut out = Q8Blocks {
        q: Vec::with_capacity(n * 32),
        d: Vec::with_capacity(n),
        sum: Vec::with_capacity(n),
        s: Vec::with_capacity(n),
    };
    for b in x.chunks_exact(32) {
        let amax = b.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let start = out.q.len();
        out.q.extend(b.iter().map(|v| (v * id).round() as i8));
        let sum: i32 = out.q[start..].iter().map(|q| i32::from(*q)).sum();
        out.d.push(f16_round(d));
        out.sum.push(sum);
        out.s.push(f16_round(sum as f32 * d));
    }
    out
}

/// ggml's `quantize_row_q8_K`: the element of largest magnitude maps to
/// −127 (iscale = −127/max), q = nearest (ties to even), at most 127,
/// d = 1/iscale in f32, Σq per 16.
fn q8_k(x: &[f32]) -> Q8K {
    let n = x.len() / QK_K;
    let mut out = Q8K {
        q: Vec::with_capacity(n * QK_K),
        d: Vec::with_capacity(n),
        bsums: Vec::with_capacity(n * 16),
    };
    for b in x.chunks_exact(QK_K) {
        let (mut amax, mut max) = (0f32, 0f32);
        for v in b {
            if v.abs() > amax {
                amax = v.abs();
                max = *v;
            }
        }
        let start = out.q.len();
        if amax == 0.0 {
            out.d.push(0.0);
            out.q.extend(std::iter::repeat_n(0i8, QK_K));
        } else {
            let iscale = -127.0 / max;
            out.q.extend(
                b.iter()
                    .map(|v| (iscale * v).round_ties_even().min(127.0) as i8),
            );
            out.d.push(1.0 / iscale);
        }
        out.bsums.extend(
            out.q[start..]
                .chunks_exact(16)
                .map(|g| g.iter().map(|q| i16::from(*q)).sum::<i16>()),
        );
    }
    out
}

impl Input {
    /// The values the integer kernels take `x` to be: q·d per element
    /// (`x` itself for the float kinds). A test's reference input.
    #[cfg(test)]
    pub(super) fn effective(&self, x: &[f32]) -> Vec<f32> {
        match self {
            Input::Float => x.to_vec(),
            Input::Blocks(b) => {
                b.q.iter()
                    .enumerate()
                    .map(|(i, q)| f32::from(*q) * b.d[i / 32])
                    .collect()
            }
            Input::K(k) => {
                k.q.iter()
                    .enumerate()
                    .map(|(i, q)| f32::from(*q) * k.d[i / QK_K])
                    .collect()
            }
        }
    }
}
