//! Deterministic, structured test data shared by this crate's tests and by
//! other crates' tests: a SplitMix64 generator and KV caches / queries that
//! look like decode attention (peaked on a few "heavy" tokens, with a
//! recency trend), not white noise.
//!
//! The structure, per KV head: a hidden unit direction `u` (with a few
//! "outlier" dims 3× larger, like real query/key channels). About 1/32 of
//! the tokens are heavy: key = a·u + N(0, 0.3²) noise with a distinct
//! strength a ∈ [6, 14); the rest have N(0, 1) keys. Every key also gets
//! `1.5 · (j + 1)/S · u` (recent tokens score slightly higher). Values are
//! N(0, 1). Queries are `γ·√d·u + N(0, 0.3²)`, γ ∈ [0.8, 1.2) per query
//! head, so logits q·k/√d are ≈ γ·a (6 to 17) on heavy tokens and ≈ N(0, 1)
//! elsewhere. Every value is rounded to fp16, so the f32 data and its fp16
//! bits describe exactly the same numbers.
//!
//! Normals are Irwin–Hall (sum of 12 uniforms − 6): no transcendental
//! functions, bounded in [−6, 6].

use alloc::vec::Vec;

use crate::math::sqrt;

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, well-mixed. The one
/// seeded generator of the workspace: test data, fault injection on the
/// simulated board, random command scripts.
#[derive(Clone, Debug, Default)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (modulo reduction: the bias is below 2^-40 for
    /// the small `n` tests use). `n` must not be 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in [0, 1), 24 random bits (exact in f32).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u32 << 24) as f32
    }

    /// Approximately N(0, 1): Irwin–Hall sum of 12 uniforms minus 6.
    pub fn normal(&mut self) -> f32 {
        let sum: f32 = (0..12).map(|_| self.next_f32()).sum();
        sum - 6.0
    }
}

const TAG_DIRECTION: u64 = 0xD1;
const TAG_KV: u64 = 0x4B56;
const TAG_QUERY: u64 = 0x51;

/// An independent stream per (seed, tag, index).
fn stream(seed: u64, tag: u64, index: usize) -> SplitMix64 {
    let mut mixer = SplitMix64::new(seed ^ tag.wrapping_mul(0xA24B_AED4_963E_E407));
    let base = mixer.next_u64();
    SplitMix64::new(base ^ (index as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25))
}

fn round_f16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// The hidden unit direction of KV head `kv_head` (length `d`).
pub fn hidden_direction(seed: u64, kv_head: usize, d: usize) -> Vec<f32> {
    let mut rng = stream(seed, TAG_DIRECTION, kv_head);
    let mut u: Vec<f64> = (0..d)
        .map(|_| {
            let outlier = rng.next_u64().is_multiple_of(8);
            let x = f64::from(rng.normal());
            if outlier { 3.0 * x } else { x }
        })
        .collect();
    let norm = sqrt(u.iter().map(|x| x * x).sum::<f64>());
    if norm > 0.0 {
        for x in &mut u {
            *x /= norm;
        }
    }
    u.into_iter().map(|x| x as f32).collect()
}

/// K and V, each `[kv_heads][s][d]`, fp16-representable (see module docs).
pub fn structured_kv(seed: u64, kv_heads: usize, s: usize, d: usize) -> (Vec<f32>, Vec<f32>) {
    let mut k = Vec::with_capacity(kv_heads * s * d);
    let mut v = Vec::with_capacity(kv_heads * s * d);
    for h in 0..kv_heads {
        let u = hidden_direction(seed, h, d);
        let mut rng = stream(seed, TAG_KV, h);
        for j in 0..s {
            let heavy = rng.next_u64().is_multiple_of(32);
            let trend = 1.5 * (j + 1) as f32 / s as f32;
            let (strength, noise) = if heavy {
                (6.0 + 8.0 * rng.next_f32() + trend, 0.3)
            } else {
                (trend, 1.0)
            };
            for &ui in &u {
                k.push(round_f16(strength * ui + noise * rng.normal()));
            }
            for _ in 0..d {
                v.push(round_f16(rng.normal()));
            }
        }
    }
    (k, v)
}

