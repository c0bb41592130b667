//! The forward pass: batched prefill (dense causal attention here, every
//! layer's K/V handed to the `Attention` implementation) and single-token
//! decode (attention delegated to it). The architectures differ only in
//! how one position's q, k, v are shaped before attention (`shape_qkv`).

use super::arch::RopeStyle;
use super::attention::{Attention, Logits};
use super::dense::causal_attention;
use super::model::Model;
use super::ops::{rms_norm, rms_norm_heads, rope, rope_neox, silu_mul};
use super::weights::Layer;
use crate::ModelError;

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// `[n][heads][hd]` → `[heads][n][hd]`.
fn to_head_major(x: &[f32], n: usize, heads: usize, hd: usize) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    for i in 0..n {
        for h in 0..heads {
            let src = &x[(i * heads + h) * hd..(i * heads + h + 1) * hd];
            out[(h * n + i) * hd..(h * n + i + 1) * hd].copy_from_slice(src);
        }
    }
    out
}

/// Prompt positions whose queries `Attention::prefill_queries` gets.
const PLANNING_QUERIES: usize = 16;

impl Model {
    /// One position's q, k, v after the projections: biases (qwen2), per-head
    /// QK-norm (qwen3), then RoPE in the arch's pairing.
    fn shape_qkv(&self, layer: &Layer, pos: usize, q: &mut [f32], k: &mut [f32], v: &mut [f32]) {
        let c = &self.config;
        if let Some(b) = &layer.qkv_bias {
            add(q, &b.q);
            add(k, &b.k);
            add(v, &b.v);
        }
        if let Some((qn, kn)) = &layer.qk_norm {
            rms_norm_heads(q, qn, c.rms_eps);
            rms_norm_heads(k, kn, c.rms_eps);
        }
        let rotate = match c.arch.rope_style() {
            RopeStyle::Normal => rope,
            RopeStyle::Neox => rope_neox,
        };
        rotate(q, pos, &self.freqs, c.head_dim);
        rotate(k, pos, &self.freqs, c.head_dim);
    }

