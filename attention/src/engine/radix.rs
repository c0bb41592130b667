//! The schedule of the engine's radix select (the hardware top-k,
//! `hdl::SelectK`): which passes it makes over the keys for a given input,
//! and the threshold it ends with. The selection it describes is exactly
//! [`argtopk`](super::argtopk)'s (tested); the plan is what a cycle model
//! needs, since the unit's clocks depend on the keys.
//!
//! # The method
//!
//! 1. *Collect*: the keys are stored in index order; `diff` = OR of
//!    `key ^ key₀` marks every bit where some key differs from the first.
//! 2. *Normalise*: the bits above `diff`'s highest set bit are common to
//!    all keys, so they form the first prefix for free; the unit finds the
//!    highest set bit by shifting `diff` left one bit per clock
//!    ([`RadixPlan::shifts`] clocks).
//! 3. *Passes*: a candidate is a key whose bits above `s` equal the
//!    prefix. Each pass histograms the candidates' next [`DIGIT_BITS`] bits
//!    (fewer at the bottom of the key), then scans the bins from the top
//!    until the counts reach the number still needed: that bin extends the
//!    prefix. The passes stop when the chosen bin holds exactly the number
//!    needed, or when the prefix is the whole key (the rest are ties).
//! 4. *Emit*: one more pass in index order takes every key whose prefix is
//!    above the threshold and the first `need` keys equal to it, so ties
//!    go to the lower index and the output is ascending, as `argtopk`'s.
//!
//! `k ≥ n` skips to the emit pass with an empty prefix (everything is
//! taken); `k = 0` emits nothing and makes no pass.

use alloc::vec::Vec;

/// Bits of key the unit histograms per pass (256 bins).
pub const DIGIT_BITS: u32 = 8;

/// What the radix select does for one input; see the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RadixPlan {
    /// Keys.
    pub n: u32,
    /// Normalising shifts (one clock each).
    pub shifts: u32,
    /// Histogram passes over the keys.
    pub passes: u32,
    /// Bins scanned over all passes (2^width per pass).
    pub bins: u32,
    /// Whether the emit pass runs (k > 0).
    pub emit: bool,
    /// Whether the unit normalises and makes passes (0 < k < n).
    pub search: bool,
    /// Bits of the final prefix (the top bits of a key).
    pub mask: u64,
    /// The final prefix, in place (`key & mask` is compared with it).
    pub prefix: u64,
    /// Keys equal to the prefix that are taken, lowest indices first.
    pub need: u32,
}

impl RadixPlan {
    /// Clocks of the hardware unit (`hdl::SelectK`, 8-bit digits) from
    /// its `start` clock to its `done` clock inclusive, as measured in its
    /// co-simulation: 1 (start) + n + 1 (flush) + 1 (setup); when
    /// 0 < k < n, shifts + 1 and per pass n + 11 plus its bins; then, when
    /// k > 0, n + 4 (emit) or 1 with no keys.
    pub fn clocks(&self) -> u64 {
        let n = u64::from(self.n);
        let search = if self.search {
            u64::from(self.shifts) + 1 + u64::from(self.passes) * (n + 11) + u64::from(self.bins)
        } else {
            0
        };
        let emit = match (self.emit, n) {
            (false, _) => 0,
            (true, 0) => 1,
            (true, n) => n + 4,
        };
        n + 3 + search + emit
    }

    /// Whether the plan takes the key at this point of the emit pass, given
    /// how many keys equal to the prefix were taken before it.
    pub fn takes(&self, key: u64, ties_taken: u32) -> bool {
        let p = key & self.mask;
        p > self.prefix || (p == self.prefix && ties_taken < self.need)
    }

    /// The indices the plan selects, ascending.
    pub fn select(&self, keys: &[u64], out: &mut Vec<u32>) {
        out.clear();
        if !self.emit {
            return;
        }
        let mut ties = 0;
        for (&key, j) in keys.iter().zip(0u32..) {
            if self.takes(key, ties) {
                if key & self.mask == self.prefix {
                    ties += 1;
                }
                out.push(j);
            }
        }
    }
}

/// The mask of the key bits at and above bit `s` (0 for `s` = 64).
fn high_mask(s: u32) -> u64 {
    if s >= 64 { 0 } else { !((1u64 << s) - 1) }
}

