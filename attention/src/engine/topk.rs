//! The argtopk unit and the two key builders that feed it: dims from |q|
//! (SparF step 1) and tokens from approximate probabilities plus the recency
//! bonus (steps 5–6).

use alloc::vec::Vec;

/// Added to the key of each of the `local` most recent tokens so they always
/// win: keys without it are at most `g · 2^30 < 2^40` for g ≤ 1023.
pub const LOCAL_BONUS: u64 = 1 << 40;

/// Indices of the `k` largest keys, ascending.
///
/// Order: larger key first; on equal keys the lower index wins. `k ≥ len`
/// selects every index. The k-th largest key is found by selection on a
/// copy of the keys (O(n) on average); every larger key is kept, and keys
/// equal to it fill the remaining places in index order, so the output
/// comes out ascending without a sort. Keys at indices beyond `u32::MAX`
/// are ignored (token indices are u32 everywhere).
pub fn argtopk(keys: &[u64], k: usize, out: &mut Vec<u32>) {
    out.clear();
    let keys = &keys[..keys.len().min(u32::MAX as usize)];
    if k >= keys.len() {
        out.extend((0..keys.len()).filter_map(|j| u32::try_from(j).ok()));
        return;
    }
    if k == 0 {
        return;
    }
    let mut copy = keys.to_vec();
    let (larger, &mut threshold, _) = copy.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
    // Every key above the threshold sits before position k − 1.
    let above = larger.iter().filter(|&&x| x > threshold).count();
    let mut ties = k - above;
    out.reserve(k);
    for (&key, j) in keys.iter().zip(0u32..) {
        if key > threshold {
            out.push(j);
        } else if key == threshold && ties > 0 {
            ties -= 1;
            out.push(j);
        }
    }
}

/// SparF step 1 for a group: key_i = Σ_h |q_{h,i}| (u64) over the `g` query
/// heads of `q` (`g × d`, Fx); the top `r` dims, ascending. Missing entries
/// of a short `q` count as 0; `d` is at most 256 in the engine, so every
/// index fits u16.
pub fn select_dims(q: &[i32], g: usize, d: usize, r: usize, out: &mut Vec<u16>) {
    out.clear();
    let mut keys = alloc::vec![0u64; d];
    for h in 0..g {
        for (i, key) in keys.iter_mut().enumerate() {
            let x = q.get(h * d + i).copied().unwrap_or(0);
            *key += u64::from(x.unsigned_abs());
        }
    }
    let mut idx = Vec::with_capacity(r.min(d));
    argtopk(&keys, r, &mut idx);
    out.extend(idx.into_iter().filter_map(|i| u16::try_from(i).ok()));
}

/// SparF step 5 for a group: key_j = Σ_h p_{h,j} + (j ≥ s − local ?
/// [`LOCAL_BONUS`] : 0). `probs` is `g × s`, head-major; missing entries
/// count as 0. `out` gets exactly `s` keys.
pub fn token_keys(probs: &[u32], g: usize, s: usize, local: usize, out: &mut Vec<u64>) {
    out.clear();
    out.resize(s, 0);
    for h in 0..g {
        let row = probs.get(h * s..).unwrap_or(&[]);
        for (key, &p) in out.iter_mut().zip(row.iter().take(s)) {
            *key += u64::from(p);
        }
    }
    let first_local = s.saturating_sub(local);
    for key in &mut out[first_local..] {
        *key += LOCAL_BONUS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn naive(keys: &[u64], k: usize) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
        idx.sort_by(|&a, &b| keys[b as usize].cmp(&keys[a as usize]).then(a.cmp(&b)));
        idx.truncate(k);
        idx.sort_unstable();
        idx
    }

    proptest! {
        #[test]
        fn argtopk_matches_naive_sort(
            // A small key range forces many ties.
            keys in prop::collection::vec(0u64..6, 0..200),
            k in 0usize..220,
        ) {
            let mut out = vec![99];
            argtopk(&keys, k, &mut out);
            prop_assert_eq!(out, naive(&keys, k));
        }

        #[test]
        fn argtopk_matches_naive_sort_wide(
            keys in prop::collection::vec(any::<u64>(), 0..300),
            k in 0usize..300,
        ) {
            let mut out = Vec::new();
            argtopk(&keys, k, &mut out);
            prop_assert_eq!(out, naive(&keys, k));
        }
    }

    #[test]
    fn argtopk_ties_go_to_lower_index() {
        let mut out = Vec::new();
        argtopk(&[3, 7, 3, 7, 3], 3, &mut out);
        assert_eq!(out, [0, 1, 3]);
        argtopk(&[5; 10], 4, &mut out);
        assert_eq!(out, [0, 1, 2, 3]);
        argtopk(&[1, 2], 0, &mut out);
        assert!(out.is_empty());
        argtopk(&[1, 2], 5, &mut out);
        assert_eq!(out, [0, 1]);
    }

    #[test]
    fn argtopk_large_input() {
        // 10^6 keys, k = 1000.
        let n = 1_000_000u64;
        let keys: Vec<u64> = (0..n).map(|j| (j * 2_654_435_761) % 1_000_003).collect();
        let mut out = Vec::new();
        argtopk(&keys, 1000, &mut out);
        assert_eq!(out, naive(&keys, 1000));
    }

    #[test]
    fn select_dims_sums_heads() {
        // Head 0 favours dim 0, head 1 dim 3; the sum favours dim 3 then 0.
        let q = [10, 1, 2, -3, /* head 1 */ 1, 0, 2, -20];
        let mut dims = Vec::new();
        select_dims(&q, 2, 4, 2, &mut dims);
        assert_eq!(dims, [0, 3]);
        select_dims(&q, 2, 4, 1, &mut dims);
        assert_eq!(dims, [3]);
        select_dims(&q, 1, 4, 1, &mut dims);
        assert_eq!(dims, [0]);
        // Ties (dims 1 and 2 of head 0 after abs) go to the lower index.
        select_dims(&[0, -5, 5, 0], 1, 4, 1, &mut dims);
        assert_eq!(dims, [1]);
    }

    #[test]
    fn token_keys_sum_heads_and_add_bonus() {
        let probs = [1, 2, 3, 4, /* head 1 */ 10, 20, 30, 40];
        let mut keys = Vec::new();
        token_keys(&probs, 2, 4, 1, &mut keys);
        assert_eq!(keys, [11, 22, 33, 44 + LOCAL_BONUS]);
        token_keys(&probs, 2, 4, 0, &mut keys);
        assert_eq!(keys, [11, 22, 33, 44]);
        token_keys(&probs, 1, 4, 9, &mut keys);
        assert!(keys.iter().all(|&k| k > LOCAL_BONUS));
        // The bonus beats any possible sum of 1023 heads.
        assert!(LOCAL_BONUS > 1023 * u64::from(super::super::P_ONE));
    }
}
