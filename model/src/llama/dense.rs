//! Dense f32 attention on the host: one query over a run of keys, the
//! queries of a KV group over the same keys, and `DenseCache`, the host
//! KV cache that implements `Attention` as the reference for the
//! in-storage one. The prompt's causal attention is `causal`'s.

use super::attention::{Attention, AttentionFailure};
use super::config::Config;
use super::ops::{round_f16, softmax, weighted_sum};
use crate::quant::dots_f32;

/// `out = softmax(q·Kᵀ·scale)·V` for one query; `keys`/`values` hold
/// `len` rows of `q.len()` floats. `scores` is scratch. The host's dense
/// decode attention in f32 on the SIMD kernels (`quant::dots_f32`,
/// `quant::weighted_rows`).
pub fn attend_one(q: &[f32], keys: &[f32], values: &[f32], scores: &mut Vec<f32>, out: &mut [f32]) {
    let hd = q.len().max(1);
    let scale = 1.0 / (q.len() as f32).sqrt();
    scores.clear();
    scores.resize(keys.len() / hd, 0.0);
    dots_f32(q, keys, scores);
    scores.iter_mut().for_each(|s| *s *= scale);
    softmax(scores);
    out.fill(0.0);
    weighted_sum(scores, values, out);
}

/// Key (and value) rows per tile of [`attend_group`]: 16 rows of up to
/// 256 floats stay in L1 while every query of the group takes them.
const TILE: usize = 16;

/// [`attend_one`] for each of the queries `qs` (rows of `d`) of a group
/// that shares one KV head, each with `attend_one`'s bits: the keys, then
/// the values, are read once, tile by tile, for all the queries (instead
/// of once per query: Gemma 3's four query heads share one KV head whose
/// keys and values outgrow L2 at a few hundred tokens). `scores` is
/// scratch; `out` gets the queries' outputs in order.
pub fn attend_group(
    qs: &[f32],
    d: usize,
    keys: &[f32],
    values: &[f32],
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let d = d.max(1);
    let s = keys.len() / d;
    out.fill(0.0);
    if s == 0 {
        return;
    }
    let scale = 1.0 / (d as f32).sqrt();
    scores.clear();
    scores.resize(qs.len() / d * s, 0.0);
    for t0 in (0..s).step_by(TILE) {
        let t1 = (t0 + TILE).min(s);
        for (q, sc) in qs.chunks_exact(d).zip(scores.chunks_exact_mut(s)) {
            dots_f32(q, &keys[t0 * d..t1 * d], &mut sc[t0..t1]);
        }
    }
    for sc in scores.chunks_exact_mut(s) {
        sc.iter_mut().for_each(|v| *v *= scale);
        softmax(sc);
    }
    for t0 in (0..s).step_by(TILE) {
        let t1 = (t0 + TILE).min(s);
        for (sc, o) in scores.chunks_exact(s).zip(out.chunks_exact_mut(d)) {
            weighted_sum(&sc[t0..t1], &values[t0 * d..t1 * d], o);
        }
    }
}

/// One KV head's cache: keys and values, each `len × head_dim`.
type HeadCache = (Vec<f32>, Vec<f32>);

/// Host KV cache with dense f32 attention: per layer, per KV head, keys and
/// values as rows of `head_dim`, rounded to fp16 (as is q) like the
/// prompt's in [`causal_attention`]'s caller.
#[derive(Clone, Debug)]
pub struct DenseCache {
    n_heads: usize,
    n_kv_heads: usize,
    head_dim: usize,
    /// `[layer][kv_head]` → (keys, values), each `len × head_dim`.
    layers: Vec<Vec<HeadCache>>,
}

impl DenseCache {
    /// An empty cache shaped for `config`.
    pub fn new(config: &Config) -> Self {
        Self {
            n_heads: config.n_heads,
            n_kv_heads: config.n_kv_heads,
            head_dim: config.head_dim,
            layers: vec![vec![(Vec::new(), Vec::new()); config.n_kv_heads]; config.n_layers],
        }
    }

