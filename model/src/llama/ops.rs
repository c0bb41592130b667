//! The small per-vector operations of the llama-family block: RMSNorm (also
//! per head), RoPE on adjacent pairs or on halves, SiLU and GELU gating,
//! softmax, and rounding to fp16 (the precision K, V and q attend in).

pub(crate) use crate::quant::round_f16;

/// `out = x / sqrt(mean(x²) + eps) · weight`.
pub(crate) fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let ss: f64 = x.iter().map(|v| f64::from(*v) * f64::from(*v)).sum();
    let scale = (1.0 / (ss / x.len().max(1) as f64 + f64::from(eps)).sqrt()) as f32;
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * scale * w;
    }
}

/// RoPE frequencies θ_i = theta^(−2i/head_dim), i < head_dim/2.
pub(crate) fn rope_freqs(theta: f32, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| (f64::from(theta).powf(-2.0 * i as f64 / head_dim as f64)) as f32)
        .collect()
}

/// [`rope_freqs`] times a linear position scale (Gemma 3's global layers
/// with `rope.scaling.factor`); exactly `rope_freqs` when `scale` is 1.
pub(crate) fn rope_freqs_scaled(theta: f32, head_dim: usize, scale: f32) -> Vec<f32> {
    if scale == 1.0 {
        return rope_freqs(theta, head_dim);
    }
    (0..head_dim / 2)
        .map(|i| {
            (f64::from(theta).powf(-2.0 * i as f64 / head_dim as f64) * f64::from(scale)) as f32
        })
        .collect()
}