    /// Runs the prompt (positions 0..n) through every layer with dense
    /// causal attention computed here, handing each layer's K/V to
    /// `attn.prefill` as soon as that layer's K/V exist. Returns logits:
    /// `Last` → vocab floats for position n−1; `All` → n × vocab (n·vocab·4
    /// bytes: 200 MB at n = 1024); `None` → empty.
    ///
    /// Working memory besides the logits is about n·(4·n_embd + 3·n_ff)
    /// floats (≈ 28 MB at n = 1024 for SmolLM2-135M).
    pub fn prefill(
        &self,
        tokens: &[u32],
        attn: &mut dyn Attention,
        logits: Logits,
    ) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let n = tokens.len();
        if n == 0 {
            return Err(ModelError::Input("empty prompt".into()));
        }
        if n > c.context_len {
            return Err(ModelError::ContextOverflow {
                pos: n - 1,
                context_len: c.context_len,
            });
        }
        tokens.iter().try_for_each(|&t| self.check_token(t))?;
        let (d, hd) = (c.n_embd, c.head_dim);
        let w = &self.weights;
        let mut x = vec![0f32; n * d];
        for (row, &t) in x.chunks_exact_mut(d).zip(tokens) {
            w.embed.dequantize_row(t as usize, row);
        }
        let mut h = vec![0f32; n * d];
        let mut q = vec![0f32; n * c.q_dim()];
        let mut k = vec![0f32; n * c.kv_dim()];
        let mut v = vec![0f32; n * c.kv_dim()];
        let mut tmp = vec![0f32; n * d];
        let mut gate = vec![0f32; n * c.n_ff];
        let mut up = vec![0f32; n * c.n_ff];
        for (l, layer) in w.layers.iter().enumerate() {
            for (xi, hi) in x.chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                rms_norm(xi, &layer.attn_norm, c.rms_eps, hi);
            }
            layer.wq.matmul(&h, n, &mut q);
            layer.wk.matmul(&h, n, &mut k);
            layer.wv.matmul(&h, n, &mut v);
            for (pos, ((qi, ki), vi)) in q
                .chunks_exact_mut(c.q_dim())
                .zip(k.chunks_exact_mut(c.kv_dim()))
                .zip(v.chunks_exact_mut(c.kv_dim()))
                .enumerate()
            {
                self.shape_qkv(layer, pos, qi, ki, vi);
            }
            let kh = to_head_major(&k, n, c.n_kv_heads, hd);
            let vh = to_head_major(&v, n, c.n_kv_heads, hd);
            attn.prefill(l, &kh, &vh)
                .map_err(|source| ModelError::Attention { layer: l, source })?;
            let m = n.min(PLANNING_QUERIES);
            attn.prefill_queries(l, &q[(n - m) * c.q_dim()..])
                .map_err(|source| ModelError::Attention { layer: l, source })?;
            let o = causal_attention(&q, &kh, &vh, n, c);
            layer.wo.matmul(&o, n, &mut tmp);
            add(&mut x, &tmp);
            for (xi, hi) in x.chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                rms_norm(xi, &layer.ffn_norm, c.rms_eps, hi);
            }
            layer.gate.matmul(&h, n, &mut gate);
            layer.up.matmul(&h, n, &mut up);
            silu_mul(&mut gate, &up);
            layer.down.matmul(&gate, n, &mut tmp);
            add(&mut x, &tmp);
        }
        let out = self.output();
        Ok(match logits {
            Logits::None => Vec::new(),
            Logits::Last => {
                let mut hn = vec![0f32; d];
                rms_norm(&x[(n - 1) * d..], &w.output_norm, c.rms_eps, &mut hn);
                let mut logits = vec![0f32; out.rows()];
                out.matvec(&hn, &mut logits);
                logits
            }
            Logits::All => {
                for (xi, hi) in x.chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                    rms_norm(xi, &w.output_norm, c.rms_eps, hi);
                }
                let mut logits = vec![0f32; n * out.rows()];
                out.matmul(&h, n, &mut logits);
                logits
            }
        })
    }

    /// One decode step for `token` at position `pos` (= tokens so far):
    /// attention through `attn.decode` for every layer; returns the vocab
    /// logits.
    pub fn decode(
        &self,
        token: u32,
        pos: usize,
        attn: &mut dyn Attention,
    ) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        self.check_token(token)?;
        if pos >= c.context_len {
            return Err(ModelError::ContextOverflow {
                pos,
                context_len: c.context_len,
            });
        }
        let d = c.n_embd;
        let w = &self.weights;
        let mut x = vec![0f32; d];
        w.embed.dequantize_row(token as usize, &mut x);
        let mut h = vec![0f32; d];
        let mut q = vec![0f32; c.q_dim()];
        let mut k = vec![0f32; c.kv_dim()];
        let mut v = vec![0f32; c.kv_dim()];
        let mut tmp = vec![0f32; d];
        let mut gate = vec![0f32; c.n_ff];
        let mut up = vec![0f32; c.n_ff];
        for (l, layer) in w.layers.iter().enumerate() {
            rms_norm(&x, &layer.attn_norm, c.rms_eps, &mut h);
            layer.wq.matvec(&h, &mut q);
            layer.wk.matvec(&h, &mut k);
            layer.wv.matvec(&h, &mut v);
            self.shape_qkv(layer, pos, &mut q, &mut k, &mut v);
            let o = attn
                .decode(l, &q, &k, &v)
                .map_err(|source| ModelError::Attention { layer: l, source })?;
            if o.len() != c.q_dim() {
                return Err(ModelError::Attention {
                    layer: l,
                    source: format!("returned {} floats, expected {}", o.len(), c.q_dim()).into(),
                });
            }
            layer.wo.matvec(&o, &mut tmp);
            add(&mut x, &tmp);
            rms_norm(&x, &layer.ffn_norm, c.rms_eps, &mut h);
            layer.gate.matvec(&h, &mut gate);
            layer.up.matvec(&h, &mut up);
            silu_mul(&mut gate, &up);
            layer.down.matvec(&gate, &mut tmp);
            add(&mut x, &tmp);
        }
        rms_norm(&x, &w.output_norm, c.rms_eps, &mut h);
        let out = self.output();
        let mut logits = vec![0f32; out.rows()];
        out.matvec(&h, &mut logits);
        Ok(logits)
    }
}
