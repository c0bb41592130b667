//! Fixed-point conversion, exact dot products, the two score scales and the
//! logit: everything that turns fp16 storage into Q16 logits.

/// Fractional bits of [`fx`] values (Q14 in an i32).
pub const FRAC: u32 = 14;

/// Largest finite fp16 (65504) in Fx; ±Inf saturates to ±this.
pub const FX_MAX: i32 = 65504 << FRAC;

/// fp16 bits → Fx (value · 2^14), rounded half away from zero.
///
/// Every finite fp16 is `s · 2^(e − 25)` with an integer `s ≤ 2047` (`e` the
/// biased exponent, subnormals use `e = 1` without the hidden bit), so
/// `Fx = s · 2^(e − 11)`: a left shift for `e ≥ 11` (at most `2047 << 19`,
/// below 2^30) or a rounded right shift by `11 − e ∈ 1..=10`. NaN → 0,
/// ±Inf → ±[`FX_MAX`].
///
/// Written without branches on the value (selects and shifts by computed
/// amounts), because key and value elements straddle 2^−4 at random and a
/// branch on the exponent is mispredicted about half the time.
#[inline]
pub fn fx(h: u16) -> i32 {
    let h = u32::from(h);
    let exp = (h >> 10) & 0x1F;
    let man = h & 0x03FF;
    let s = if exp == 0 { man } else { man | 0x400 };
    let e = exp.max(1);
    let left = e.saturating_sub(11);
    let right = 11u32.saturating_sub(e);
    // Magnitude rounding with +half = half away from zero after the sign.
    let half = (1u32 << right) >> 1;
    let finite = ((s << left) + half) >> right;
    let special = if man != 0 { 0 } else { FX_MAX as u32 };
    let magnitude = if exp == 0x1F { special } else { finite } as i32;
    if h & 0x8000 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// Fx → f32, for the host side (exact for every |x| < 2^24).
pub fn fx_to_f32(x: i32) -> f32 {
    x as f32 / 16384.0
}

/// f32 → fp16 bits (round to nearest even, via `half`).
pub fn f32_to_f16_bits(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// Σ q_i · fx(k_i), exact.
///
/// Each term is below 2^31 · 2^30 = 2^61 in magnitude (fx is at most 2^30),
/// so with d ≤ 256 the sum stays below 2^69: i128 never overflows. Integer
/// addition makes the result independent of summation order. Pairs beyond
/// the shorter slice are ignored (callers pass equal lengths).
pub fn dot(q: &[i32], k: &[u16]) -> i128 {
    dot_fx(q, k.iter().map(|&b| fx(b)))
}

/// `dot` with the keys already in Fx (`k_fx[i] = fx(k_i)`).
#[inline]
pub fn dot_fx(q: &[i32], k_fx: impl IntoIterator<Item = i32>) -> i128 {
    if sums_fit_i64(q) {
        return i128::from(dot_fx_i64(q, k_fx));
    }
    // Each product is below 2^61, so it fits i64; the running sum stays
    // in i64 until an add would overflow, and only then moves to i128
    // (integer sums in any grouping are the same number).
    let mut total = 0i128;
    let mut run = 0i64;
    for (&a, b) in q.iter().zip(k_fx) {
        let p = i64::from(a) * i64::from(b);
        match run.checked_add(p) {
            Some(s) => run = s,
            None => {
                total += i128::from(run);
                run = p;
            }
        }
    }
    total + i128::from(run)
}

/// Whether every partial sum of `q` against any Fx key fits an i64:
/// max|q| · max|Fx| · len < 2^63 (the common case by far).
#[inline]
pub fn sums_fit_i64(q: &[i32]) -> bool {
    let qmax = q
        .iter()
        .map(|a| u64::from(a.unsigned_abs()))
        .max()
        .unwrap_or(0);
    u128::from(qmax) * FX_MAX as u128 * (q.len() as u128) < 1 << 63
}

/// `dot_fx` as a plain i64 sum: exact when [`sums_fit_i64`]`(q)` (no
/// partial sum can leave i64), so callers that check it once per query
/// skip the checks per key.
#[inline]
pub fn dot_fx_i64(q: &[i32], k_fx: impl IntoIterator<Item = i32>) -> i64 {
    q.iter()
        .zip(k_fx)
        .map(|(&a, b)| i64::from(a) * i64::from(b))
        .sum()
}

/// floor(√n), digit by digit (no floats, deterministic on every target).
pub fn isqrt(n: u128) -> u128 {
    let mut rem = n;
    let mut root = 0u128;
    let mut bit = 1u128 << 126;
    while bit > n {
        bit >>= 2;
    }
    while bit != 0 {
        if rem >= root + bit {
            rem -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    root
}

/// 1/√d in Q16: isqrt(floor(2^32 / d)). `d = 0` → 0.
///
/// This is floored, so it underestimates 1/√d by less than one Q16 step
/// (relative error < 2^−16·√d ≤ 2.5e−4; e.g. d = 128 gives 5792 for
/// 5792.6, 1.1e−4 low; d = 64 is exact). That is the largest single error
/// term of the engine against the real-valued reference.
pub fn dense_scale(d: usize) -> u32 {
    if d == 0 {
        return 0;
    }
    // d ≥ 1 ⇒ the quotient is ≤ 2^32 and its root ≤ 2^16.
    isqrt((1u128 << 32) / d as u128) as u32
}

/// Cap of [`approx_scale`]: 16.0 in Q16.
pub const APPROX_SCALE_MAX: u32 = 1 << 20;

/// SparQ/SparF approximate-score scale in Q16:
/// 1/√(d · ‖q_dims‖₁ / ‖q‖₁) = isqrt((‖q‖₁ << 32) / (d · ‖q_dims‖₁)),
/// capped at [`APPROX_SCALE_MAX`]; 0 when the chosen dims of `q_h` are all
/// zero (then every approximate logit is 0 and the scores are uniform).
///
/// `d = q_h.len()`; `dims` must be distinct indices (out-of-range ones are
/// ignored). With `dims` = all dims this equals [`dense_scale`]`(d)` exactly,
/// because `(n · 2^32) / (d · n)` floors to `2^32 / d`.
pub fn approx_scale(q_h: &[i32], dims: &[u16]) -> u32 {
    let abs = |x: &i32| u128::from(x.unsigned_abs());
    let num: u128 = q_h.iter().map(abs).sum();
    let kept: u128 = dims
        .iter()
        .filter_map(|&i| q_h.get(usize::from(i)))
        .map(abs)
        .sum();
    let den = q_h.len() as u128 * kept;
    if den == 0 {
        return 0;
    }
    // num < 2^40 (≤ 256 terms below 2^32), so num << 32 < 2^72 fits u128.
    let root = isqrt((num << 32) / den);
    root.min(u128::from(APPROX_SCALE_MAX)) as u32
}

#[inline]
fn saturate_i32(x: i128) -> i32 {
    x.clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i32
}

/// A Q28 dot product scaled to a Q16 logit: saturate_i32((d · c) >> 28),
/// arithmetic (floor) shift. Every logit of the engine ends here.
#[inline]
pub fn scale_dot(d: i128, c: u32) -> i32 {
    saturate_i32((d * i128::from(c)) >> 28)
}

/// Logit in Q16: saturate_i32((dot(q, k) · c) >> 28), arithmetic (floor)
/// shift. `dot` is Q28 (Q14 · Q14), `c` is Q16, so the product is Q44; the
/// product is below 2^69 · 2^20 = 2^89 in magnitude and fits i128.
pub fn logit(q: &[i32], k: &[u16], c: u32) -> i32 {
    scale_dot(dot(q, k), c)
}

/// [`logit`] on chosen dims: `Σ_t q_h[dims[t]] · fx(k_dims[t])`, scaled the
/// same way. `k_dims` holds the key's elements at `dims`, in that order.
/// Equal to `logit(q_h restricted to dims, k_dims, c)`.
pub fn logit_dims(q_h: &[i32], k_dims: &[u16], dims: &[u16], c: u32) -> i32 {
    let d: i128 = dims
        .iter()
        .zip(k_dims)
        .map(|(&i, &b)| {
            let q = q_h.get(usize::from(i)).copied().unwrap_or(0);
            i128::from(i64::from(q) * i64::from(fx(b)))
        })
        .sum();
    scale_dot(d, c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    /// The specification of `fx` in floating point: half's exact f32 value
    /// times 2^14 (exact in f64), rounded half away from zero.
    fn fx_spec(h: u16) -> i32 {
        let x = half::f16::from_bits(h).to_f32();
        if x.is_nan() {
            0
        } else if x.is_infinite() {
            if x > 0.0 { FX_MAX } else { -FX_MAX }
        } else {
            (f64::from(x) * 16384.0).round() as i32
        }
    }

    #[test]
    fn fx_matches_spec_on_every_fp16() {
        for h in 0..=u16::MAX {
            assert_eq!(fx(h), fx_spec(h), "bits {h:#06x}");
        }
    }

    proptest! {
        #[test]
        fn logit_fx_paths_equal_logit(
            q in proptest::collection::vec(any::<i32>(), 1..40),
            small in proptest::collection::vec(-(1i32 << 20)..(1 << 20), 1..40),
            k in proptest::collection::vec(any::<u16>(), 40),
            c in 0u32..(1 << 20),
        ) {
            for q in [&q, &small] {
                let k = &k[..q.len()];
                let kf: Vec<i32> = k.iter().map(|&b| fx(b)).collect();
                prop_assert_eq!(scale_dot(dot_fx(q, kf.iter().copied()), c), logit(q, k, c));
                if sums_fit_i64(q) {
                    let d = i128::from(dot_fx_i64(q, kf.iter().copied()));
                    prop_assert_eq!(scale_dot(d, c), logit(q, k, c));
                }
            }
        }
    }

    #[test]
    fn fx_special_values() {
        assert_eq!(fx(0x3C00), 1 << 14); // 1.0
        assert_eq!(fx(0xBC00), -(1 << 14)); // -1.0
        assert_eq!(fx(0x7BFF), 65504 << 14); // max finite
        assert_eq!(fx(0x7C00), FX_MAX); // +inf
        assert_eq!(fx(0xFC00), -FX_MAX); // -inf
        assert_eq!(fx(0x7E00), 0); // NaN
        assert_eq!(fx(0x8000), 0); // -0
        assert_eq!(fx(0x0001), 0); // 2^-24 → 0.0039 Fx units → 0
        assert_eq!(fx(0x0200), 1); // 2^-15 = half an Fx step → rounds away
        assert_eq!(fx(0x8200), -1);
        assert_eq!(fx(0x01FF), 0); // just below 2^-15: 0.499 units → 0
        assert_eq!(fx(0x0100), 0); // 2^-16 = quarter step → 0
        assert_eq!(fx(0x0400), 1); // min normal 2^-14 → exactly 1
    }

    #[test]
    fn helpers_round_trip() {
        assert_eq!(fx_to_f32(fx(f32_to_f16_bits(1.5))), 1.5);
        assert_eq!(fx_to_f32(fx(f32_to_f16_bits(-3.25))), -3.25);
        assert_eq!(f32_to_f16_bits(1.0), 0x3C00);
    }

    #[test]
    fn dot_is_exact() {
        let q = [fx(0x3C00), -3 << 14, i32::MAX];
        let k = [
            0x4000u16, /* 2 */
            0x3800,    /* 0.5 */
            0x7BFF,    /* 65504 */
        ];
        let want = i128::from(1i64 << 14) * i128::from(2i64 << 14)
            - i128::from(3i64 << 14) * i128::from(1i64 << 13)
            + i128::from(i32::MAX) * i128::from(FX_MAX);
        assert_eq!(dot(&q, &k), want);
    }

    #[test]
    fn isqrt_small_and_large() {
        for n in 0u128..2000 {
            let r = isqrt(n);
            assert!(r * r <= n && (r + 1) * (r + 1) > n, "{n}");
        }
        assert_eq!(isqrt(u128::MAX), u128::from(u64::MAX));
        assert_eq!(isqrt(1 << 100), 1 << 50);
        assert_eq!(isqrt((1 << 100) - 1), (1 << 50) - 1);
    }

    #[test]
    fn dense_scale_values() {
        assert_eq!(dense_scale(0), 0);
        assert_eq!(dense_scale(1), 65536);
        assert_eq!(dense_scale(4), 32768);
        assert_eq!(dense_scale(64), 8192);
        assert_eq!(dense_scale(128), 5792);
        assert_eq!(dense_scale(256), 4096);
        for d in 1..=256usize {
            let c = f64::from(dense_scale(d)) / 65536.0;
            let exact = 1.0 / (d as f64).sqrt();
            assert!(c <= exact && exact - c < 1.0 / 65536.0, "d={d}");
        }
    }

    #[test]
    fn approx_scale_edge_cases() {
        let q = [4 << 14, 0, -(4 << 14), 0];
        // All mass on the chosen dims: scale = 1/sqrt(4) = 0.5.
        assert_eq!(approx_scale(&q, &[0, 2]), 32768);
        // Half the mass: 1/sqrt(4 · 0.5) = 0.7071 → floor(46340.95).
        assert_eq!(approx_scale(&q, &[0]), 46340);
        // No mass on the chosen dims.
        assert_eq!(approx_scale(&q, &[1, 3]), 0);
        assert_eq!(approx_scale(&[0; 4], &[0, 1, 2, 3]), 0);
        // A tiny share hits the cap.
        let mut big = [1 << 20; 256];
        big[0] = 1;
        assert_eq!(approx_scale(&big, &[0]), APPROX_SCALE_MAX);
    }

    proptest! {
        #[test]
        fn approx_scale_all_dims_is_dense_scale(
            q in prop::collection::vec(-(1i32 << 30)..(1 << 30), 1..=256),
        ) {
            let dims: Vec<u16> = (0..q.len() as u16).collect();
            let any_nonzero = q.iter().any(|&x| x != 0);
            let want = if any_nonzero { dense_scale(q.len()) } else { 0 };
            prop_assert_eq!(approx_scale(&q, &dims), want);
        }

        #[test]
        fn logit_dims_equals_logit_on_restricted_q(
            q in prop::collection::vec(-(1i32 << 20)..(1 << 20), 8),
            k in prop::collection::vec(0u16..0x7C00, 8),
            mask in 1u8..=255,
            c in 0u32..(1 << 20),
        ) {
            let dims: Vec<u16> = (0..8u16).filter(|i| mask & (1 << i) != 0).collect();
            let kd: Vec<u16> = dims.iter().map(|&i| k[usize::from(i)]).collect();
            let qd: Vec<i32> = dims.iter().map(|&i| q[usize::from(i)]).collect();
            prop_assert_eq!(logit_dims(&q, &kd, &dims, c), logit(&qd, &kd, c));
        }
    }

    #[test]
    fn logit_scales_and_saturates() {
        // q = 1, k = 1, c = 1.0 → logit 1.0 in Q16.
        assert_eq!(logit(&[1 << 14], &[0x3C00], 1 << 16), 1 << 16);
        // Floor on negatives: -1 Fx unit · 1.0 · c=1 → -2^-28·2^16 floors to -1.
        assert_eq!(logit(&[-1], &[0x3C00], 1), -1);
        assert_eq!(logit(&[i32::MAX; 4], &[0x7BFF; 4], 1 << 20), i32::MAX);
        assert_eq!(logit(&[i32::MIN; 4], &[0x7BFF; 4], 1 << 20), i32::MIN);
    }
}
