//! A deliberately plain f64 forward pass for the tiny synthetic models,
//! written from the architectures' definitions and sharing no code with
//! the real one (weights are read straight from the GGUF): the oracle the
//! tiny qwen2/qwen3/llama/gemma3 models are checked against. `Skip` leaves
//! out one gemma3 feature, to show the real forward pass depends on it.

use super::tiny::Spec;
use crate::Gguf;

/// Rows of dequantized weights, and how ggml quantizes the input of a
/// matrix of that kind before the dot products: blocks of 32 to 8 bits
/// with an f16 scale (Q8_0/Q8_1), blocks of 256 with an f32 scale whose
/// largest element maps to −127 (Q8_K), or not at all (float kinds).
struct Matrix {
    rows: Vec<Vec<f64>>,
    input: Option<usize>,
}

fn read(g: &Gguf, name: &str) -> Matrix {
    let t = g.tensor(name).unwrap_or_else(|e| panic!("{e}"));
    let mut row = vec![0f32; t.cols()];
    let rows = (0..t.rows())
        .map(|r| {
            t.dequantize_row(r, &mut row);
            row.iter().map(|&v| f64::from(v)).collect()
        })
        .collect();
    let input = match t.kind().block_len() {
        1 => None,
        n => Some(n),
    };
    Matrix { rows, input }
}

fn vector(g: &Gguf, name: &str) -> Vec<f64> {
    read(g, name).rows.swap_remove(0)
}

/// `x` as the 8-bit quantized input ggml gives a matrix's rows.
fn quantize_input(x: &[f64], block: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for b in x.chunks(block) {
        let b: Vec<f32> = b.iter().map(|v| *v as f32).collect();
        if block == 32 {
            let amax = b.iter().fold(0f32, |a, v| a.max(v.abs()));
            let d = amax / 127.0;
            let id = if d == 0.0 { 0.0 } else { 1.0 / d };
            let d16 = f64::from(half::f16::from_f32(d).to_f32());
            out.extend(b.iter().map(|v| f64::from((v * id).round()) * d16));
        } else {
            let max = b
                .iter()
                .fold(0f32, |m, v| if v.abs() > m.abs() { *v } else { m });
            if max == 0.0 {
                out.extend(b.iter().map(|_| 0.0));
                continue;
            }
            let iscale = -127.0 / max;
            let d = f64::from(1.0 / iscale);
            out.extend(
                b.iter()
                    .map(|v| f64::from((iscale * v).round_ties_even().min(127.0)) * d),
            );
        }
    }
    out
}

fn mat_vec(w: &Matrix, x: &[f64]) -> Vec<f64> {
    let q;
    let x = match w.input {
        Some(block) => {
            q = quantize_input(x, block);
            &q[..]
        }
        None => x,
    };
    w.rows
        .iter()
        .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
        .collect()
}

fn rms_norm(x: &[f64], w: &[f64], eps: f64) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let s = 1.0 / (ms + eps).sqrt();
    x.iter().zip(w).map(|(v, g)| v * s * g).collect()
}

/// RoPE on one head: llama pairs (2i, 2i+1), qwen pairs (i, i + hd/2).
fn rope(head: &mut [f64], pos: usize, theta: f64, neox: bool) {
    let hd = head.len();
    for i in 0..hd / 2 {
        let angle = pos as f64 * theta.powf(-2.0 * i as f64 / hd as f64);
        let (a, b) = if neox {
            (i, i + hd / 2)
        } else {
            (2 * i, 2 * i + 1)
        };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * angle.cos() - x1 * angle.sin();
        head[b] = x0 * angle.sin() + x1 * angle.cos();
    }
}

/// gemma3 features the reference can leave out.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Skip {
    /// Embeddings not scaled by sqrt(n_embd).
    pub(super) embed_scale: bool,
    /// No `post_attention_norm` / `post_ffw_norm`.
    pub(super) post_norms: bool,
    /// Windowed layers attend to every earlier position.
    pub(super) window: bool,
}

/// q, k and v attend in fp16, the KV cache's precision.
fn f16_round(mut x: Vec<f64>) -> Vec<f64> {
    x.iter_mut()
        .for_each(|v| *v = f64::from(half::f16::from_f32(*v as f32).to_f32()));
    x
}

/// GELU, tanh form.
fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
}

/// The logits of every position of `tokens`, run causally from position 0.
pub(super) fn logits(s: &Spec, g: &Gguf, tokens: &[u32]) -> Vec<Vec<f64>> {
    logits_skipping(s, g, tokens, Skip::default())
}