    /// Tokens cached in `layer` (0 for an unknown layer).
    pub fn len(&self, layer: usize) -> usize {
        self.layers
            .get(layer)
            .and_then(|heads| heads.first())
            .map_or(0, |(k, _)| k.len() / self.head_dim.max(1))
    }

    /// True when no layer holds a token.
    pub fn is_empty(&self) -> bool {
        (0..self.layers.len()).all(|l| self.len(l) == 0)
    }

    /// Forgets every token.
    pub fn clear(&mut self) {
        for (k, v) in self.layers.iter_mut().flatten() {
            k.clear();
            v.clear();
        }
    }

    fn layer_mut(&mut self, layer: usize) -> Result<&mut Vec<HeadCache>, AttentionFailure> {
        let n = self.layers.len();
        self.layers
            .get_mut(layer)
            .ok_or_else(|| format!("layer {layer} of {n}").into())
    }

    /// Stores the new k, v and attends over the last `window` positions
    /// (all of them when `None`).
    fn step(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        window: Option<usize>,
    ) -> Result<Vec<f32>, AttentionFailure> {
        let hd = self.head_dim;
        let (n_heads, n_kv) = (self.n_heads, self.n_kv_heads);
        if q.len() != n_heads * hd || k.len() != n_kv * hd || v.len() != n_kv * hd {
            return Err(
                format!("decode q/k/v of {}/{}/{} floats", q.len(), k.len(), v.len()).into(),
            );
        }
        let heads = self.layer_mut(layer)?;
        for ((hk, hv), (ck, cv)) in k
            .chunks_exact(hd)
            .zip(v.chunks_exact(hd))
            .zip(heads.iter_mut())
        {
            ck.extend_from_slice(hk);
            cv.extend_from_slice(hv);
            let at = ck.len() - hd;
            round_f16(&mut ck[at..]);
            round_f16(&mut cv[at..]);
        }
        let mut q = q.to_vec();
        round_f16(&mut q);
        let group = n_heads / n_kv;
        let mut out = vec![0f32; n_heads * hd];
        let mut scores = Vec::new();
        for (h, (qh, o)) in q.chunks_exact(hd).zip(out.chunks_exact_mut(hd)).enumerate() {
            let (keys, values) = &heads[h / group];
            let len = keys.len() / hd.max(1);
            let first = window.map_or(0, |w| len.saturating_sub(w)) * hd;
            attend_one(qh, &keys[first..], &values[first..], &mut scores, o);
        }
        Ok(out)
    }
}

impl Attention for DenseCache {
    fn prefill(&mut self, layer: usize, k: &[f32], v: &[f32]) -> Result<(), AttentionFailure> {
        let width = self.n_kv_heads * self.head_dim;
        if k.len() != v.len() || !k.len().is_multiple_of(width.max(1)) {
            return Err(format!(
                "prefill k/v of {}/{} floats, not a multiple of {width}",
                k.len(),
                v.len()
            )
            .into());
        }
        let per_head = k.len() / self.n_kv_heads.max(1);
        let heads = self.layer_mut(layer)?;
        for ((hk, hv), (ck, cv)) in k
            .chunks_exact(per_head.max(1))
            .zip(v.chunks_exact(per_head.max(1)))
            .zip(heads)
        {
            let at = ck.len();
            ck.extend_from_slice(hk);
            cv.extend_from_slice(hv);
            round_f16(&mut ck[at..]);
            round_f16(&mut cv[at..]);
        }
        Ok(())
    }

    fn decode(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
    ) -> Result<Vec<f32>, AttentionFailure> {
        self.step(layer, q, k, v, None)
    }

    fn supports_window(&self) -> bool {
        true
    }

    fn decode_window(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        window: usize,
    ) -> Result<Vec<f32>, AttentionFailure> {
        self.step(layer, q, k, v, Some(window))
    }
}
