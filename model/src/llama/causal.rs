//! Causal attention over a prompt (the prefill), in blocks of positions.
//!
//! Every position's query heads attend to the keys up to it (inside the
//! layer's window, if it has one). Position by position, each would read
//! its KV head's keys and values again (Gemma 3's: 256 floats a row, over
//! 500 KiB each at 550 tokens); a block of [`BLOCK`] positions instead
//! takes each tile of keys and values once for all of its queries. Each query keeps [`attend_one`]'s bits: its
//! scores are the same dot products, its softmax runs on its own row, and
//! its output adds the weighted value rows in key order (the sums go on
//! across tiles through `out`, so where the tiles start does not matter).
//!
//! [`attend_one`]: super::dense::attend_one

use std::ops::Range;

use super::config::Config;
use super::ops::{softmax, weighted_sum};
use crate::quant::{default_threads, dots_f32};

/// Positions that share one pass over the keys and values.
const BLOCK: usize = 16;

/// Key and value rows per tile: 16 rows of up to 256 floats stay in L1
/// while every query of the block takes them.
const TILE: usize = 16;

/// Causal attention over a prompt: `q` is `n × q_dim` (token-major), `k`
/// and `v` are `[n_kv_heads][n][head_dim]`; returns `n × q_dim`. With a
/// `window`, position i attends only to positions i+1−window ..= i. The
/// threads take every `threads`-th block of positions, which spreads the
/// causal cost evenly.
pub(crate) fn causal_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n: usize,
    c: &Config,
    window: Option<usize>,
) -> Vec<f32> {
    let heads = Heads {
        kv: c.n_kv_heads,
        group: c.group(),
        d: c.head_dim,
    };
    attend_prompt(q, k, v, n, heads, window)
}

/// A layer's attention heads: KV heads, query heads per KV head, head
/// dimension.
#[derive(Clone, Copy, Debug)]
struct Heads {
    kv: usize,
    group: usize,
    d: usize,
}

/// [`causal_attention`] on the shape alone.
fn attend_prompt(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n: usize,
    shape: Heads,
    window: Option<usize>,
) -> Vec<f32> {
    let (hd, g) = (shape.d, shape.group);
    let q_dim = shape.kv * g * hd;
    let blocks = n.div_ceil(BLOCK);
    let threads = default_threads().min(blocks).max(1);
    // The rows of blocks t, t + threads, t + 2·threads, …
    let part = |t: usize| -> Vec<f32> {
        let mut out = Vec::with_capacity(blocks.div_ceil(threads) * BLOCK * q_dim);
        let mut scores = Vec::new();
        for b in (t..blocks).step_by(threads) {
            let positions = b * BLOCK..((b + 1) * BLOCK).min(n);
            let at = out.len();
            out.resize(at + positions.len() * q_dim, 0.0);
            for kvh in 0..shape.kv {
                let block = Block {
                    q,
                    q_dim,
                    heads: kvh * g * hd..(kvh + 1) * g * hd,
                    d: hd,
                    keys: &k[kvh * n * hd..(kvh + 1) * n * hd],
                    values: &v[kvh * n * hd..(kvh + 1) * n * hd],
                    window,
                };
                block.attend(positions.clone(), &mut scores, &mut out[at..]);
            }
        }
        out
    };
    let parts: Vec<Vec<f32>> = std::thread::scope(|s| {
        let part = &part;
        let handles: Vec<_> = (1..threads).map(|t| s.spawn(move || part(t))).collect();
        let mut parts = vec![part(0)];
        parts.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        );
        parts
    });
    let mut out = vec![0f32; n * q_dim];
    for (t, part) in parts.iter().enumerate() {
        let mut at = 0;
        for b in (t..blocks).step_by(threads) {
            let rows = b * BLOCK * q_dim..((b + 1) * BLOCK).min(n) * q_dim;
            let len = rows.len();
            out[rows].copy_from_slice(&part[at..at + len]);
            at += len;
        }
    }
    out
}

/// One KV head's share of a block: its query heads (`heads`, a range of
/// each position's `q_dim` row) against its keys and values (`n × d`).
struct Block<'a> {
    q: &'a [f32],
    q_dim: usize,
    heads: Range<usize>,
    d: usize,
    keys: &'a [f32],
    values: &'a [f32],
    window: Option<usize>,
}

