//! Value-side kernels: the α of SparF, weighted value sums, the value mean
//! v̄ and the final blend back to Fx.

use super::fixed::fx;
use super::softmax::P_ONE;

/// SparF step 7 for one head: P_ONE exactly when every token is selected
/// (`selected.len() == s`), else min(P_ONE, Σ_{j ∈ selected} p_j).
/// Out-of-range indices contribute 0.
pub fn alpha(probs_h: &[u32], selected: &[u32], s: usize) -> u32 {
    if selected.len() == s {
        return P_ONE;
    }
    let sum: u64 = selected
        .iter()
        .filter_map(|&j| probs_h.get(j as usize))
        .map(|&p| u64::from(p))
        .sum();
    sum.min(u64::from(P_ONE)) as u32
}

/// acc_i += p · fx(v_i), in Q44 (Q30 · Q14).
///
/// Each term is at most 2^30 · 2^30 = 2^60; since the probabilities of one
/// softmax sum to at most 2^30, a full pass keeps |acc_i| ≤ 2^30 · max|fx| ≤
/// 2^60 < 2^63. Integer addition: the order of rows does not matter.
pub fn accumulate(acc: &mut [i64], p: u32, v_row: &[u16]) {
    let p = i64::from(p);
    for (a, &v) in acc.iter_mut().zip(v_row) {
        *a += p * i64::from(fx(v));
    }
}

/// [`accumulate`] with the row already in Fx (`v_fx[i] = fx(v_i)`).
#[inline]
pub fn accumulate_fx(acc: &mut [i64], p: u32, v_fx: &[i32]) {
    let p = i64::from(p);
    for (a, &v) in acc.iter_mut().zip(v_fx) {
        *a += p * i64::from(v);
    }
}

/// vsum_i += fx(v_i) (|vsum| ≤ S · 2^30 < 2^62 for S < 2^32).
pub fn add_vsum(vsum: &mut [i64], v_row: &[u16]) {
    for (a, &v) in vsum.iter_mut().zip(v_row) {
        *a += i64::from(fx(v));
    }
}

/// out_i = vsum_i / s rounded half away from zero (Fx). `s = 0` → 0.
pub fn vmean(vsum: &[i64], s: u64, out: &mut [i32]) {
    for (o, &x) in out.iter_mut().zip(vsum) {
        if s == 0 {
            *o = 0;
            continue;
        }
        // In u64 when the numerator fits (always for sums built by
        // add_vsum); the same quotient as in u128, at a fraction of the
        // cost of a 128-bit division.
        let q = match x
            .unsigned_abs()
            .checked_mul(2)
            .and_then(|n| n.checked_add(s))
            .zip(s.checked_mul(2))
        {
            Some((n, den)) => u128::from(n / den),
            None => (2 * u128::from(x.unsigned_abs()) + u128::from(s)) / (2 * u128::from(s)),
        };
        // |mean| ≤ max|fx| ≤ 2^30, so q fits i32 for sums built by add_vsum.
        let q = i64::try_from(q).unwrap_or(i64::MAX);
        *o = saturate_i32(if x < 0 { -q } else { q });
    }
}

