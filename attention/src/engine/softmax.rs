//! The softmax unit: Q16 logits → Q0.30 probabilities, via a fixed-point
//! 2^−x polynomial and one reciprocal.

/// 1.0 as a probability (Q0.30).
pub const P_ONE: u32 = 1 << 30;

/// log2(e) in Q16 (94548.46… floored; 4.9e−6 relative).
pub const LOG2E_Q16: i64 = 94548;

/// Coefficients of P(f) ≈ 2^(−f/65536) · 2^30 for f ∈ [0, 65536), in Q30,
/// lowest degree first, evaluated by [`exp2_frac`] with Horner in i64:
/// `acc = c4; acc = c_i + ((acc · f) >> 16)` for i = 3, 2, 1, 0.
///
/// Obtained by a constrained minimax fit of 2^−x on [0, 1) with the constant
/// term pinned to 1 (relative error, Lawson's iteratively reweighted least
/// squares on 4000 points, pure Python), then rounded to Q30. Measured over
/// all 65536 inputs of the integer evaluation: max relative error 2.99e−6,
/// P(0) = 2^30 exactly, P non-increasing (both asserted in tests).
pub const EXP2_POLY: [i64; 5] = [
    1_073_741_824,
    -744_171_376,
    257_114_954,
    -57_148_825,
    7_335_944,
];

/// P(f) for `f < 65536` (higher bits are ignored): 2^(−f/65536) in Q30.
#[inline]
pub fn exp2_frac(f: u32) -> u32 {
    let f = i64::from(f & 0xFFFF);
    let mut acc = EXP2_POLY[4];
    for &c in EXP2_POLY[..4].iter().rev() {
        // |acc| < 2^31 and f < 2^16: the product fits i64 easily.
        acc = c + ((acc * f) >> 16);
    }
    // In [2^29, 2^30] for every f (see tests), so the cast is lossless.
    acc as u32
}

/// Unnormalised weight of a logit `t = x − max ≤ 0` (Q16): e^t in Q30.
///
/// y = (t · LOG2E_Q16) >> 16 is log2 of the weight in Q16 (floor, ≤ 0);
/// with z = −y, the weight is P(z mod 2^16) >> (z >> 16), 0 once the shift
/// reaches 31. t ≥ −2^32 so t · LOG2E_Q16 fits i64.
#[inline]
pub fn weight(t: i64) -> u32 {
    let y = (t.min(0) * LOG2E_Q16) >> 16;
    let z = -y;
    // P ≤ 2^30, so any shift of 31 or more gives 0: no branch needed.
    let n = (z >> 16).min(31) as u32;
    exp2_frac((z & 0xFFFF) as u32) >> n
}

