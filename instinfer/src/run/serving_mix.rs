//! Pieces the serving-shaped benches share (`bench gc`, `bench soak`):
//! the one-head sequence shape, heavy-tailed lengths, random fp16 tokens,
//! the host's copy of a sequence with the engine-model check of a decode
//! output, and percentiles.

use attention::engine::dense_group;
use attention::shape::GroupShape;
use attention::testdata::SplitMix64;
use proto::{Placement, SeqShape};

use super::RunError;

/// Head dimension of every sequence.
pub(crate) const D: usize = 64;

/// One layer, one KV head of d = 64; dim pages of 8 dims, so a tail flush
/// of the dim copy is 8 pages, not 64, on a small drive.
pub(crate) const SHAPE: SeqShape = SeqShape {
    layers: 1,
    kv_heads: 1,
    group: 1,
    head_dim: D as u16,
    dim_group: 8,
    rotated: false,
    placement: Placement::TIME,
};

/// Flash pages one token costs with 4 KiB pages (K and V rows of 128 B,
/// 32 a page; the dim copy's 8-dim rows, 256 tokens a page), for fill
/// bookkeeping: 2/32 + 8/256.
pub(crate) fn pages_per_token() -> f64 {
    2.0 / 32.0 + 8.0 / 256.0
}

/// A uniform draw in (0, 1]: never 0, so its power and log are finite.
fn unit(r: &mut SplitMix64) -> f64 {
    (r.below(1 << 30) as f64 + 1.0) / f64::from(1u32 << 30)
}

/// A heavy-tailed length: Pareto with shape `alpha` above `min`, capped.
pub(crate) fn pareto(r: &mut SplitMix64, min: f64, alpha: f64, cap: u32) -> u32 {
    ((min / unit(r).powf(1.0 / alpha)) as u32).min(cap).max(1)
}

/// An exponential wait of mean `mean_ns` (Poisson arrivals).
pub(crate) fn exponential_ns(r: &mut SplitMix64, mean_ns: f64) -> u64 {
    (-unit(r).ln() * mean_ns) as u64
}

/// `D` random fp16 values in about [-1.4, 1.4], as bits.
pub(crate) fn token(r: &mut SplitMix64) -> Vec<u16> {
    (0..D)
        .map(|_| half::f16::from_f32((r.below(2000) as f32 - 1000.0) / 700.0).to_bits())
        .collect()
}

/// The host's copy of one sequence (fp16 bits, token-major).
#[derive(Clone, Debug, Default)]
pub(crate) struct HostSeq {
    pub k: Vec<u16>,
    pub v: Vec<u16>,
}

impl HostSeq {
    /// Tokens held.
    pub fn len(&self) -> usize {
        self.k.len() / D
    }

    /// Fails unless `out` is what the engine model computes for `q` over
    /// this sequence.
    pub fn check(&self, q: &[u16], out: &[i32], what: &str) -> Result<(), RunError> {
        let want = dense_group(
            q,
            &self.k,
            &self.v,
            GroupShape {
                group: 1,
                head_dim: D,
            },
        )
        .map_err(|e| RunError::Attention(e.to_string()))?;
        if out != want {
            return Err(RunError::Attention(format!(
                "{what}: the drive's output differs from the engine model"
            )));
        }
        Ok(())
    }
}

/// The `p` quantile of `sorted` (nearest rank), 0 for none.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
