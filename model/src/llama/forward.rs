//! The forward pass: batched prefill (dense causal attention here, every
//! layer's K/V handed to the `Attention` implementation) and single-token
//! decode (attention delegated to it). The llama/qwen architectures differ
//! only in how one position's q, k, v are shaped before attention
//! (`shape_qkv`); gemma3 adds scaled embeddings, post-norms, GeGLU and
//! sliding-window layers (`Attention::decode_window`).

use std::sync::Arc;

use super::arch::RopeStyle;
use super::attention::{Attention, Logits};
use super::causal::causal_attention;
use super::model::Model;
use super::ops::{
    Angles, gelu_mul, rms_norm, rms_norm_heads, rope_at, rope_neox_at, round_f16, silu_mul,
};
use super::weights::Layer;
use crate::quant::Gate;
use crate::{ModelError, QTensor};

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

/// RoPE angle tables of a run of positions ([`Model::rope_angles`]).
struct RopeAngles {
    global: Angles,
    local: Option<Angles>,
}

impl Model {
    /// The RoPE angles of `positions`, for the global layers and (when
    /// the model has windowed layers) for theirs.
    fn rope_angles(&self, positions: std::ops::Range<usize>) -> RopeAngles {
        let c = &self.config;
        let windowed = (0..c.n_layers).any(|l| c.window(l).is_some());
        RopeAngles {
            global: Angles::new(positions.clone(), &self.freqs),
            local: windowed.then(|| Angles::new(positions, &self.freqs_swa)),
        }
    }

