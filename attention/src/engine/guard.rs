//! The top-k of SparF's token keys with the adaptive guardrail: the signal
//! is α, the approximate probability mass each query head puts on the
//! chosen tokens, which the device has in hand after argtopk (no extra
//! flash reads). When the group's smallest α is below the threshold, k
//! doubles within the cap and argtopk runs again on the same keys.

use alloc::vec::Vec;

use super::kernels::alpha;
use super::softmax::P_ONE;
use super::topk::argtopk;
use crate::shape::Guard;

/// `alpha_min_milli`/1000 in Q0.30 (floor); 1000 and above is P_ONE.
pub fn alpha_threshold(alpha_min_milli: u16) -> u32 {
    let milli = u64::from(alpha_min_milli.min(1000));
    (milli * u64::from(P_ONE) / 1000) as u32
}

/// Tokens (ascending) and α per head (Q0.30) for `keys` over `s` tokens
/// and `probs` `[g][s]`, starting from `k` tokens; with a guard, k doubles
/// (to at most min(`k_cap`, s)) while min α < the threshold. Never more
/// than max(k, min(k_cap, s)) tokens.
pub fn select_guarded(
    keys: &[u64],
    probs: &[u32],
    s: usize,
    k: usize,
    guard: Option<Guard>,
) -> (Vec<u32>, Vec<u32>) {
    select_guarded_with(keys, probs, s, k, guard, argtopk)
}

/// [`select_guarded`] with the top-k done by `topk(keys, k, out)` (the
/// device's argtopk unit); it must be [`argtopk`]'s function.
pub fn select_guarded_with(
    keys: &[u64],
    probs: &[u32],
    s: usize,
    k: usize,
    guard: Option<Guard>,
    mut topk: impl FnMut(&[u64], usize, &mut Vec<u32>),
) -> (Vec<u32>, Vec<u32>) {
    let mut k_now = k;
    let mut tokens = Vec::with_capacity(k.min(s));
    loop {
        topk(keys, k_now, &mut tokens);
        let alphas: Vec<u32> = probs
            .chunks_exact(s.max(1))
            .map(|pr| alpha(pr, &tokens, s))
            .collect();
        let widen = guard.and_then(|g| {
            let cap = g.k_cap.min(s);
            let low =
                alphas.iter().copied().min().unwrap_or(P_ONE) < alpha_threshold(g.alpha_min_milli);
            (low && k_now < cap).then_some(cap)
        });
        match widen {
            Some(cap) => k_now = k_now.saturating_mul(2).min(cap),
            None => return (tokens, alphas),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn threshold_is_floor_of_milli() {
        assert_eq!(alpha_threshold(0), 0);
        assert_eq!(alpha_threshold(1000), P_ONE);
        assert_eq!(alpha_threshold(5000), P_ONE);
        assert_eq!(alpha_threshold(500), P_ONE / 2);
        assert_eq!(alpha_threshold(1), 1_073_741);
    }

    #[test]
    fn widens_until_alpha_or_cap() {
        // 64 tokens of equal probability: α = k/64 exactly.
        let s = 64;
        let probs = vec![P_ONE / 64; s];
        let keys: Vec<u64> = probs.iter().map(|&p| u64::from(p)).collect();
        let g = |milli, cap| {
            Some(Guard {
                alpha_min_milli: milli,
                k_cap: cap,
            })
        };
        // No guard, or α already enough: k stays.
        assert_eq!(select_guarded(&keys, &probs, s, 8, None).0.len(), 8);
        assert_eq!(select_guarded(&keys, &probs, s, 8, g(100, 64)).0.len(), 8);
        // α = 8/64 < 0.3: 16 (α = 0.25), then 32 (0.5).
        assert_eq!(select_guarded(&keys, &probs, s, 8, g(300, 64)).0.len(), 32);
        // The cap is a hard limit, also when it is not a power-of-two step.
        for cap in [8, 9, 20, 33, 64, 1000] {
            let (t, a) = select_guarded(&keys, &probs, s, 8, g(1000, cap));
            assert_eq!(t.len(), cap.clamp(8, s), "cap {cap}");
            assert!(t.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(a.len(), 1);
        }
    }
}