impl Block<'_> {
    /// The keys position `i` attends to.
    fn span(&self, i: usize) -> Range<usize> {
        self.window.map_or(0, |w| (i + 1).saturating_sub(w))..i + 1
    }

    /// Walks `keys` a tile at a time and, in each tile, every position
    /// of `positions` with the keys `a..b` of the tile it attends to.
    fn tiles(
        &self,
        positions: &Range<usize>,
        keys: &Range<usize>,
        mut each: impl FnMut(usize, usize, usize),
    ) {
        for t0 in keys.clone().step_by(TILE) {
            let tile = t0..(t0 + TILE).min(keys.end);
            for p in positions.clone() {
                let own = self.span(p);
                let (a, b) = (tile.start.max(own.start), tile.end.min(own.end));
                if a < b {
                    each(p, a, b);
                }
            }
        }
    }

    /// The outputs of `positions`' query heads into `out` (their rows of
    /// `q_dim`, from the block's first position; the heads' columns are
    /// overwritten). `scores` is scratch.
    fn attend(&self, positions: Range<usize>, scores: &mut Vec<f32>, out: &mut [f32]) {
        let d = self.d.max(1);
        let g = self.heads.len() / d;
        if positions.is_empty() || g == 0 {
            return;
        }
        let keys = self.span(positions.start).start..positions.end;
        let width = keys.len();
        let scale = 1.0 / (d as f32).sqrt();
        scores.clear();
        scores.resize(positions.len() * g * width, 0.0);
        // Row (position p, head h) of the scores; column j is key keys.start + j.
        let row = |p: usize, h: usize| ((p - positions.start) * g + h) * width;
        let query = |p: usize, h: usize| {
            let at = p * self.q_dim + self.heads.start + h * d;
            &self.q[at..at + d]
        };
        self.tiles(&positions, &keys, |p, a, b| {
            for h in 0..g {
                let r = row(p, h);
                dots_f32(
                    query(p, h),
                    &self.keys[a * d..b * d],
                    &mut scores[r + a - keys.start..r + b - keys.start],
                );
            }
        });
        for p in positions.clone() {
            let own = self.span(p);
            for h in 0..g {
                let r = row(p, h);
                let sc = &mut scores[r + own.start - keys.start..r + own.end - keys.start];
                sc.iter_mut().for_each(|v| *v *= scale);
                softmax(sc);
                let o = (p - positions.start) * self.q_dim + self.heads.start + h * d;
                out[o..o + d].fill(0.0);
            }
        }
        self.tiles(&positions, &keys, |p, a, b| {
            for h in 0..g {
                let r = row(p, h);
                let o = (p - positions.start) * self.q_dim + self.heads.start + h * d;
                weighted_sum(
                    &scores[r + a - keys.start..r + b - keys.start],
                    &self.values[a * d..b * d],
                    &mut out[o..o + d],
                );
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llama::attend_one;

    /// Every position's every head gets `attend_one`'s bits over its own
    /// keys: prompts shorter than, equal to and past a block, with and
    /// without a window, one and several KV heads.
    #[test]
    fn each_query_has_attend_ones_bits() {
        let mut rng = attention::testdata::SplitMix64::new(0x2545_F491_4F6C_DD1D);
        let mut next = move || rng.next_f32() * 4.0 - 2.0;
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for (kv, group, d) in [(1, 4, 32), (3, 3, 16)] {
            for n in [1, 15, 16, 17, 53] {
                for window in [None, Some(5), Some(16), Some(100)] {
                    let shape = Heads { kv, group, d };
                    let q_dim = kv * group * d;
                    let q: Vec<f32> = (0..n * q_dim).map(|_| next()).collect();
                    let k: Vec<f32> = (0..kv * n * d).map(|_| next()).collect();
                    let v: Vec<f32> = (0..kv * n * d).map(|_| next()).collect();
                    let got = attend_prompt(&q, &k, &v, n, shape, window);
                    for i in 0..n {
                        let first = window.map_or(0, |w| (i + 1).saturating_sub(w));
                        for h in 0..kv * group {
                            let kvh = h / group;
                            let keys = &k[(kvh * n + first) * d..(kvh * n + i + 1) * d];
                            let values = &v[(kvh * n + first) * d..(kvh * n + i + 1) * d];
                            let at = i * q_dim + h * d;
                            let mut want = vec![0f32; d];
                            attend_one(&q[at..at + d], keys, values, &mut Vec::new(), &mut want);
                            assert_eq!(
                                bits(&got[at..at + d]),
                                bits(&want),
                                "kv {kv}, n {n}, window {window:?}, position {i}, head {h}"
                            );
                        }
                    }
                }
            }
        }
    }
}