    /// One position's q, k, v after the projections of layer `l`: biases
    /// (qwen2), per-head QK-norm (qwen3, gemma3), then RoPE in the arch's
    /// pairing with `angles` (gemma3's windowed layers with their own
    /// base), then q scaled when the softmax scale is not 1/sqrt(head_dim)
    /// (Gemma 3 27B).
    fn shape_qkv(
        &self,
        l: usize,
        pos: usize,
        angles: &RopeAngles,
        q: &mut [f32],
        k: &mut [f32],
        v: &mut [f32],
    ) {
        let layer = &self.weights.layers[l];
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
            RopeStyle::Normal => rope_at,
            RopeStyle::Neox => rope_neox_at,
        };
        let table = match (c.window(l), &angles.local) {
            (Some(_), Some(local)) => local,
            _ => &angles.global,
        };
        rotate(q, pos, table, c.head_dim);
        rotate(k, pos, table, c.head_dim);
        if let Some(scale) = c.attn_scale {
            // The attention applies 1/sqrt(head_dim) itself.
            let f = scale * (c.head_dim as f32).sqrt();
            q.iter_mut().for_each(|x| *x *= f);
        }
    }

    /// Gemma scales the embedded tokens by sqrt(n_embd).
    fn scale_embedding(&self, x: &mut [f32]) {
        if self.config.arch.gemma() {
            let s = (self.config.n_embd as f32).sqrt();
            x.iter_mut().for_each(|v| *v *= s);
        }
    }

    /// The attention output (`out`, rows of n_embd) added to the residual
    /// `x`, after gemma3's `post_attention_norm`.
    fn add_attention(&self, layer: &Layer, x: &mut [f32], out: &mut [f32]) {
        if let Some((post_attn, _)) = &layer.post_norms {
            rms_norm_heads(out, post_attn, self.config.rms_eps);
        }
        add(x, out);
    }

    /// The FFN of `h` (normed; `batch` rows of n_embd through the matmul
    /// kernels, one row through matvec when `None`) added to the residual
    /// `x`: SwiGLU, or GeGLU with gemma3's `post_ffw_norm`. `gate`/`up` are
    /// scratch of n_ff per row, `tmp` of n_embd per row.
    #[allow(clippy::too_many_arguments)]
    fn add_ffn(
        &self,
        layer: &Layer,
        batch: Option<usize>,
        x: &mut [f32],
        h: &[f32],
        gate: &mut [f32],
        up: &mut [f32],
        tmp: &mut [f32],
    ) {
        let act: Gate = match &layer.post_norms {
            Some(_) => gelu_mul,
            None => silu_mul,
        };
        match batch {
            None => {
                QTensor::matvec_group(&[&layer.gate, &layer.up], h, &mut [gate, &mut *up]);
                act(gate, up);
            }
            // The prompt's activation runs in the matmul's parts.
            Some(rows) => QTensor::matmul_gated(&layer.gate, &layer.up, h, rows, gate, act),
        }
        match batch {
            None => layer.down.matvec(gate, tmp),
            Some(rows) => layer.down.matmul(gate, rows, tmp),
        }
        if let Some((_, post_ffw)) = &layer.post_norms {
            rms_norm_heads(tmp, post_ffw, self.config.rms_eps);
        }
        add(x, tmp);
    }

    /// Gemma's final-logit soft-capping, when configured.
    fn softcap(&self, logits: &mut [f32]) {
        if let Some(cap) = self.config.final_softcap {
            logits.iter_mut().for_each(|v| *v = cap * (*v / cap).tanh());
        }
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
        if let Some(l) = (0..c.n_layers).find(|&l| c.window(l).is_some())
            && !attn.supports_window()
        {
            return Err(ModelError::Attention {
                    layer: l,
                    source: format!(
                        "{} uses sliding-window attention, which this attention implementation does not support",
                        c.arch
                    )
                    .into(),
                });
        }
        let (d, hd) = (c.n_embd, c.head_dim);
        let w = &self.weights;
        let mut x = vec![0f32; n * d];
        for (row, &t) in x.chunks_exact_mut(d).zip(tokens) {
            w.embed.dequantize_row(t as usize, row);
            self.scale_embedding(row);
        }
        let mut h = vec![0f32; n * d];
        let mut q = vec![0f32; n * c.q_dim()];
        let mut k = vec![0f32; n * c.kv_dim()];
        let mut v = vec![0f32; n * c.kv_dim()];
        let mut tmp = vec![0f32; n * d];
        let mut gate = vec![0f32; n * c.n_ff];
        // The prompt's up projections stay inside the gated matmul's parts.
        let mut up = Vec::new();
        let angles = self.rope_angles(0..n);
        for (l, layer) in w.layers.iter().enumerate() {
            for (xi, hi) in x.chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                rms_norm(xi, &layer.attn_norm, c.rms_eps, hi);
            }
            QTensor::matmul_group(
                &[&layer.wq, &layer.wk, &layer.wv],
                &h,
                n,
                &mut [&mut q, &mut k, &mut v],
            );
            for (pos, ((qi, ki), vi)) in q
                .chunks_exact_mut(c.q_dim())
                .zip(k.chunks_exact_mut(c.kv_dim()))
                .zip(v.chunks_exact_mut(c.kv_dim()))
                .enumerate()
            {
                self.shape_qkv(l, pos, &angles, qi, ki, vi);
            }
            let mut kh = to_head_major(&k, n, c.n_kv_heads, hd);
            let mut vh = to_head_major(&v, n, c.n_kv_heads, hd);
            // The prompt attends in the KV cache's precision, as decode does.
            round_f16(&mut q);
            round_f16(&mut kh);
            round_f16(&mut vh);
            attn.prefill(l, &kh, &vh)
                .map_err(|source| ModelError::Attention { layer: l, source })?;
            let m = n.min(PLANNING_QUERIES);
            attn.prefill_queries(l, &q[(n - m) * c.q_dim()..])
                .map_err(|source| ModelError::Attention { layer: l, source })?;
            // The attention's threads share q, k and v; q comes back for
            // the next layer (every worker is done with it by then).
            let shared = Arc::new(std::mem::take(&mut q));
            let o = causal_attention(
                Arc::clone(&shared),
                Arc::new(kh),
                Arc::new(vh),
                n,
                c,
                c.window(l),
            );
            q = Arc::try_unwrap(shared).unwrap_or_else(|s| s.to_vec());
            layer.wo.matmul(&o, n, &mut tmp);
            self.add_attention(layer, &mut x, &mut tmp);
            for (xi, hi) in x.chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                rms_norm(xi, &layer.ffn_norm, c.rms_eps, hi);
            }
            self.add_ffn(layer, Some(n), &mut x, &h, &mut gate, &mut up, &mut tmp);
        }
        let out = self.output();
        Ok(match logits {
            Logits::None => Vec::new(),
            Logits::Last => {
                let mut hn = vec![0f32; d];
                rms_norm(&x[(n - 1) * d..], &w.output_norm, c.rms_eps, &mut hn);
                let mut logits = vec![0f32; out.rows()];
                out.matvec(&hn, &mut logits);
                self.softcap(&mut logits);
                logits
            }
            Logits::All => {
                for (xi, hi) in x.chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                    rms_norm(xi, &w.output_norm, c.rms_eps, hi);
                }
                let mut logits = vec![0f32; n * out.rows()];
                out.matmul(&h, n, &mut logits);
                self.softcap(&mut logits);
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
        self.scale_embedding(&mut x);
        let mut h = vec![0f32; d];
        let mut q = vec![0f32; c.q_dim()];
        let mut k = vec![0f32; c.kv_dim()];
        let mut v = vec![0f32; c.kv_dim()];
        let mut tmp = vec![0f32; d];
        let mut gate = vec![0f32; c.n_ff];
        let mut up = vec![0f32; c.n_ff];
        let angles = self.rope_angles(pos..pos + 1);
        for (l, layer) in w.layers.iter().enumerate() {
            rms_norm(&x, &layer.attn_norm, c.rms_eps, &mut h);
            QTensor::matvec_group(
                &[&layer.wq, &layer.wk, &layer.wv],
                &h,
                &mut [&mut q, &mut k, &mut v],
            );
            self.shape_qkv(l, pos, &angles, &mut q, &mut k, &mut v);
            let o = match c.window(l) {
                Some(window) => attn.decode_window(l, &q, &k, &v, window),
                None => attn.decode(l, &q, &k, &v),
            }
            .map_err(|source| ModelError::Attention { layer: l, source })?;
            if o.len() != c.q_dim() {
                return Err(ModelError::Attention {
                    layer: l,
                    source: format!("returned {} floats, expected {}", o.len(), c.q_dim()).into(),
                });
            }
            layer.wo.matvec(&o, &mut tmp);
            self.add_attention(layer, &mut x, &mut tmp);
            rms_norm(&x, &layer.ffn_norm, c.rms_eps, &mut h);
            self.add_ffn(layer, None, &mut x, &h, &mut gate, &mut up, &mut tmp);
        }
        rms_norm(&x, &w.output_norm, c.rms_eps, &mut h);
        let out = self.output();
        let mut logits = vec![0f32; out.rows()];
        out.matvec(&h, &mut logits);
        self.softcap(&mut logits);
        Ok(logits)
    }
}
