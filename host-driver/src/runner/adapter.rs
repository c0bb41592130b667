//! [`BackendAttention`]: one sequence of a backend seen by the model as its
//! attention. Prefill KV goes to the backend layer by layer as the model
//! produces it; every decode step of every layer is one backend decode with
//! the new token's K and V and the policy's method for the current length.

use model::{Attention, AttentionFailure};

use crate::backend::{AttentionBackend, DecodeStep, ModelShape};
use crate::policy::Policy;
use attention::shape::Method;

use super::LayerPlan;

/// A backend's sequence as a model's attention.
pub struct BackendAttention<'a> {
    backend: &'a mut dyn AttentionBackend,
    seq: u32,
    shape: ModelShape,
    policy: Policy,
    /// Tokens stored per layer.
    lens: Vec<usize>,
    /// Σ over decode steps of the fraction of dense's KV elements read.
    read_fraction_sum: f64,
    steps: usize,
    /// Σ and count over decode steps with a flash count (and a dense page
    /// to compare with): page reads and bus bytes over dense's.
    page_fraction: Mean,
    bus_fraction: Mean,
    /// Per-layer k (`policy.per_layer`).
    plan: Option<LayerPlan>,
}

impl std::fmt::Debug for BackendAttention<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendAttention")
            .field("backend", &self.backend.name())
            .field("seq", &self.seq)
            .field("policy", &self.policy)
            .field("lens", &self.lens)
            .finish()
    }
}

impl<'a> BackendAttention<'a> {
    /// Opens sequence `seq` of `shape` on `backend`.
    pub fn open(
        backend: &'a mut dyn AttentionBackend,
        seq: u32,
        shape: ModelShape,
        policy: Policy,
    ) -> Result<Self, crate::backend::BackendError> {
        backend.open(seq, shape)?;
        Ok(Self {
            backend,
            seq,
            shape,
            policy,
            lens: vec![0; shape.layers],
            read_fraction_sum: 0.0,
            steps: 0,
            page_fraction: Mean::default(),
            bus_fraction: Mean::default(),
            plan: policy.per_layer.then(|| LayerPlan::new(shape.layers)),
        })
    }

    /// Closes the sequence.
    pub fn close(self) -> Result<(), crate::backend::BackendError> {
        self.backend.close(self.seq)
    }

    /// Tokens stored in layer 0.
    pub fn len(&self) -> usize {
        self.lens.first().copied().unwrap_or(0)
    }

    /// Whether nothing is stored yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Mean fraction of dense's KV elements read per decode step.
    pub fn mean_read_fraction(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.read_fraction_sum / self.steps as f64
        }
    }

    /// Mean over decode steps of the flash pages read ÷ dense's (see
    /// [`crate::backend::flash`]); `None` if the backend counts no flash or
    /// dense read no page at any step.
    pub fn mean_page_fraction(&self) -> Option<f64> {
        self.page_fraction.get()
    }

    /// Mean over decode steps of the NAND-bus bytes ÷ dense's; `None` as
    /// for [`Self::mean_page_fraction`].
    pub fn mean_bus_fraction(&self) -> Option<f64> {
        self.bus_fraction.get()
    }

    /// The per-layer plan, if the policy asks for one.
    pub fn plan(&self) -> Option<&LayerPlan> {
        self.plan.as_ref()
    }

    /// The backend.
    pub fn backend(&mut self) -> &mut dyn AttentionBackend {
        self.backend
    }
}

impl Attention for BackendAttention<'_> {
    fn prefill(&mut self, layer: usize, k: &[f32], v: &[f32]) -> Result<(), AttentionFailure> {
        let row = self.shape.kv_heads * self.shape.head_dim;
        let len = self
            .lens
            .get_mut(layer)
            .ok_or_else(|| format!("layer {layer} out of range"))?;
        self.backend.append(self.seq, layer, k, v)?;
        *len += k.len() / row.max(1);
        if let Some(plan) = self.plan.as_mut() {
            plan.keys(layer, k);
        }
        Ok(())
    }

    fn prefill_queries(&mut self, layer: usize, q: &[f32]) -> Result<(), AttentionFailure> {
        let n = self.lens.get(layer).copied().unwrap_or(0);
        let method = self.policy.method(n, self.shape.head_dim);
        if let Some(plan) = self.plan.as_mut() {
            plan.queries(layer, q, self.shape, method);
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

    /// Sliding-window layers (gemma3) run the `local` method over the
    /// window, whatever the policy: a backend that cannot (the drive)
    /// refuses the step with its own error.
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

impl BackendAttention<'_> {
    /// One decode step of `layer`: the policy's method (and the per-layer
    /// plan), or `local` over the last `window` tokens.
    fn step(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        window: Option<usize>,
    ) -> Result<Vec<f32>, AttentionFailure> {
        let d = self.shape.head_dim;
        let s = self
            .lens
            .get(layer)
            .ok_or_else(|| format!("layer {layer} out of range"))?
            + 1;
        let mut method = self.policy.method(s, d);
        if let Some(plan) = &self.plan {
            method = plan.apply(layer, method, s);
        }
        if let Some(window) = window {
            method = Method::Local { window };
        }
        let step = DecodeStep {
            seq: self.seq,
            layer,
            q,
            kv_new: Some((k, v)),
            method,
        };
        let mut out = self.backend.decode(&[step])?;
        self.lens[layer] = s;
        self.read_fraction_sum += self
            .backend
            .last_read_fraction()
            .unwrap_or_else(|| self.policy.read_fraction(s, d));
        self.steps += 1;
        if let Some(f) = self.backend.last_flash() {
            self.page_fraction.add(f.page_fraction());
            self.bus_fraction.add(f.bus_fraction());
        }
        out.pop()
            .ok_or_else(|| "the backend returned no output".into())
    }
}

/// A running mean of the values that exist.
#[derive(Clone, Copy, Debug, Default)]
struct Mean {
    sum: f64,
    n: usize,
}

impl Mean {
    fn add(&mut self, x: Option<f64>) {
        if let Some(x) = x {
            self.sum += x;
            self.n += 1;
        }
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}
