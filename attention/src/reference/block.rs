//! Block-sparse attention (SolidAttention's block-wise dynamic sparsity).
//!
//! The context is cut into blocks of `block` tokens. Half the token budget
//! goes to blocks kept always: the first block (the attention sinks) and
//! the most recent blocks. The other half goes to the best-scoring of the
//! remaining blocks, and attention is then exact (dense softmax) over the
//! kept tokens. One choice per KV group, like SparF, so a store reads each
//! block once for all the group's query heads.
//!
//! **Block representatives** (InfLLM-style: a few representative keys per
//! block, kept in memory while the block itself lives on disk). Our
//! choice: the [`REPS`] keys of the block closest in direction to the
//! block's mean key (largest `k · k̄`), which a store can pick when the
//! block is written, without any query. A block's score is
//! `Σ_h max_rep q_h · k_rep` over the group's query heads; ties go to the
//! lower block.

use alloc::vec;
use alloc::vec::Vec;

use super::common::{argtopk, dot};
use super::dense::dense;
use super::trace::TokenTrace;
use crate::error::AttentionError;
use crate::shape::{BlockParams, GroupShape};

/// Representative keys per block.
pub const REPS: usize = 4;

/// The representative tokens of one block of keys `k` (`[n][d]`, n ≥ 1):
/// indices within the block, at most [`REPS`].
pub fn representatives(k: &[f32], d: usize) -> Vec<usize> {
    let n = k.len() / d.max(1);
    let mut mean = vec![0f32; d];
    for row in k.chunks_exact(d) {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += x / n as f32;
        }
    }
    let keys: Vec<f64> = k.chunks_exact(d).map(|row| dot(row, &mean)).collect();
    argtopk(&keys, REPS.min(n))
        .into_iter()
        .map(|i| i as usize)
        .collect()
}

/// The blocks of `s` tokens kept whatever the query: the first block and
/// the most recent blocks up to half the budget (every block when the
/// budget covers the context). A prefetcher can read these before the
/// query exists.
pub fn fixed_blocks(s: usize, p: BlockParams) -> Vec<bool> {
    let nb = s.div_ceil(p.block.max(1));
    if p.budget >= s {
        return vec![true; nb];
    }
    let local_blocks = ((p.budget / 2).saturating_sub(p.block) / p.block.max(1)).max(1);
    let mut keep = vec![false; nb];
    if let Some(first) = keep.first_mut() {
        *first = true;
    }
    keep[nb.saturating_sub(local_blocks)..].fill(true);
    keep
}

/// Which of the `ceil(s / block)` blocks of `s` tokens are kept:
/// `keep[b]`. The first block and the most recent blocks (up to half the
/// budget) always; the rest of the budget goes to the best candidates by
/// `score(b)` (ties → lower block). Every block is kept when the budget
/// covers the context.
pub fn select_blocks(s: usize, p: BlockParams, mut score: impl FnMut(usize) -> f64) -> Vec<bool> {
    let mut keep = fixed_blocks(s, p);
    if p.budget >= s {
        return keep;
    }
    let nb = keep.len();
    let fixed_blocks = keep.iter().filter(|&&x| x).count();
    // The budget is in tokens: a partly filled newest block leaves room.
    let fixed_tokens: usize = (0..nb)
        .filter(|&b| keep[b])
        .map(|b| p.block.min(s - b * p.block))
        .sum();
    let n_sel = p.budget.saturating_sub(fixed_tokens) / p.block;
    let scores: Vec<f64> = (0..nb)
        .map(|b| if keep[b] { f64::NEG_INFINITY } else { score(b) })
        .collect();
    for b in argtopk(&scores, n_sel.min(nb - fixed_blocks)) {
        keep[b as usize] = true;
    }
    keep
}