fn saturate_i32(x: i64) -> i32 {
    x.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// Back to Fx with the SparF blend.
///
/// o_i = saturate_i32((acc_i + 2^29) >> 30) (round half up); with
/// `alpha == P_ONE` out_i = o_i, else out_i = saturate_i32((α·o_i +
/// (P_ONE − α)·vmean_i + 2^29) >> 30), all in i64 (each product < 2^61).
/// `alpha` above P_ONE is treated as P_ONE.
pub fn finish(acc: &[i64], alpha: u32, vmean: &[i32], out: &mut [i32]) {
    let alpha = alpha.min(P_ONE);
    let half = 1i64 << 29;
    for (i, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
        // acc + 2^29 cannot overflow: |acc| ≤ 2^60 for a valid pass, and
        // saturating_add keeps arbitrary callers safe.
        let exact = saturate_i32(a.saturating_add(half) >> 30);
        *o = if alpha == P_ONE {
            exact
        } else {
            let vm = i64::from(vmean.get(i).copied().unwrap_or(0));
            let blend = i64::from(alpha) * i64::from(exact) + i64::from(P_ONE - alpha) * vm + half;
            saturate_i32(blend >> 30)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_rules() {
        let p = [100, 200, 300, P_ONE];
        assert_eq!(alpha(&p, &[0, 1, 2, 3], 4), P_ONE);
        assert_eq!(alpha(&[0, 0], &[0, 1], 2), P_ONE); // exact 1 even if Σp < 1
        assert_eq!(alpha(&p, &[0, 2], 4), 400);
        assert_eq!(alpha(&p, &[2, 3], 4), P_ONE); // clamped
        assert_eq!(alpha(&p, &[9], 4), 0);
    }

    #[test]
    fn accumulate_and_finish_round_trip() {
        // p = 0.25 on v = [2, -1], p = 0.75 on v = [4, 1] → [3.5, 0.5].
        let mut acc = [0i64; 2];
        accumulate(&mut acc, P_ONE / 4, &[0x4000, 0xBC00]);
        accumulate(&mut acc, 3 * (P_ONE / 4), &[0x4400, 0x3C00]);
        let mut out = [0i32; 2];
        finish(&acc, P_ONE, &[0, 0], &mut out);
        assert_eq!(out, [7 << 13, 1 << 13]);
        // α = 0.5 blends halfway to v̄ = [1.5, 0.5].
        finish(&acc, P_ONE / 2, &[3 << 13, 1 << 13], &mut out);
        assert_eq!(out, [5 << 13, 1 << 13]);
        // α = 0 is v̄.
        finish(&acc, 0, &[3 << 13, -7], &mut out);
        assert_eq!(out, [3 << 13, -7]);
    }

    #[test]
    fn finish_rounds_half_up() {
        let mut out = [0i32; 3];
        finish(&[1 << 29, (1 << 29) - 1, -(1 << 29)], P_ONE, &[], &mut out);
        assert_eq!(out, [1, 0, 0]);
    }

    #[test]
    fn vmean_rounds_half_away_from_zero() {
        let mut out = [0i32; 5];
        vmean(&[5, -5, 4, -4, 7], 2, &mut out);
        assert_eq!(out, [3, -3, 2, -2, 4]);
        vmean(&[1, -1, 2, 0, 3], 3, &mut out);
        assert_eq!(out, [0, 0, 1, 0, 1]);
        vmean(&[9; 5], 0, &mut out);
        assert_eq!(out, [0; 5]);
        let mut sum = [0i64; 2];
        add_vsum(&mut sum, &[0x3C00, 0xC000]);
        add_vsum(&mut sum, &[0x4000, 0xC000]);
        assert_eq!(sum, [3 << 14, -(4 << 14)]);
    }

    /// The u64 shortcut and the u128 division agree, at the edges where
    /// the numerator or the divisor no longer fit a u64 too.
    #[test]
    fn vmean_matches_the_wide_division_everywhere() {
        let xs = [
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            1 << 62,
            -(1 << 62) + 3,
            (1 << 61) + 7,
            -1,
            0,
            12_345_678_901,
        ];
        for s in [
            1u64,
            2,
            3,
            7,
            1 << 31,
            (1 << 32) + 5,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = [0i32; 9];
            vmean(&xs, s, &mut out);
            for (&x, &o) in xs.iter().zip(&out) {
                let s = u128::from(s);
                let q = (2 * u128::from(x.unsigned_abs()) + s) / (2 * s);
                let q = i64::try_from(q).unwrap_or(i64::MAX);
                let want = saturate_i32(if x < 0 { -q } else { q });
                assert_eq!(o, want, "x {x}, s {s}");
            }
        }
    }
}
