//! [`KvRecorder`]: keeps the prompt's KV as the model produces it, so one
//! prefill can be replayed into several backends (every method of an
//! evaluation starts from the same dense prefill).

use model::{Attention, AttentionFailure};

/// The prefill KV of every layer, `[kv_heads][n][d]` each, and the
/// queries of its last positions.
#[derive(Debug, Default, Clone)]
pub struct KvRecorder {
    layers: Vec<(Vec<f32>, Vec<f32>)>,
    queries: Vec<Vec<f32>>,
}

impl KvRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hands the recorded KV to `attn`, layer by layer.
    pub fn replay(&self, attn: &mut dyn Attention) -> Result<(), AttentionFailure> {
        for (layer, (k, v)) in self.layers.iter().enumerate() {
            attn.prefill(layer, k, v)?;
            if let Some(q) = self.queries.get(layer).filter(|q| !q.is_empty()) {
                attn.prefill_queries(layer, q)?;
            }
        }
        Ok(())
    }
}

impl Attention for KvRecorder {
    fn prefill(&mut self, layer: usize, k: &[f32], v: &[f32]) -> Result<(), AttentionFailure> {
        if self.layers.len() <= layer {
            self.layers.resize(layer + 1, (Vec::new(), Vec::new()));
        }
        // A second prefill of a layer would interleave heads wrongly.
        if !self.layers[layer].0.is_empty() {
            return Err(format!("layer {layer} recorded twice").into());
        }
        self.layers[layer] = (k.to_vec(), v.to_vec());
        Ok(())
    }

    fn prefill_queries(&mut self, layer: usize, q: &[f32]) -> Result<(), AttentionFailure> {
        if self.queries.len() <= layer {
            self.queries.resize(layer + 1, Vec::new());
        }
        self.queries[layer] = q.to_vec();
        Ok(())
    }

    /// A recorder takes gemma3's sliding-window layers too: a prefill's
    /// attention (windowed or not) is the model's own, and only its K and V
    /// are recorded; the backend the recording is replayed into decodes
    /// them (its `decode_window`).
    fn supports_window(&self) -> bool {
        true
    }

    fn decode(
        &mut self,
        _layer: usize,
        _q: &[f32],
        _k: &[f32],
        _v: &[f32],
    ) -> Result<Vec<f32>, AttentionFailure> {
        Err("a KV recorder only records prefills".into())
    }
}