/// Queries `[q_heads][d]` for the KV cache of [`structured_kv`] with the
/// same `seed`: query head `h` is aligned with the hidden direction of KV
/// head `h · kv_heads / q_heads` (= `h / group` when `kv_heads` divides
/// `q_heads`; `kv_heads = 0` is treated as 1).
pub fn structured_query(seed: u64, q_heads: usize, d: usize, kv_heads: usize) -> Vec<f32> {
    let kv_heads = kv_heads.max(1);
    let root_d = sqrt(d as f64) as f32;
    let mut q = Vec::with_capacity(q_heads * d);
    for h in 0..q_heads {
        let u = hidden_direction(seed, h * kv_heads / q_heads, d);
        let mut rng = stream(seed, TAG_QUERY, h);
        let gamma = 0.8 + 0.4 * rng.next_f32();
        for &ui in &u {
            q.push(round_f16(gamma * root_d * ui + 0.3 * rng.normal()));
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::dense;
    use crate::shape::GroupShape;

    #[test]
    fn splitmix_known_values() {
        // Reference outputs of SplitMix64 seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn uniform_and_normal_moments() {
        let mut r = SplitMix64::new(42);
        let n = 200_000;
        let (mut sum, mut sq) = (0.0f64, 0.0f64);
        for _ in 0..n {
            let u = r.next_f32();
            assert!((0.0..1.0).contains(&u));
            let x = f64::from(r.normal());
            assert!(x.abs() <= 6.0);
            sum += x;
            sq += x * x;
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0).abs() < 0.02, "{var}");
    }

    #[test]
    fn deterministic_and_fp16_exact() {
        let (k1, v1) = structured_kv(9, 2, 100, 16);
        let (k2, v2) = structured_kv(9, 2, 100, 16);
        assert_eq!((&k1, &v1), (&k2, &v2));
        let (k3, _) = structured_kv(10, 2, 100, 16);
        assert_ne!(k1, k3);
        assert_eq!(k1.len(), 2 * 100 * 16);
        let q = structured_query(9, 4, 16, 2);
        assert_eq!(q.len(), 64);
        for &x in k1.iter().chain(&v1).chain(&q) {
            assert_eq!(round_f16(x), x);
        }
        let u = hidden_direction(9, 1, 16);
        let n: f32 = u.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-5);
    }

    #[test]
    fn attention_is_peaked() {
        // With dense attention, the top 1/16 of tokens carry most of the
        // probability mass; white noise would spread it.
        let (s, d) = (2048, 64);
        let (k, _) = structured_kv(3, 1, s, d);
        let q = structured_query(3, 1, d, 1);
        // Probabilities via a one-hot value matrix is too big; compute the
        // logits directly instead.
        let logits: Vec<f64> = k
            .chunks_exact(d)
            .map(|kj| {
                kj.iter()
                    .zip(&q)
                    .map(|(a, b)| f64::from(a * b))
                    .sum::<f64>()
                    / 8.0
            })
            .collect();
        let m = logits.iter().copied().fold(f64::MIN, f64::max);
        let mut w: Vec<f64> = logits.iter().map(|l| crate::math::exp(l - m)).collect();
        let total: f64 = w.iter().sum();
        w.sort_by(|a, b| b.total_cmp(a));
        let top: f64 = w[..s / 16].iter().sum();
        assert!(top / total > 0.6, "top share {}", top / total);
        // And dense attention on it runs (smoke: finite output).
        let (k, v) = structured_kv(3, 1, 64, d);
        let out = dense(
            &q,
            &k,
            &v,
            GroupShape {
                group: 1,
                head_dim: d,
            },
        )
        .unwrap();
        assert!(out.iter().all(|x| x.is_finite()));
    }
}
