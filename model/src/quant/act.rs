//! The input vector of a matvec, quantized once for every row's integer
//! dot product, as ggml quantizes it: blocks of 32 as Q8_0/Q8_1 (for the
//! formats with 32-element blocks) or super-blocks of 256 as Q8_K (for the
//! K-quants). The float formats take the input as it is.

use super::kquant::QK_K;
use super::simd::Isa;
use crate::TensorKind;

/// Blocks of 32: i8 quants, the f16-rounded scale, Σq, and the f16-rounded
/// d·Σq the formats with a minimum use (ggml's `block_q8_1.s`).
#[derive(Clone, Debug, Default)]
pub(super) struct Q8Blocks {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub sum: Vec<i32>,
    pub s: Vec<f32>,
    /// `q` in lane order by blocks of 32, zero-padded to whole groups of
    /// 8 blocks (`simd::lane_order32`); empty unless the prefill's kernels
    /// asked for it ([`Input::lane_ordered`]).
    pub lanes: Vec<i8>,
}

/// Super-blocks of 256: i8 quants, the f32 scale, Σq per 16 (ggml's
/// `block_q8_K`).
#[derive(Clone, Debug, Default)]
pub(super) struct Q8K {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub bsums: Vec<i16>,
    /// `q` in lane order by groups of 16 (each super-block two tiles:
    /// groups 0–7, then 8–15); empty unless asked for.
    pub lanes: Vec<i8>,
}

/// An input prepared for one tensor kind.
#[derive(Clone, Debug)]
pub(super) enum Input {
    /// F32/F16/BF16 rows take the f32 input.
    Float,
    Blocks(Q8Blocks),
    K(Q8K),
}

/// Which preparation a kind's rows take: kinds of one family take the
/// same prepared input, so a group of matrices on one input prepares it
/// once per family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// F32, F16, BF16: the f32 input itself.
    Float,
    /// The 32-element formats: Q8 blocks of 32.
    Blocks,
    /// The K-quants: Q8_K super-blocks.
    K,
}

impl Family {
    pub(super) fn of(kind: TensorKind) -> Family {
        match kind {
            TensorKind::F32 | TensorKind::F16 | TensorKind::BF16 => Family::Float,
            TensorKind::Q4_0
            | TensorKind::Q4_1
            | TensorKind::Q5_0
            | TensorKind::Q5_1
            | TensorKind::Q8_0 => Family::Blocks,
            TensorKind::Q2_K
            | TensorKind::Q3_K
            | TensorKind::Q4_K
            | TensorKind::Q5_K
            | TensorKind::Q6_K => Family::K,
        }
    }
}

impl Input {
    /// `x` (length a whole number of `kind`'s blocks) prepared for `kind`.
    pub(super) fn new(kind: TensorKind, x: &[f32]) -> Input {
        match Family::of(kind) {
            Family::Float => Input::Float,
            Family::Blocks => Input::Blocks(q8_blocks(x)),
            Family::K => Input::K(q8_k(x)),
        }
    }

    /// This input with its quants also in the lane order the prefill's
    /// kernels on `isa` take (unchanged where they take none).
    pub(super) fn lane_ordered(mut self, isa: Isa) -> Input {
        if !isa.lane_order() {
            return self;
        }
        match &mut self {
            Input::Float => {}
            Input::Blocks(b) => {
                b.lanes = vec![0; b.q.len().div_ceil(256) * 256];
                super::simd::lane_order32(&b.q, b.d.len(), &mut b.lanes);
            }
            Input::K(k) => {
                k.lanes = vec![0; k.q.len()];
                super::simd::lane_order(&k.q, 16, &mut k.lanes);
            }
        }
        self
    }
}

/// ggml's `quantize_row_q8_1`: d = max|x|/127, q = round(x/d) (half away
/// from zero), d and d·Σq stored as f16.
fn q8_blocks(x: &[f32]) -> Q8Blocks {
    let n = x.len() / 32;
    let mut out = Q8Blocks {
        q: vec![0; n * 32],
        d: vec![0.0; n],
        sum: vec![0; n],
        s: vec![0.0; n],
        lanes: Vec::new(),
    };
    super::simd::q8_fill(Isa::active(), x, &mut out);
    // Both rounded to fp16 a slice at a time (with F16C where the CPU has
    // it).
    super::float::round_f16(&mut out.d);
    super::float::round_f16(&mut out.s);
    out
}

/// The quants, unrounded scales, sums and d·Σq of every block of `x`
/// into `out` (sized for them). Inlined into each instruction set's
/// entry point (`simd::q8_fill`), where the loops vectorize: the same
/// operations in the same order, so the same bits on each.
#[inline(always)]
pub(super) fn q8_fill_body(x: &[f32], out: &mut Q8Blocks) {
    let blocks = x.chunks_exact(32).zip(out.q.chunks_exact_mut(32)).zip(
        out.d
            .iter_mut()
            .zip(out.sum.iter_mut().zip(out.s.iter_mut())),
    );
    for ((b, q), (d_out, (sum_out, s_out))) in blocks {
        let amax = abs_max(b);
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        // |v·id| ≤ 127, so the quant goes through i32 (a plain truncating
        // conversion) instead of the saturating f32 → i8 cast.
        let mut wide = [0i32; 32];
        for (w, v) in wide.iter_mut().zip(b) {
            *w = quant_of(v * id);
        }
        for (q, w) in q.iter_mut().zip(&wide) {
            *q = *w as i8;
        }
        let sum: i32 = wide.iter().sum();
        *d_out = d;
        *sum_out = sum;
        *s_out = sum as f32 * d;
    }
}

