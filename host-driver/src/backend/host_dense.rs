//! [`HostDense`]: attention on the host with the f32 reference
//! (`attention::reference`), the yardstick for the device's accuracy.
//!
//! KV is stored rounded to fp16 (and q is rounded too) so the reference
//! sees exactly the inputs the device sees; the only difference left is the
//! arithmetic. Any method of the reference runs here, SparQ included.

use std::collections::HashMap;

use attention::reference;

use super::lengths::Lengths;
use super::{AttentionBackend, BackendError, DecodeStep, ModelShape, round_f16};

/// K and V of one KV head of one layer, `[s][d]` each.
#[derive(Debug, Default, Clone)]
struct HeadKv {
    k: Vec<f32>,
    v: Vec<f32>,
}

/// Host-memory reference backend.
#[derive(Debug, Default)]
pub struct HostDense {
    lengths: Lengths,
    /// `[layer][kv_head]` per sequence.
    kv: HashMap<u32, Vec<Vec<HeadKv>>>,
}

impl HostDense {
    /// An empty backend.
    pub fn new() -> Self {
        Self::default()
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
        let heads = self.heads_mut(seq, layer)?;
        // `[kv_heads][n][d]`: one contiguous span per head.
        let per_head = k.len() / heads.len().max(1);
        for (h, hk) in heads.iter_mut().enumerate() {
            let span = h * per_head..(h + 1) * per_head;
            hk.k.extend(k[span.clone()].iter().copied().map(round_f16));
            hk.v.extend(v[span].iter().copied().map(round_f16));
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
            let heads = self.heads_mut(step.seq, step.layer)?;
            let mut out = Vec::with_capacity(q.len());
            for (h, hk) in heads.iter().enumerate() {
                let q_g = &q[h * g * d..(h + 1) * g * d];
                out.extend(reference::attend_heads(
                    step.method,
                    q_g,
                    &hk.k,
                    &hk.v,
                    g,
                    1,
                    s,
                    d,
                )?);
            }
            outs.push(out);
        }
        Ok(outs)
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.lengths.close(seq)?;
        self.kv.remove(&seq);
        Ok(())
    }

    fn name(&self) -> &str {
        "host-dense"
    }
}
