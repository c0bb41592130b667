//! Attention traces from the real model, for the CSD side of the cost
//! model: what SparF selects depends on the keys and queries, so the
//! simulated points should see real ones.
//!
//! **Recording** ([`record`]): SmolLM2-135M prefills a window of text
//! (WikiText-2 test in the CLI), then decodes the next token; the trace
//! keeps, for every layer, K and V after RoPE (`[kv_heads][s][d]`) and the
//! decode step's q (`[q_heads][d]`).
//!
//! **Format** ([`Trace::save`]/[`Trace::load`]): a folder of `.npy` f32
//! arrays, `k_<layer>.npy` and `v_<layer>.npy` of shape `[kv_heads, s, d]`,
//! `q_<layer>.npy` of shape `[q_heads, d]`.
//!
//! **Scaling to OPT-13B's shapes** ([`Trace::opt_head`]): OPT-13B has 40
//! heads of d = 128 per layer (no GQA); SmolLM2 has 3 KV heads of d = 64
//! (9 query heads) in each of 30 layers, 90 KV heads in all. OPT head `i`
//! of a simulated layer is two SmolLM2 KV heads side by side along d
//! (trace heads `2i` and `2i + 1`, counting layer-major, wrapping at 90),
//! its query the first query head of each of the two groups side by side:
//! the exact score of a token is then the sum of the two heads' scores,
//! and its top tokens are those both heads favour. A context of S tokens
//! takes the last S tokens before the query, so the RoPE distances between
//! the query and its keys are the model's own.

use std::path::Path;

use model::{Attention, AttentionFailure, Logits, Model};

use crate::error::{RunError, input};
use crate::npy::NpyArray;

/// A recorded decode step: every layer's KV and query.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// KV heads per layer.
    pub kv_heads: usize,
    /// Query heads per layer.
    pub q_heads: usize,
    /// Head dimension.
    pub d: usize,
    /// Tokens of context.
    pub s: usize,
    /// Per layer, `[kv_heads][s][d]`.
    pub k: Vec<Vec<f32>>,
    /// Per layer, `[kv_heads][s][d]`.
    pub v: Vec<Vec<f32>>,
    /// Per layer, `[q_heads][d]`.
    pub q: Vec<Vec<f32>>,
}

/// Records prefills, then takes the first decode's queries, answering it
/// with dense attention so the model can finish the step.
#[derive(Default)]
struct Recorder {
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    q: Vec<Vec<f32>>,
    kv_heads: usize,
    d: usize,
}

impl Attention for Recorder {
    fn prefill(&mut self, layer: usize, k: &[f32], v: &[f32]) -> Result<(), AttentionFailure> {
        if self.k.len() != layer {
            return Err(format!("layer {layer} out of order").into());
        }
        self.k.push(k.to_vec());
        self.v.push(v.to_vec());
        Ok(())
    }

    fn decode(
        &mut self,
        layer: usize,
        q: &[f32],
        _k: &[f32],
        _v: &[f32],
    ) -> Result<Vec<f32>, AttentionFailure> {
        if self.q.len() != layer || layer >= self.k.len() {
            return Err(format!("decode of layer {layer} out of order").into());
        }
        self.q.push(q.to_vec());
        let (h, d) = (self.kv_heads, self.d);
        let s = self.k[layer].len() / (h * d);
        let mut out = vec![0f32; q.len()];
        attention::host::dense_f32(
            q,
            &self.k[layer],
            &self.v[layer],
            q.len() / d,
            h,
            s,
            d,
            &mut out,
        )
        .map_err(|e| format!("{e:?}"))?;
        Ok(out)
    }
}

/// Runs `model` over `tokens` (prefill of all but the last, decode of the
/// last) and keeps the trace.
pub fn record(model: &Model, tokens: &[u32]) -> Result<Trace, RunError> {
    if tokens.len() < 2 {
        return Err(input("a trace needs at least two tokens"));
    }
    let c = model.config();
    let mut rec = Recorder {
        kv_heads: c.n_kv_heads,
        d: c.head_dim,
        ..Recorder::default()
    };
    let (prompt, last) = tokens.split_at(tokens.len() - 1);
    model.prefill(prompt, &mut rec, Logits::None)?;
    model.decode(last[0], prompt.len(), &mut rec)?;
    Ok(Trace {
        kv_heads: c.n_kv_heads,
        q_heads: c.n_heads,
        d: c.head_dim,
        s: prompt.len(),
        k: rec.k,
        v: rec.v,
        q: rec.q,
    })
}

fn npy_err(path: &Path, e: impl std::fmt::Display) -> RunError {
    input(format!("{}: {e}", path.display()))
}

impl Trace {
    /// Layers recorded.
    pub fn layers(&self) -> usize {
        self.k.len()
    }

    /// Writes the trace into `dir` (see the module docs).
    pub fn save(&self, dir: &Path) -> Result<(), RunError> {
        std::fs::create_dir_all(dir).map_err(|e| npy_err(dir, e))?;
        for l in 0..self.layers() {
            for (name, data, shape) in [
                ("k", &self.k[l], vec![self.kv_heads, self.s, self.d]),
                ("v", &self.v[l], vec![self.kv_heads, self.s, self.d]),
                ("q", &self.q[l], vec![self.q_heads, self.d]),
            ] {
                let path = dir.join(format!("{name}_{l}.npy"));
                NpyArray::from_f32(shape, data.clone())
                    .and_then(|a| a.write(&path))
                    .map_err(|e| npy_err(&path, e))?;
            }
        }
        Ok(())
    }