/// cos and sin of `pos · θ_i` for every frequency and every position of
/// a range, computed once: q and k, and every layer with the same
/// frequencies, rotate with the same rows (in f64, then rounded, as one
/// position alone would).
#[derive(Clone, Debug)]
pub(crate) struct Angles {
    first: usize,
    width: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Angles {
    /// The table of `positions` for `freqs`.
    pub(crate) fn new(positions: std::ops::Range<usize>, freqs: &[f32]) -> Self {
        let (mut cos, mut sin) = (Vec::new(), Vec::new());
        for pos in positions.clone() {
            for f in freqs {
                let angle = pos as f64 * f64::from(*f);
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        Self {
            first: positions.start,
            width: freqs.len(),
            cos,
            sin,
        }
    }

    /// cos and sin of position `pos` (inside the table's range).
    fn at(&self, pos: usize) -> (&[f32], &[f32]) {
        let at = (pos - self.first) * self.width;
        (
            &self.cos[at..at + self.width],
            &self.sin[at..at + self.width],
        )
    }
}

/// Rotates every head in `x` (`[heads][head_dim]`) at position `pos`, on
/// adjacent pairs (2i, 2i+1): GGUF stores llama's Q/K permuted for this form.
#[cfg(test)]
pub(crate) fn rope(x: &mut [f32], pos: usize, freqs: &[f32], head_dim: usize) {
    rope_at(x, pos, &Angles::new(pos..pos + 1, freqs), head_dim);
}

/// [`rope`] with the angles taken from a table.
pub(crate) fn rope_at(x: &mut [f32], pos: usize, angles: &Angles, head_dim: usize) {
    let (cos, sin) = angles.at(pos);
    for head in x.chunks_exact_mut(head_dim) {
        for ((pair, c), s) in head.chunks_exact_mut(2).zip(cos).zip(sin) {
            let (a, b) = (pair[0], pair[1]);
            pair[0] = a * c - b * s;
            pair[1] = a * s + b * c;
        }
    }
}

/// Rotates every head in `x` at position `pos` on halves (i, i + head_dim/2),
/// the NEOX pairing of qwen2 and qwen3.
#[cfg(test)]
pub(crate) fn rope_neox(x: &mut [f32], pos: usize, freqs: &[f32], head_dim: usize) {
    rope_neox_at(x, pos, &Angles::new(pos..pos + 1, freqs), head_dim);
}

/// [`rope_neox`] with the angles taken from a table.
pub(crate) fn rope_neox_at(x: &mut [f32], pos: usize, angles: &Angles, head_dim: usize) {
    let (cos, sin) = angles.at(pos);
    for head in x.chunks_exact_mut(head_dim) {
        let (lo, hi) = head.split_at_mut(head_dim / 2);
        for (((a, b), c), s) in lo.iter_mut().zip(hi).zip(cos).zip(sin) {
            let (x0, x1) = (*a, *b);
            *a = x0 * c - x1 * s;
            *b = x0 * s + x1 * c;
        }
    }
}

/// RMSNorm of every `weight.len()`-wide head of `x`, in place (qwen3's
/// QK-norm).
pub(crate) fn rms_norm_heads(x: &mut [f32], weight: &[f32], eps: f32) {
    if weight.is_empty() {
        return;
    }
    let mut head = vec![0f32; weight.len()];
    for chunk in x.chunks_exact_mut(weight.len()) {
        head.copy_from_slice(chunk);
        rms_norm(&head, weight, eps, chunk);
    }
}

/// `gate = silu(gate) ⊙ up` (libm's `exp`: on SmolLM2 the bench prompt's
/// first greedy token is a near tie that [`exp_approx`]'s last-bit
/// differences turn over).
pub(crate) fn silu_mul(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + (-*g).exp()) * u;
    }
}

/// `gate = gelu(gate) ⊙ up`, GELU in its tanh form (Gemma's GeGLU), with
/// tanh(y) = 1 − 2/(e^{2y} + 1) on [`exp_approx`] (one loop the compiler
/// vectorizes, where libm's `tanhf` is a call per element).
pub(crate) fn gelu_mul(gate: &mut [f32], up: &[f32]) {
    // sqrt(2/π)
    const C: f32 = 0.797_884_6;
    for (g, u) in gate.iter_mut().zip(up) {
        let x = *g;
        let e = exp_approx(2.0 * C * (x + 0.044_715 * x * x * x));
        let tanh = 1.0 - 2.0 / (e + 1.0);
        *g = 0.5 * x * (1.0 + tanh) * u;
    }
}

/// e^x within a few ulp, without branches or calls, so that a loop over
/// it vectorizes: x clamped to f32's range, split as n·ln2 + r (|r| ≤
/// ln2/2, Cody–Waite), e^r by its degree-6 Taylor polynomial, scaled by
/// 2^n through the exponent bits (in two factors, so that n = 128 gives
/// +∞). Below −87.3 it returns about 1.2e−38; above 88.7, +∞.
pub(crate) fn exp_approx(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts: the first has few bits, so n·LN2_HI is exact.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // 1.5·2^23: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.336_55, 88.8);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let n1 = ((n * 0.5) + ROUND) - ROUND;
    let pow = |k: f32| f32::from_bits(((k as i32 + 127) << 23) as u32);
    p * pow(n1) * pow(n - n1)
}

/// In-place softmax.
pub(crate) fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// `out += Σ_j p[j] · rows[j]`, rows of `out.len()` contiguous floats.
pub(crate) fn weighted_sum(p: &[f32], rows: &[f32], out: &mut [f32]) {
    crate::quant::weighted_rows(p, rows, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_f16_is_half_s_rounding_at_every_length() {
        for n in [0usize, 1, 255, 256, 257, 700] {
            let xs: Vec<f32> = (0..n)
                .map(|i| (i as f32 * 0.7331).sin() * 3.1e3 + 1e-6)
                .collect();
            let mut got = xs.clone();
            round_f16(&mut got);
            for (g, x) in got.iter().zip(&xs) {
                assert_eq!(g.to_bits(), half::f16::from_f32(*x).to_f32().to_bits());
            }
            assert!(n == 0 || got != xs, "rounding changed nothing at {n}");
        }
    }

    #[test]
    fn exp_approx_is_within_a_few_ulp_of_exp() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.5 {
            let (got, want) = (exp_approx(x) as f64, (x as f64).exp());
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(
            worst < 4.0 * f32::EPSILON as f64,
            "relative error {worst:e}"
        );
        assert_eq!(exp_approx(0.0), 1.0);
        assert_eq!(exp_approx(200.0), f32::INFINITY);
        assert!(exp_approx(-200.0) < 1e-37);
        assert!(exp_approx(f32::NAN).is_nan());
    }

    #[test]
    fn gelu_and_silu_match_their_libm_forms() {
        let xs: Vec<f32> = (-400..400).map(|i| i as f32 * 0.031).collect();
        let up = vec![1.5f32; xs.len()];
        let mut g = xs.clone();
        gelu_mul(&mut g, &up);
        let mut s = xs.clone();
        silu_mul(&mut s, &up);
        for ((x, g), s) in xs.iter().zip(&g).zip(&s) {
            let x = f64::from(*x);
            let want_g = 0.75 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh());
            let want_s = 1.5 * x / (1.0 + (-x).exp());
            assert!(
                (f64::from(*g) - want_g).abs() <= 1e-6 * (1.0 + want_g.abs()),
                "gelu({x})"
            );
            assert!(
                (f64::from(*s) - want_s).abs() <= 1e-6 * (1.0 + want_s.abs()),
                "silu({x})"
            );
        }
    }

    #[test]
    fn rope_rotates_adjacent_pairs() {
        let freqs = rope_freqs(10_000.0, 4);
        assert_eq!(freqs[0], 1.0);
        let mut x = [1.0, 0.0, 1.0, 0.0];
        rope(&mut x, 1, &freqs, 4);
        assert!((x[0] - 1f32.cos()).abs() < 1e-6 && (x[1] - 1f32.sin()).abs() < 1e-6);
        let a = 0.01f32;
        assert!((x[2] - a.cos()).abs() < 1e-6 && (x[3] - a.sin()).abs() < 1e-6);
    }

    #[test]
    fn rope_neox_rotates_halves() {
        let freqs = rope_freqs(10_000.0, 4);
        let mut x = [1.0, 1.0, 0.0, 0.0];
        rope_neox(&mut x, 1, &freqs, 4);
        assert!((x[0] - 1f32.cos()).abs() < 1e-6 && (x[2] - 1f32.sin()).abs() < 1e-6);
        let a = 0.01f32;
        assert!((x[1] - a.cos()).abs() < 1e-6 && (x[3] - a.sin()).abs() < 1e-6);
    }

    #[test]
    fn gelu_tanh_known_points() {
        let mut g = [0.0, 1.0, -1.0, 3.0];
        gelu_mul(&mut g, &[1.0, 1.0, 1.0, 2.0]);
        // gelu_tanh(1) = 0.841192, gelu_tanh(-1) = -0.158808, gelu_tanh(3) = 2.996363.
        let want = [0.0, 0.841_192, -0.158_808, 2.0 * 2.996_363];
        for (a, b) in g.iter().zip(want) {
            assert!((a - b).abs() < 1e-5, "{g:?}");
        }
        let scaled = rope_freqs_scaled(10_000.0, 8, 0.125);
        let plain = rope_freqs(10_000.0, 8);
        assert_eq!(rope_freqs_scaled(10_000.0, 8, 1.0), plain);
        assert!((scaled[1] - plain[1] / 8.0).abs() < 1e-7);
    }

    #[test]
    fn softmax_and_norm() {
        let mut p = [0.0, (2f32).ln()];
        softmax(&mut p);
        assert!((p[0] - 1.0 / 3.0).abs() < 1e-6);
        let mut out = [0.0; 2];
        rms_norm(&[3.0, 4.0], &[1.0, 2.0], 0.0, &mut out);
        let r = (12.5f32).sqrt();
        assert!((out[0] - 3.0 / r).abs() < 1e-6 && (out[1] - 8.0 / r).abs() < 1e-6);
    }
}
