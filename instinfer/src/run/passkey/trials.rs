//! The trials of a passkey run, drawn from a seed: the same seed gives the
//! same lengths, depths and keys on every machine (SplitMix64).

/// One trial's draw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trial {
    /// The most tokens of the prompt.
    pub tokens: usize,
    /// The needle's depth, as a share of the filler (0.1..0.9).
    pub depth: f64,
    /// The five-digit pass key.
    pub key: u32,
}

/// The shallowest and the deepest needle.
pub const DEPTHS: (f64, f64) = (0.1, 0.9);

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny generator whose every
/// seed gives a good stream.
#[derive(Clone, Debug)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (`lo ≤ hi`).
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        let span = u128::from(hi - lo) + 1;
        lo + ((u128::from(self.next()) * span) >> 64) as u64
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `count` trials with prompt lengths uniform in `min..=max` tokens
/// (`min ≤ max`), depths uniform in [`DEPTHS`] and keys in 10000..=99999.
pub fn draw(seed: u64, count: usize, min: usize, max: usize) -> Vec<Trial> {
    let mut rng = SplitMix(seed);
    (0..count)
        .map(|_| Trial {
            tokens: rng.between(min as u64, max as u64) as usize,
            depth: DEPTHS.0 + (DEPTHS.1 - DEPTHS.0) * rng.unit(),
            key: rng.between(10_000, 99_999) as u32,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_gives_the_reference_stream() {
        // The first outputs for seed 1234567 of the authors' reference code.
        let mut r = SplitMix(1_234_567);
        assert_eq!(r.next(), 6_457_827_717_110_365_317);
        assert_eq!(r.next(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn trials_are_seeded_and_within_bounds() {
        let a = draw(7, 200, 2048, 4096);
        assert_eq!(a, draw(7, 200, 2048, 4096));
        assert_ne!(a, draw(8, 200, 2048, 4096));
        for t in &a {
            assert!((2048..=4096).contains(&t.tokens));
            assert!((DEPTHS.0..DEPTHS.1).contains(&t.depth));
            assert!((10_000..=99_999).contains(&t.key));
        }
        // Spread over the ranges, not stuck at one end.
        assert!(a.iter().any(|t| t.tokens < 2600) && a.iter().any(|t| t.tokens > 3500));
        assert!(a.iter().any(|t| t.depth < 0.3) && a.iter().any(|t| t.depth > 0.7));
        assert_eq!(
            draw(1, 3, 600, 600).iter().map(|t| t.tokens).sum::<usize>(),
            1800
        );
    }
}