/// [`logits`] without the features `skip` names.
pub(super) fn logits_skipping(s: &Spec, g: &Gguf, tokens: &[u32], skip: Skip) -> Vec<Vec<f64>> {
    let (hd, eps) = (s.head_dim, f64::from(s.eps));
    let neox = s.arch != "llama";
    let gemma = s.arch == "gemma3";
    let embed = read(g, "token_embd.weight");
    let scale = if gemma && !skip.embed_scale {
        (s.d as f64).sqrt()
    } else {
        1.0
    };
    let mut xs: Vec<Vec<f64>> = tokens
        .iter()
        .map(|&t| embed.rows[t as usize].iter().map(|v| v * scale).collect())
        .collect();
    for l in 0..s.layers {
        // Windowed gemma3 layers: local RoPE base 10000 and a window.
        let window = (s.windowed(l) && !skip.window).then(|| s.window.unwrap_or(usize::MAX));
        let theta = if s.windowed(l) {
            10_000.0
        } else {
            f64::from(s.theta)
        };
        let post = |t: &str| {
            (gemma && !skip.post_norms).then(|| vector(g, &format!("blk.{l}.{t}.weight")))
        };
        let (post_attn, post_ffw) = (post("post_attention_norm"), post("post_ffw_norm"));
        let name = |t: &str| format!("blk.{l}.{t}");
        let w = |t: &str| read(g, &name(&format!("{t}.weight")));
        let (wq, wk, wv, wo) = (w("attn_q"), w("attn_k"), w("attn_v"), w("attn_output"));
        let attn_norm = vector(g, &name("attn_norm.weight"));
        // Per position: q, k, v after bias, QK-norm and RoPE, one Vec per head.
        let mut qs = Vec::new();
        let mut ks = Vec::new();
        let mut vs = Vec::new();
        for (pos, x) in xs.iter().enumerate() {
            let h = rms_norm(x, &attn_norm, eps);
            let mut qkv = [mat_vec(&wq, &h), mat_vec(&wk, &h), mat_vec(&wv, &h)];
            if s.bias.is_some() {
                for (out, t) in qkv.iter_mut().zip(["attn_q", "attn_k", "attn_v"]) {
                    let b = vector(g, &name(&format!("{t}.bias")));
                    out.iter_mut().zip(&b).for_each(|(o, b)| *o += b);
                }
            }
            let [q, k, v] = qkv;
            let heads = |x: Vec<f64>, norm: Option<&str>| -> Vec<Vec<f64>> {
                let nw = norm.map(|t| vector(g, &name(&format!("{t}.weight"))));
                x.chunks(hd)
                    .map(|head| {
                        let mut head = match &nw {
                            Some(nw) => rms_norm(head, nw, eps),
                            None => head.to_vec(),
                        };
                        rope(&mut head, pos, theta, neox);
                        f16_round(head)
                    })
                    .collect()
            };
            let qk = s.qk_norm.is_some();
            qs.push(heads(q, qk.then_some("attn_q_norm")));
            ks.push(heads(k, qk.then_some("attn_k_norm")));
            vs.push(
                v.chunks(hd)
                    .map(|c| f16_round(c.to_vec()))
                    .collect::<Vec<_>>(),
            );
        }
        let group = s.heads / s.kv_heads;
        let ffn_norm = vector(g, &name("ffn_norm.weight"));
        let (gate, up, down) = (w("ffn_gate"), w("ffn_up"), w("ffn_down"));
        for (i, x) in xs.iter_mut().enumerate() {
            let mut o = Vec::new();
            let first = window.map_or(0, |w| (i + 1).saturating_sub(w));
            for (h, q) in qs[i].iter().enumerate() {
                let kv = h / group;
                let scores: Vec<f64> = (first..=i)
                    .map(|j| q.iter().zip(&ks[j][kv]).map(|(a, b)| a * b).sum::<f64>())
                    .map(|dot| dot / (hd as f64).sqrt())
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|sc| (sc - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                o.extend((0..hd).map(|c| {
                    (first..=i)
                        .map(|j| e[j - first] / sum * vs[j][kv][c])
                        .sum::<f64>()
                }));
            }
            let mut attn_out = mat_vec(&wo, &o);
            if let Some(w) = &post_attn {
                attn_out = rms_norm(&attn_out, w, eps);
            }
            x.iter_mut().zip(attn_out).for_each(|(a, b)| *a += b);
            let h = rms_norm(x, &ffn_norm, eps);
            let act: Vec<f64> = mat_vec(&gate, &h)
                .iter()
                .zip(mat_vec(&up, &h))
                .map(|(g, u)| {
                    if gemma {
                        gelu(*g) * u
                    } else {
                        g / (1.0 + (-g).exp()) * u
                    }
                })
                .collect();
            let mut ffn_out = mat_vec(&down, &act);
            if let Some(w) = &post_ffw {
                ffn_out = rms_norm(&ffn_out, w, eps);
            }
            x.iter_mut().zip(ffn_out).for_each(|(a, b)| *a += b);
        }
    }
    let out = read(
        g,
        if s.tied {
            "token_embd.weight"
        } else {
            "output.weight"
        },
    );
    let norm = vector(g, "output_norm.weight");
    xs.iter()
        .map(|x| mat_vec(&out, &rms_norm(x, &norm, eps)))
        .collect()
}
