//! A deliberately plain f64 forward pass for the tiny synthetic models,
//! written from the architectures' definitions and sharing no code with
//! the real one (weights are read straight from the GGUF): the oracle the
//! tiny qwen2/qwen3/llama models are checked against.

use super::tiny::Spec;
use crate::Gguf;

type Matrix = Vec<Vec<f64>>;

fn read(g: &Gguf, name: &str) -> Matrix {
    let t = g.tensor(name).unwrap_or_else(|e| panic!("{e}"));
    let mut row = vec![0f32; t.cols()];
    (0..t.rows())
        .map(|r| {
            t.dequantize_row(r, &mut row);
            row.iter().map(|&v| f64::from(v)).collect()
        })
        .collect()
}

fn vector(g: &Gguf, name: &str) -> Vec<f64> {
    read(g, name).swap_remove(0)
}

fn mat_vec(w: &Matrix, x: &[f64]) -> Vec<f64> {
    w.iter()
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

/// The logits of every position of `tokens`, run causally from position 0.
pub(super) fn logits(s: &Spec, g: &Gguf, tokens: &[u32]) -> Vec<Vec<f64>> {
    let (hd, eps, theta) = (s.head_dim, f64::from(s.eps), f64::from(s.theta));
    let neox = s.arch != "llama";
    let embed = read(g, "token_embd.weight");
    let mut xs: Vec<Vec<f64>> = tokens.iter().map(|&t| embed[t as usize].clone()).collect();
    for l in 0..s.layers {
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
                        head
                    })
                    .collect()
            };
            let qk = s.qk_norm.is_some();
            qs.push(heads(q, qk.then_some("attn_q_norm")));
            ks.push(heads(k, qk.then_some("attn_k_norm")));
            vs.push(v.chunks(hd).map(<[f64]>::to_vec).collect::<Vec<_>>());
        }
        let group = s.heads / s.kv_heads;
        let ffn_norm = vector(g, &name("ffn_norm.weight"));
        let (gate, up, down) = (w("ffn_gate"), w("ffn_up"), w("ffn_down"));
        for (i, x) in xs.iter_mut().enumerate() {
            let mut o = Vec::new();
            for (h, q) in qs[i].iter().enumerate() {
                let kv = h / group;
                let scores: Vec<f64> = (0..=i)
                    .map(|j| q.iter().zip(&ks[j][kv]).map(|(a, b)| a * b).sum::<f64>())
                    .map(|dot| dot / (hd as f64).sqrt())
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|sc| (sc - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                o.extend((0..hd).map(|c| (0..=i).map(|j| e[j] / sum * vs[j][kv][c]).sum::<f64>()));
            }
            x.iter_mut()
                .zip(mat_vec(&wo, &o))
                .for_each(|(a, b)| *a += b);
            let h = rms_norm(x, &ffn_norm, eps);
            let act: Vec<f64> = mat_vec(&gate, &h)
                .iter()
                .zip(mat_vec(&up, &h))
                .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
                .collect();
            x.iter_mut()
                .zip(mat_vec(&down, &act))
                .for_each(|(a, b)| *a += b);
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