/// max |v| (0 for none; NaNs are passed over), on the bits: |v|'s bits
/// order as |v| does, so the maximum is an integer one, which
/// vectorizes (a float maximum with NaN rules does not).
#[inline(always)]
fn abs_max(b: &[f32]) -> f32 {
    let m = b
        .iter()
        .map(|v| {
            let u = v.to_bits() & 0x7FFF_FFFF;
            if u > f32::INFINITY.to_bits() { 0 } else { u }
        })
        .max()
        .unwrap_or(0);
    f32::from_bits(m)
}

/// `round_half_away(y) as i32` for |y| < 2^22 (0 for NaN), without a
/// float-to-int conversion or a branch: y + ROUND holds the rounded
/// magnitude in its low mantissa bits.
#[inline(always)]
fn quant_of(y: f32) -> i32 {
    let a = y.abs();
    let t = a + ROUND;
    let r = t - ROUND;
    let mut q = t.to_bits() as i32 - ROUND.to_bits() as i32;
    // A tie rounded down to even goes up instead (a − r is exact here).
    q += i32::from(a - r == 0.5);
    if y.is_nan() {
        0
    } else if y.is_sign_negative() {
        -q
    } else {
        q
    }
}

/// 1.5·2^23: for |x| < 2^22, (x + ROUND) − ROUND is x rounded to the
/// nearest integer, ties to even (in the default rounding mode).
const ROUND: f32 = 12_582_912.0;

/// `x.round_ties_even()` for |x| < 2^22 by the same ROUND addition: the
/// float form [`quant_even_of`] and [`quant_of`] are tested against.
#[cfg(test)]
fn round_even(x: f32) -> f32 {
    ((x.abs() + ROUND) - ROUND).copysign(x)
}

/// `round_even(y).min(127.0) as i8` as an i32 for |y| < 2^22 (127 for
/// NaN, as `min` makes it; −128 at most below, as the cast saturates),
/// the same way as [`quant_of`].
#[inline(always)]
fn quant_even_of(y: f32) -> i32 {
    let t = y.abs() + ROUND;
    let q = t.to_bits() as i32 - ROUND.to_bits() as i32;
    let q = if y.is_sign_negative() { -q } else { q };
    if y.is_nan() { 127 } else { q.clamp(-128, 127) }
}

/// `x.round()` (half away from zero) for |x| < 2^22, the same way: the
/// definition [`quant_of`] is tested against.
#[cfg(test)]
fn round_half_away(x: f32) -> f32 {
    let a = x.abs();
    let r = round_even(a);
    // A tie rounded down to even goes up instead (a − r is exact here).
    let r = if a - r == 0.5 { r + 1.0 } else { r };
    r.copysign(x)
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
        lanes: Vec::new(),
    };
    for b in x.chunks_exact(QK_K) {
        // The first element of largest magnitude.
        let amax = abs_max(b);
        let max = b.iter().copied().find(|v| v.abs() == amax).unwrap_or(0.0);
        let start = out.q.len();
        if amax == 0.0 {
            out.d.push(0.0);
            out.q.extend(std::iter::repeat_n(0i8, QK_K));
        } else {
            let iscale = -127.0 / max;
            out.q
                .extend(b.iter().map(|v| quant_even_of(iscale * v) as i8));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The bitwise maximum is the float one with NaNs passed over, for
    /// zeros of both signs, infinities, subnormals and NaNs anywhere.
    #[test]
    fn abs_max_on_bits_is_the_float_maximum() {
        let by_float = |b: &[f32]| {
            b.iter()
                .fold(0f32, |a, v| if v.abs() > a { v.abs() } else { a })
        };
        let cases: [&[f32]; 6] = [
            &[],
            &[-0.0, 0.0],
            &[1.5, -2.5, f32::NAN, 2.0],
            &[f32::NAN, -f32::INFINITY, 3.0],
            &[1e-45, -2e-45, 0.0],
            &[-7.0, 7.0, -f32::NAN, 6.5],
        ];
        for b in cases {
            assert_eq!(abs_max(b).to_bits(), by_float(b).to_bits(), "{b:?}");
        }
    }

    #[test]
    fn branch_free_rounding_matches_std() {
        let mut x = -130.0f32;
        while x < 130.0 {
            for v in [
                x,
                x + 0.5,
                x - 0.5,
                x + 0.499_999_97,
                x.next_up(),
                x.next_down(),
            ] {
                assert_eq!(
                    round_even(v).to_bits(),
                    v.round_ties_even().to_bits(),
                    "{v}"
                );
                assert_eq!(round_half_away(v).to_bits(), v.round().to_bits(), "{v}");
                assert_eq!(quant_of(v), v.round() as i32, "{v}");
                assert_eq!(
                    quant_even_of(v),
                    round_even(v).min(127.0) as i8 as i32,
                    "{v}"
                );
            }
            x += 0.25;
        }
        assert_eq!(quant_of(f32::NAN), 0);
        assert_eq!(quant_of(-0.0), 0);
        assert_eq!(quant_even_of(f32::NAN), 127);
        assert_eq!(quant_even_of(-0.0), 0);
        for v in [
            0.499_999_97f32,
            -0.499_999_97,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.0,
            -0.0,
        ] {
            assert_eq!(round_half_away(v).to_bits(), v.round().to_bits(), "{v}");
            assert_eq!(
                round_even(v).to_bits(),
                v.round_ties_even().to_bits(),
                "{v}"
            );
        }
    }

    #[test]
    fn q8_k_takes_the_first_element_of_largest_magnitude() {
        let mut x = vec![0.25f32; QK_K];
        x[3] = -2.0;
        x[9] = 2.0;
        let k = q8_k(&x);
        // max = −2 → iscale = 63.5 > 0; x[3] maps to −127.
        assert_eq!(k.q[3], -127);
        assert_eq!(k.q[9], 127);
    }
}
