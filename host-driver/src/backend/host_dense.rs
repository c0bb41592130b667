//! [`HostDense`]: attention on the host, either with the f32 reference
//! (`attention::reference`, the yardstick for the device's accuracy) or
//! with the device's integer engine model (`attention::engine`, which must
//! give exactly what the device gives).
//!
//! KV is stored rounded to fp16 (and q is rounded too) so both see exactly
//! the inputs the device sees. The reference runs every method, SparQ,
//! local window and H2O (with its per-head eviction state) included; the
//! engine model runs what the device runs: dense and SparF.

use std::collections::HashMap;

use attention::shape::{BasisKind, GroupShape, Method};
use attention::{engine, reference};

use super::lengths::Lengths;
use super::{AttentionBackend, BackendError, DecodeStep, ModelShape, round_f16, to_f16_bits};

/// K and V of one KV head of one layer, `[s][d]` each (as f32 and as
/// the fp16 bits the engine model reads), and its H2O state.
#[derive(Debug, Default, Clone)]
struct HeadKv {
    k: Vec<f32>,
    v: Vec<f32>,
    k_bits: Vec<u16>,
    v_bits: Vec<u16>,
    h2o: reference::H2o,
    /// SparF+: the basis of the keys present at its first step (the
    /// prefill), and K expressed in it.
    basis: Option<(BasisKind, reference::Basis)>,
    k_rot: Vec<f32>,
}

/// Which arithmetic a [`HostDense`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arithmetic {
    /// The f32/f64 reference.
    #[default]
    Reference,
    /// The device's bit-exact integer engine model.
    Engine,
}

/// Host-memory backend.
#[derive(Debug, Default)]
pub struct HostDense {
    lengths: Lengths,
    arithmetic: Arithmetic,
    /// `[layer][kv_head]` per sequence.
    kv: HashMap<u32, Vec<Vec<HeadKv>>>,
    /// What the last SparQ or SparF+ step read, as a fraction of dense.
    last_read: Option<f64>,
    /// What the guardrail did.
    pub guard: GuardStats,
}

/// How often the guardrail widened k, and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardStats {
    /// KV-head steps of SparF+.
    pub heads: u64,
    /// Of those, the ones where k was widened.
    pub fired: u64,
    /// K and V elements read beyond the nominal k.
    pub extra_elements: u64,
}

impl HostDense {
    /// An empty backend computing with the f32 reference.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty backend computing with the device's engine model.
    pub fn engine() -> Self {
        Self {
            arithmetic: Arithmetic::Engine,
            ..Self::default()
        }
    }

    /// The arithmetic in use.
    pub fn arithmetic(&self) -> Arithmetic {
        self.arithmetic
    }