/// A block's score for query group `q` (`[g][d]`) from its representative
/// keys `reps` (`[n][d]`): `Σ_h max_rep q_h · k_rep`.
pub fn block_score(q: &[f32], reps: &[f32], d: usize) -> f64 {
    q.chunks_exact(d)
        .map(|q_h| {
            reps.chunks_exact(d)
                .map(|r| dot(q_h, r))
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .sum()
}

/// The representative keys of one block `k` (`[n][d]`), copied out
/// (`[≤ REPS][d]`): what a store keeps in memory for [`block_score`].
pub fn representative_keys(k: &[f32], d: usize) -> Vec<f32> {
    representatives(k, d)
        .into_iter()
        .flat_map(|r| k[r * d..(r + 1) * d].iter().copied())
        .collect()
}

/// The kept tokens (ascending) of `s` tokens for query group `q`.
pub fn block_select(q: &[f32], k: &[f32], shape: GroupShape, p: BlockParams) -> Vec<u32> {
    let d = shape.head_dim;
    let s = k.len() / d.max(1);
    let keep = select_blocks(s, p, |b| {
        let blk = &k[b * p.block * d..((b + 1) * p.block).min(s) * d];
        block_score(q, &representative_keys(blk, d), d)
    });
    (0..s as u32)
        .filter(|&t| keep[t as usize / p.block])
        .collect()
}

/// Block-sparse attention of one KV group (see the module docs); equals
/// [`dense`] when the budget covers the context.
pub fn block_sparse(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: BlockParams,
) -> Result<Vec<f32>, AttentionError> {
    block_sparse_traced(q, k, v, shape, p).map(|t| t.out)
}

/// [`block_sparse`] with the tokens it attended (every token when the
/// budget covers the context).
pub fn block_sparse_traced(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: BlockParams,
) -> Result<TokenTrace, AttentionError> {
    shape.check_inputs(q.len(), k.len(), v.len())?;
    p.validate()?;
    let d = shape.head_dim;
    let tokens = block_select(q, k, shape, p);
    if tokens.len() * d == k.len() {
        let out = dense(q, k, v, shape)?;
        return Ok(TokenTrace { out, tokens });
    }
    let gather = |x: &[f32]| -> Vec<f32> {
        tokens
            .iter()
            .flat_map(|&t| x[t as usize * d..(t as usize + 1) * d].iter().copied())
            .collect()
    };
    let out = dense(q, &gather(k), &gather(v), shape)?;
    Ok(TokenTrace { out, tokens })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::SplitMix64;

    fn draw(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.normal()).collect()
    }

    #[test]
    fn a_budget_covering_the_context_is_dense() {
        let mut rng = SplitMix64::new(1);
        let (s, d, g) = (100, 16, 3);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let (q, k, v) = (
            draw(&mut rng, g * d),
            draw(&mut rng, s * d),
            draw(&mut rng, s * d),
        );
        let p = BlockParams {
            block: 32,
            budget: 128,
        };
        assert_eq!(
            block_sparse(&q, &k, &v, shape, p).unwrap(),
            dense(&q, &k, &v, shape).unwrap()
        );
    }

    #[test]
    fn keeps_sinks_recent_and_the_best_block() {
        let mut rng = SplitMix64::new(2);
        let (s, d) = (32 * 16, 8);
        let shape = GroupShape {
            group: 1,
            head_dim: d,
        };
        let mut k: Vec<f32> = draw(&mut rng, s * d).iter().map(|x| x * 0.1).collect();
        let q: Vec<f32> = (0..d).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        // Block 5 holds keys aligned with q.
        for t in 5 * 32..6 * 32 {
            k[t * d] = 3.0;
        }
        let p = BlockParams {
            block: 32,
            budget: 128,
        };
        let kept = block_select(&q, &k, shape, p);
        assert_eq!(kept.len(), 128);
        let blocks: Vec<u32> = kept.iter().map(|t| t / 32).collect();
        assert!(blocks.contains(&0), "the sinks");
        assert!(blocks.contains(&15), "the most recent block");
        assert!(blocks.contains(&5), "the best block");
        assert!(kept.windows(2).all(|w| w[0] < w[1]));
        let v = draw(&mut rng, s * d);
        let traced = block_sparse_traced(&q, &k, &v, shape, p).unwrap();
        assert_eq!(traced.tokens, kept);
        assert_eq!(traced.out, block_sparse(&q, &k, &v, shape, p).unwrap());
        // The output is dense over exactly the traced tokens.
        let gather = |x: &[f32]| -> Vec<f32> {
            kept.iter()
                .flat_map(|&t| x[t as usize * d..(t as usize + 1) * d].to_vec())
                .collect()
        };
        assert_eq!(
            traced.out,
            dense(&q, &gather(&k), &gather(&v), shape).unwrap()
        );
        let all = BlockParams {
            block: 32,
            budget: s,
        };
        let every = block_sparse_traced(&q, &k, &v, shape, all).unwrap();
        assert_eq!(every.tokens, (0..s as u32).collect::<Vec<_>>());
        assert_eq!(every.out, dense(&q, &k, &v, shape).unwrap());
        assert!(
            block_sparse(
                &q,
                &k,
                &v,
                shape,
                BlockParams {
                    block: 32,
                    budget: 40
                }
            )
            .is_err()
        );
    }

    #[test]
    fn defaults_follow_solidattention() {
        assert_eq!(BlockParams::default_for(8192).budget, 1024);
        assert_eq!(BlockParams::default_for(2048).budget, 512);
        assert_eq!(BlockParams::default_for(100).budget, 64);
    }

    #[test]
    fn representatives_are_in_the_block() {
        let mut rng = SplitMix64::new(3);
        let k = draw(&mut rng, 10 * 4);
        let r = representatives(&k, 4);
        assert_eq!(r.len(), REPS);
        assert!(r.iter().all(|&i| i < 10));
        assert_eq!(representatives(&k[..8], 4).len(), 2);
    }
}