    /// Reads a trace written by [`Self::save`]; every layer must have the
    /// same shapes.
    pub fn load(dir: &Path) -> Result<Trace, RunError> {
        let mut t = Trace {
            kv_heads: 0,
            q_heads: 0,
            d: 0,
            s: 0,
            k: Vec::new(),
            v: Vec::new(),
            q: Vec::new(),
        };
        for l in 0.. {
            let kp = dir.join(format!("k_{l}.npy"));
            if !kp.is_file() {
                break;
            }
            let read = |name: &str| {
                let p = dir.join(format!("{name}_{l}.npy"));
                NpyArray::read(&p).map_err(|e| npy_err(&p, e))
            };
            let (k, v, q) = (read("k")?, read("v")?, read("q")?);
            let (ks, qs) = (k.shape.clone(), q.shape.clone());
            if ks.len() != 3 || v.shape != ks || qs.len() != 2 || qs[1] != ks[2] {
                return Err(npy_err(&kp, "shapes do not form a trace layer"));
            }
            if l == 0 {
                (t.kv_heads, t.s, t.d, t.q_heads) = (ks[0], ks[1], ks[2], qs[0]);
            } else if (ks[0], ks[1], ks[2], qs[0]) != (t.kv_heads, t.s, t.d, t.q_heads) {
                return Err(npy_err(&kp, "layer shapes differ"));
            }
            if t.kv_heads == 0 || !t.q_heads.is_multiple_of(t.kv_heads) {
                return Err(npy_err(&kp, "query heads are not a multiple of KV heads"));
            }
            t.k.push(k.to_f32());
            t.v.push(v.to_f32());
            t.q.push(q.to_f32());
        }
        if t.k.is_empty() {
            return Err(input(format!("{}: no k_0.npy: not a trace", dir.display())));
        }
        Ok(t)
    }

    /// Trace KV head number `n` (layer-major, wrapping): `(layer, head)`.
    fn source(&self, n: usize) -> (usize, usize) {
        let n = n % (self.layers() * self.kv_heads);
        (n / self.kv_heads, n % self.kv_heads)
    }

    /// OPT-shaped head `i` of `s` tokens (see the module docs): K and V
    /// `[s][2d]` and q `[2d]`, f32. `None` when `s` exceeds the trace.
    pub fn opt_head(&self, i: usize, s: usize) -> Option<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        if s == 0 || s > self.s {
            return None;
        }
        let d = self.d;
        let group = self.q_heads / self.kv_heads;
        let parts = [self.source(2 * i), self.source(2 * i + 1)];
        let (mut k, mut v, mut q) = (
            Vec::with_capacity(s * 2 * d),
            Vec::with_capacity(s * 2 * d),
            Vec::with_capacity(2 * d),
        );
        for t in self.s - s..self.s {
            for &(l, h) in &parts {
                let at = (h * self.s + t) * d;
                k.extend_from_slice(&self.k[l][at..at + d]);
                v.extend_from_slice(&self.v[l][at..at + d]);
            }
        }
        for &(l, h) in &parts {
            let at = h * group * d;
            q.extend_from_slice(&self.q[l][at..at + d]);
        }
        Some((k, v, q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Trace {
        // 2 layers × 2 KV heads × 3 tokens × d 2, 4 query heads.
        let kv = |l: usize| (0..12).map(|x| (l * 100 + x) as f32).collect::<Vec<f32>>();
        Trace {
            kv_heads: 2,
            q_heads: 4,
            d: 2,
            s: 3,
            k: vec![kv(0), kv(1)],
            v: vec![kv(0), kv(1)],
            q: vec![
                (0..8).map(|x| x as f32).collect(),
                (0..8).map(|x| 50.0 + x as f32).collect(),
            ],
        }
    }

    #[test]
    fn opt_heads_pair_trace_heads_along_d() {
        let t = tiny();
        // Head 0 = (layer 0, head 0) ‖ (layer 0, head 1), last 2 tokens.
        let (k, _, q) = t.opt_head(0, 2).unwrap();
        assert_eq!(k, [2.0, 3.0, 8.0, 9.0, 4.0, 5.0, 10.0, 11.0]);
        // q: first query head of each group (group 2): heads 0 and 2.
        assert_eq!(q, [0.0, 1.0, 4.0, 5.0]);
        // Head 1 = layer 1's heads; head 2 wraps to layer 0.
        assert_eq!(t.opt_head(1, 1).unwrap().0, [104.0, 105.0, 110.0, 111.0]);
        assert_eq!(t.opt_head(2, 3).unwrap(), t.opt_head(0, 3).unwrap());
        assert!(t.opt_head(0, 4).is_none());
    }

    #[test]
    fn save_and_load_round_trip_and_reject_bad_folders() {
        let dir = std::env::temp_dir().join(format!("instinfer-trace-{}", std::process::id()));
        let t = tiny();
        t.save(&dir).unwrap();
        assert_eq!(Trace::load(&dir).unwrap(), t);
        std::fs::remove_file(dir.join("q_1.npy")).unwrap();
        assert!(Trace::load(&dir).is_err(), "missing q");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(Trace::load(&dir).is_err(), "no folder");
    }
}