    fn heads_mut(&mut self, seq: u32, layer: usize) -> Result<&mut Vec<HeadKv>, BackendError> {
        self.kv
            .get_mut(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?
            .get_mut(layer)
            .ok_or(BackendError::UnknownSequence(seq))
    }

    /// Appends `[kv_heads][n][d]` buffers, rounded to fp16.
    fn store(
        &mut self,
        seq: u32,
        layer: usize,
        k: &[f32],
        v: &[f32],
        n: usize,
    ) -> Result<(), BackendError> {
        let arithmetic = self.arithmetic;
        let heads = self.heads_mut(seq, layer)?;
        // `[kv_heads][n][d]`: one contiguous span per head.
        let per_head = k.len() / heads.len().max(1);
        for (h, hk) in heads.iter_mut().enumerate() {
            let span = h * per_head..(h + 1) * per_head;
            hk.k.extend(k[span.clone()].iter().copied().map(round_f16));
            hk.v.extend(v[span.clone()].iter().copied().map(round_f16));
            if arithmetic == Arithmetic::Engine {
                hk.k_bits.extend(to_f16_bits(&k[span.clone()]));
                hk.v_bits.extend(to_f16_bits(&v[span]));
            }
        }
        self.lengths.grow(seq, layer, n);
        Ok(())
    }
}

impl AttentionBackend for HostDense {
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        self.lengths.open(seq, shape)?;
        self.kv.insert(
            seq,
            vec![vec![HeadKv::default(); shape.kv_heads]; shape.layers],
        );
        Ok(())
    }

    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError> {
        let n = self.lengths.check_append(seq, layer, k, v)?;
        if n == 0 {
            return Ok(());
        }
        self.store(seq, layer, k, v, n)
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.lengths.check_batch(batch)?;
        let mut outs = Vec::with_capacity(batch.len());
        for step in batch {
            let shape = self.lengths.shape(step.seq)?;
            if let Some((k, v)) = step.kv_new {
                self.store(step.seq, step.layer, k, v, 1)?;
            }
            let s = self.lengths.len(step.seq, step.layer)?;
            let (g, d) = (shape.group(), shape.head_dim);
            let q: Vec<f32> = step.q.iter().copied().map(round_f16).collect();
            let arithmetic = self.arithmetic;
            let mut guard = self.guard;
            let heads = self.heads_mut(step.seq, step.layer)?;
            let mut out = Vec::with_capacity(q.len());
            let group = GroupShape {
                group: g,
                head_dim: d,
            };
            let mut read = 0usize;
            let n_heads = heads.len();
            for (h, hk) in heads.iter_mut().enumerate() {
                let q_g = &q[h * g * d..(h + 1) * g * d];
                match (arithmetic, step.method) {
                    (Arithmetic::Reference, Method::SparQ(p)) => {
                        let t = reference::sparq_traced(q_g, &hk.k, &hk.v, group, p)?;
                        read += t.read_elements(s, d);
                        out.extend(t.out);
                    }
                    (Arithmetic::Reference, Method::H2o(p)) => {
                        out.extend(hk.h2o.step(q_g, &hk.k, &hk.v, group, p)?);
                    }
                    (Arithmetic::Reference, Method::SparFPlus(o)) => {
                        if hk.basis.as_ref().is_none_or(|(kind, _)| *kind != o.basis) {
                            // The basis of the keys stored at the first
                            // step: the prefill (and the step's token).
                            let b = reference::Basis::of_kind(o.basis, &hk.k, d);
                            hk.k_rot = b.rotate_key(&hk.k);
                            hk.basis = Some((o.basis, b));
                        }
                        let Some((_, basis)) = hk.basis.as_ref() else {
                            unreachable!("set above");
                        };
                        let have = hk.k_rot.len();
                        hk.k_rot.extend(basis.rotate_key(&hk.k[have..]));
                        let t = reference::sparf_plus(
                            q_g, &hk.k, &hk.k_rot, &hk.v, group, o.p, o.guard, basis,
                        )?;
                        read += o.p.r * s + 2 * t.tokens.len() * d;
                        if t.tokens.len() > o.p.k.min(s) {
                            guard.fired += 1;
                            guard.extra_elements += (2 * (t.tokens.len() - o.p.k) * d) as u64;
                        }
                        guard.heads += 1;
                        out.extend(t.out);
                    }
                    (Arithmetic::Reference, method) => out.extend(reference::attend_heads(
                        method, q_g, &hk.k, &hk.v, g, 1, s, d,
                    )?),
                    (Arithmetic::Engine, method) => {
                        let raw = engine::attend_heads(
                            method,
                            &to_f16_bits(q_g),
                            &hk.k_bits,
                            &hk.v_bits,
                            g,
                            1,
                            s,
                            d,
                        )?;
                        out.extend(raw.into_iter().map(engine::fx_to_f32));
                    }
                }
            }
            self.guard = guard;
            self.last_read = matches!(step.method, Method::SparQ(_) | Method::SparFPlus(_))
                .then(|| read as f64 / (n_heads * 2 * s * d).max(1) as f64);
            outs.push(out);
        }
        Ok(outs)
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.lengths.close(seq)?;
        self.kv.remove(&seq);
        Ok(())
    }

    fn last_read_fraction(&self) -> Option<f64> {
        self.last_read
    }

    fn name(&self) -> &str {
        match self.arithmetic {
            Arithmetic::Reference => "host",
            Arithmetic::Engine => "host-engine",
        }
    }
}
