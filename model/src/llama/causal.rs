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

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use super::config::Config;
use super::ops::{softmax, weighted_sum};
use crate::quant::{Remote, chunked, default_threads, dots_f32};

/// Positions that share one pass over the keys and values.
const BLOCK: usize = 16;

/// Key and value rows per tile: 16 rows of up to 256 floats stay in L1
/// while every query of the block takes them.
const TILE: usize = 16;

/// Causal attention over a prompt: `q` is `n × q_dim` (token-major), `k`
/// and `v` are `[n_kv_heads][n][head_dim]`; returns `n × q_dim`. With a
/// `window`, position i attends only to positions i+1−window ..= i. The
/// blocks of positions go to the kernel pool's threads (the caller's and
/// its workers, as the matmuls do), the longest first, so that the
/// threads finish together. The inputs are shared with the workers.
pub(crate) fn causal_attention(
    q: Arc<Vec<f32>>,
    k: Arc<Vec<f32>>,
    v: Arc<Vec<f32>>,
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

thread_local! {
    /// A thread's scores (scratch of [`Block::attend`]).
    static SCORES: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Block `b`'s rows of the output (`BLOCK` positions of `q_dim`), written
/// from the start of `out`.
fn attend_block(
    (q, k, v): (&[f32], &[f32], &[f32]),
    n: usize,
    shape: Heads,
    window: Option<usize>,
    b: usize,
    out: &mut [f32],
) {
    let (hd, g) = (shape.d, shape.group);
    let q_dim = shape.kv * g * hd;
    let positions = b * BLOCK..((b + 1) * BLOCK).min(n);
    SCORES.with(|scores| {
        let mut scores = scores.borrow_mut();
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
            block.attend(positions.clone(), &mut scores, out);
        }
    });
}

/// [`causal_attention`] on the shape alone.
fn attend_prompt(
    q: Arc<Vec<f32>>,
    k: Arc<Vec<f32>>,
    v: Arc<Vec<f32>>,
    n: usize,
    shape: Heads,
    window: Option<usize>,
) -> Vec<f32> {
    let q_dim = shape.kv * shape.group * shape.d;
    let blocks = n.div_ceil(BLOCK);
    let threads = default_threads().min(blocks).max(1);
    // Chunk c is block blocks − 1 − c: the longest rows first.
    let rows = move |c: usize| {
        let b = blocks - 1 - c;
        (b, b * BLOCK * q_dim..((b + 1) * BLOCK).min(n) * q_dim)
    };
    let remote: Remote = {
        let (q, k, v) = (Arc::clone(&q), Arc::clone(&k), Arc::clone(&v));
        Arc::new(move |c, buf: &mut Vec<f32>| {
            let (b, r) = rows(c);
            let at = buf.len();
            buf.resize(at + r.len(), 0.0);
            attend_block((&q, &k, &v), n, shape, window, b, &mut buf[at..]);
        })
    };
    let out = RefCell::new(vec![0f32; n * q_dim]);
    chunked(
        blocks,
        threads,
        remote,
        |c| rows(c).1.len(),
        |c| {
            let (b, r) = rows(c);
            let mut out = out.borrow_mut();
            attend_block((&q, &k, &v), n, shape, window, b, &mut out[r]);
        },
        |c, part| out.borrow_mut()[rows(c).1].copy_from_slice(part),
    );
    out.into_inner()
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
                    let got = attend_prompt(
                        Arc::new(q.clone()),
                        Arc::new(k.clone()),
                        Arc::new(v.clone()),
                        n,
                        shape,
                        window,
                    );
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