/// The radix select's plan for the top `k` of `keys` (at most `u32::MAX`
/// keys: token indices are u32).
pub fn radix_plan(keys: &[u64], k: usize) -> RadixPlan {
    let n = u32::try_from(keys.len()).unwrap_or(u32::MAX);
    let keys = &keys[..n as usize];
    let mut plan = RadixPlan {
        n,
        emit: k > 0,
        ..RadixPlan::default()
    };
    if k == 0 {
        return plan;
    }
    if k >= keys.len() {
        plan.need = n;
        return plan;
    }
    plan.search = true;
    let key0 = keys[0];
    let diff = keys.iter().fold(0u64, |d, &x| d | (x ^ key0));
    plan.shifts = diff.leading_zeros();
    let mut s = 64 - plan.shifts;
    plan.mask = high_mask(s);
    plan.prefix = key0 & plan.mask;
    plan.need = k as u32;
    let mut hist = [0u32; 1 << DIGIT_BITS];
    while s > 0 {
        let sp = s.saturating_sub(DIGIT_BITS);
        let width = s - sp;
        hist.fill(0);
        for &key in keys {
            if key & plan.mask == plan.prefix {
                hist[((key & !plan.mask) >> sp) as usize] += 1;
            }
        }
        plan.passes += 1;
        plan.bins += 1 << width;
        // Scan from the top bin: the first whose running count reaches
        // `need` extends the prefix.
        let mut above = 0;
        let mut chosen = (0u64, 0u32);
        for b in (0..1u32 << width).rev() {
            let c = hist[b as usize];
            if above + c >= plan.need {
                chosen = (u64::from(b), c);
                break;
            }
            above += c;
        }
        plan.need -= above;
        plan.mask = high_mask(sp);
        plan.prefix |= chosen.0 << sp;
        s = sp;
        if chosen.1 == plan.need {
            break;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::argtopk;
    use alloc::vec;
    use proptest::prelude::*;

    fn check(keys: &[u64], k: usize) -> RadixPlan {
        let plan = radix_plan(keys, k);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        plan.select(keys, &mut got);
        argtopk(keys, k, &mut want);
        assert_eq!(got, want, "k = {k}, keys = {keys:?}");
        plan
    }

    proptest! {
        #[test]
        fn selects_what_argtopk_selects(
            keys in proptest::collection::vec(any::<u64>(), 0..300),
            k in 0usize..320,
        ) {
            check(&keys, k);
        }

        #[test]
        fn selects_what_argtopk_selects_with_ties(
            keys in proptest::collection::vec(0u64..6, 0..300),
            k in 0usize..320,
        ) {
            check(&keys, k);
        }

        #[test]
        fn selects_what_argtopk_selects_on_token_keys(
            keys in proptest::collection::vec(0u64..(1 << 41), 1..2000),
            k in 1usize..300,
        ) {
            let plan = check(&keys, k);
            // Keys below 2^41 skip at least 23 leading bits for free.
            prop_assert!(plan.shifts >= 23 || k >= keys.len());
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(check(&[], 0).passes, 0);
        assert!(!check(&[1, 2], 0).emit);
        let all = check(&[3, 1, 2], 5);
        assert_eq!((all.passes, all.need, all.mask), (0, 3, 0));
        // Every key equal: 64 shifts, no pass, the first k by index.
        let same = check(&[7; 10], 4);
        assert_eq!((same.shifts, same.passes, same.need), (64, 0, 4));
        // Keys differing only in the low bit: one pass of a 1-bit digit.
        let low = check(&[4, 5, 4, 5], 2);
        assert_eq!((low.shifts, low.passes, low.bins), (63, 1, 2));
        // Full 64-bit keys that tie after the top byte need every pass.
        let mut keys = vec![u64::MAX; 3];
        keys.push(0);
        keys.push(u64::MAX - 1);
        let deep = check(&keys, 2);
        assert_eq!((deep.shifts, deep.passes), (0, 8));
    }

    #[test]
    fn spread_keys_stop_early() {
        // 32K distinct keys, k = S/8: the threshold bin holds exactly what
        // is needed after a few passes.
        let keys: Vec<u64> = (0..32768u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24)
            .collect();
        let plan = check(&keys, 4096);
        assert!(plan.passes <= 3, "{plan:?}");
    }
}
