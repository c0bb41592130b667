//! The `Attention` seam: where decode-step attention runs (the storage
//! device in InstInfer), and what prefill hands it.

/// Why an attention implementation failed (device errors, transport errors).
pub type AttentionFailure = Box<dyn std::error::Error + Send + Sync>;

/// Attention over the KV cache of one sequence, kept wherever the
/// implementation keeps it.
pub trait Attention {
    /// Prefill: the KV of `n` new tokens of `layer` after RoPE,
    /// `[n_kv_heads][n][head_dim]` each.
    fn prefill(&mut self, layer: usize, k: &[f32], v: &[f32]) -> Result<(), AttentionFailure>;

    /// After [`Self::prefill`] of `layer`: the queries of the prompt's last
    /// `m` positions (after RoPE), `[m][n_heads][head_dim]`, for an
    /// implementation that plans its decode budgets from them. Ignored by
    /// default.
    fn prefill_queries(&mut self, layer: usize, q: &[f32]) -> Result<(), AttentionFailure> {
        let _ = (layer, q);
        Ok(())
    }

    /// One decode token of `layer`: q `[n_heads][head_dim]` (after RoPE),
    /// the new token's k and v `[n_kv_heads][head_dim]` (k after RoPE); the
    /// implementation stores k, v and returns the attention output
    /// `[n_heads][head_dim]`.
    fn decode(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
    ) -> Result<Vec<f32>, AttentionFailure>;

    /// Whether [`Self::decode_window`] is implemented. A model with
    /// sliding-window layers (gemma3) refuses to prefill into an
    /// implementation that says no. False by default.
    fn supports_window(&self) -> bool {
        false
    }

    /// [`Self::decode`] for a sliding-window layer (gemma3): the new token's
    /// k and v are stored as in `decode`, but the query attends only to the
    /// last `window` positions of the layer, its own included (earlier ones
    /// may be dropped). Refused by default, since attending to the whole
    /// cache instead would be silently wrong.
    fn decode_window(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        window: usize,
    ) -> Result<Vec<f32>, AttentionFailure> {
        let _ = (layer, q, k, v);
        Err(format!(
            "sliding-window attention (window {window}) is not supported by this attention implementation"
        )
        .into())
    }
}

/// Which logits a prefill returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logits {
    /// Vocabulary logits of the last prompt position.
    Last,
    /// Logits of every position, `n × vocab` (n·vocab·4 bytes: 200 MB at
    /// n = 1024 for a 49152 vocabulary).
    All,
    /// None (the caller only wants the KV cache filled).
    None,
}