/// Softmax of Q16 logits into Q0.30 probabilities.
///
/// m = max; w_j = [`weight`]`(x_j − m)` (the max gets exactly 2^30);
/// sum = Σ w (u64, ≥ 2^30, < 2^30 · n); recip = floor(2^62 / sum) ≤ 2^32;
/// p_j = (w_j · recip) >> 32. Because recip ≤ 2^62 / sum and every step
/// floors, Σp ≤ Σw · 2^62 / sum / 2^32 = 2^30: the probabilities never sum
/// above one (they fall short by at most n units of 2^−30).
///
/// Operates on the first min(logits.len(), probs.len()) entries; empty input
/// writes nothing. Deterministic; the sum is order-independent.
#[inline]
pub fn softmax(logits: &[i32], probs: &mut [u32]) {
    let n = logits.len().min(probs.len());
    let (logits, probs) = (&logits[..n], &mut probs[..n]);
    let Some(&m) = logits.iter().max() else {
        return;
    };
    let mut sum = 0u64;
    for (p, &x) in probs.iter_mut().zip(logits) {
        *p = weight(i64::from(x) - i64::from(m));
        sum += u64::from(*p);
    }
    // sum ≥ P_ONE because the max logit's weight is exactly P_ONE.
    let recip = (1u64 << 62) / sum;
    for p in probs.iter_mut() {
        // w ≤ 2^30 and recip ≤ 2^32: the product fits u64; the result ≤ 2^30.
        *p = ((u64::from(*p) * recip) >> 32) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    #[test]
    fn polynomial_is_accurate_and_monotone() {
        assert_eq!(exp2_frac(0), P_ONE);
        let mut prev = u32::MAX;
        let mut worst = 0.0f64;
        for f in 0..65536u32 {
            let p = exp2_frac(f);
            assert!(p <= prev, "not monotone at {f}");
            prev = p;
            let exact = (-(f64::from(f)) / 65536.0).exp2() * f64::from(P_ONE);
            worst = worst.max((f64::from(p) / exact - 1.0).abs());
        }
        assert!(worst < 3.0e-6, "max relative error {worst}");
        // Continuity across the integer boundary: P(65535) vs P(0)/2.
        assert!(exp2_frac(65535) >= P_ONE / 2);
    }

    /// Weight vs e^t: relative error ≤ 1.4e−5 + 4.9e−6·|t| (Q16 floor of
    /// the exponent, polynomial, LOG2E rounding), plus one unit for the
    /// final shift; measured on a dense grid of t.
    #[test]
    fn weight_tracks_exp() {
        let mut worst_rel = 0.0f64;
        for i in 0..200_000i64 {
            let t = -i * 37; // up to about −113 in Q16 units of 1/65536
            let real = t as f64 / 65536.0;
            let exact = real.exp() * f64::from(P_ONE);
            let w = f64::from(weight(t));
            let err = (w - exact).abs();
            let bound = exact * (1.4e-5 + 4.9e-6 * -real) + 1.0;
            assert!(err <= bound, "t={real}: {w} vs {exact}");
            if exact > 1e6 {
                worst_rel = worst_rel.max(err / exact);
            }
        }
        assert!(worst_rel > 1e-7, "the grid must exercise the bound");
        assert_eq!(weight(0), P_ONE);
        assert_eq!(weight(i64::from(i32::MIN) * 2), 0);
    }

    #[test]
    fn softmax_basic() {
        let mut p = [0u32; 3];
        softmax(&[5 << 16, 5 << 16, 5 << 16], &mut p);
        assert_eq!(p[0], p[1]);
        assert_eq!(p[1], p[2]);
        assert!(P_ONE - 3 * p[0] <= 3);

        let mut one = [0u32; 1];
        softmax(&[-123_456], &mut one);
        assert_eq!(one[0], P_ONE);

        // Empty: nothing written, no panic.
        let mut none: [u32; 0] = [];
        softmax(&[], &mut none);
        let mut untouched = [7u32; 2];
        softmax(&[], &mut untouched);
        assert_eq!(untouched, [7, 7]);

        // Two logits 1.0 apart: p0 / p1 ≈ e.
        let mut two = [0u32; 2];
        softmax(&[1 << 16, 0], &mut two);
        let ratio = f64::from(two[0]) / f64::from(two[1]);
        assert!((ratio - core::f64::consts::E).abs() < 1e-4, "{ratio}");
    }

    proptest! {
        #[test]
        fn probabilities_sum_at_most_one(
            logits in prop::collection::vec(any::<i32>(), 1..300),
        ) {
            let mut p = vec![0u32; logits.len()];
            softmax(&logits, &mut p);
            let sum: u64 = p.iter().map(|&x| u64::from(x)).sum();
            prop_assert!(sum <= u64::from(P_ONE));
            prop_assert!(sum + logits.len() as u64 >= u64::from(P_ONE));
            // The max gets the largest probability.
            let imax = logits.iter().enumerate().max_by_key(|(_, x)| **x).map(|(i, _)| i);
            let pmax = p.iter().copied().max();
            prop_assert_eq!(imax.map(|i| p[i]), pmax);
        }

        #[test]
        fn softmax_close_to_float(
            logits in prop::collection::vec(-(12i32 << 16)..(12 << 16), 1..64),
        ) {
            let mut p = vec![0u32; logits.len()];
            softmax(&logits, &mut p);
            let m = logits.iter().copied().max().unwrap_or(0);
            let e: Vec<f64> = logits.iter().map(|&x| (f64::from(x - m) / 65536.0).exp()).collect();
            let s: f64 = e.iter().sum();
            for (pi, ei) in p.iter().zip(&e) {
                let want = ei / s;
                let got = f64::from(*pi) / f64::from(P_ONE);
                // 2 × weight bound at |t| ≤ 24, plus rounding units.
                prop_assert!((got - want).abs() <= want * 2.6e-4 + 4e-9, "{} vs {}", got, want);
            }
        }
    }
}
