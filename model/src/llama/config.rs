//! `Config`: the hyper-parameters of a llama-family model, read from
//! `{arch}.*` metadata.

use super::arch::Arch;
use crate::{Gguf, ModelError};

/// Shape and constants of a llama-family model.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Which member of the family (`general.architecture`).
    pub arch: Arch,
    /// Transformer blocks (`block_count`).
    pub n_layers: usize,
    /// Query heads (`attention.head_count`).
    pub n_heads: usize,
    /// Key/value heads (`attention.head_count_kv`; GQA when fewer).
    pub n_kv_heads: usize,
    /// Dimension of one head (`attention.key_length`, else n_embd / n_heads;
    /// qwen3 sets it apart from n_embd / n_heads).
    pub head_dim: usize,
    /// Hidden size (`embedding_length`).
    pub n_embd: usize,
    /// Feed-forward size (`feed_forward_length`).
    pub n_ff: usize,
    /// Vocabulary size (`vocab_size`, else the tokenizer's token count).
    pub vocab: usize,
    /// RoPE base (`rope.freq_base`, default 10000).
    pub rope_theta: f32,
    /// RMSNorm epsilon (`attention.layer_norm_rms_epsilon`).
    pub rms_eps: f32,
    /// Trained context length (`context_length`).
    pub context_len: usize,
}

fn optional<T>(r: Result<T, ModelError>) -> Result<Option<T>, ModelError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ModelError::MissingKey(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Config {
    /// Reads the config of a `llama`, `qwen2` or `qwen3` model; any other
    /// architecture is refused by name.
    pub fn from_gguf(gguf: &Gguf) -> Result<Self, ModelError> {
        let name = gguf.get_str("general.architecture")?;
        let arch = Arch::from_name(name).ok_or_else(|| {
            ModelError::Config(format!(
                "architecture `{name}` is not supported (supported: {})",
                Arch::supported()
            ))
        })?;
        let key = |k: &str| format!("{arch}.{k}");
        let n_heads = gguf.get_usize(&key("attention.head_count"))?;
        let n_embd = gguf.get_usize(&key("embedding_length"))?;
        let n_kv_heads =
            optional(gguf.get_usize(&key("attention.head_count_kv")))?.unwrap_or(n_heads);
        let head_dim = match optional(gguf.get_usize(&key("attention.key_length")))? {
            Some(d) => d,
            None if n_heads > 0 => n_embd / n_heads,
            None => 0,
        };
        let vocab = match optional(gguf.get_usize(&key("vocab_size")))? {
            Some(v) => v,
            None => gguf.get_str_array("tokenizer.ggml.tokens")?.len(),
        };
        if let Some(dv) = optional(gguf.get_usize(&key("attention.value_length")))? {
            if dv != head_dim {
                return Err(ModelError::Config(format!(
                    "value length {dv} differs from key length {head_dim}"
                )));
            }
        }
        let config = Self {
            arch,
            n_layers: gguf.get_usize(&key("block_count"))?,
            n_heads,
            n_kv_heads,
            head_dim,
            n_embd,
            n_ff: gguf.get_usize(&key("feed_forward_length"))?,
            vocab,
            rope_theta: optional(gguf.get_f32(&key("rope.freq_base")))?.unwrap_or(10_000.0),
            rms_eps: gguf.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
            context_len: gguf.get_usize(&key("context_length"))?,
        };
        if let Some(rot) = optional(gguf.get_usize(&key("rope.dimension_count")))? {
            if rot != config.head_dim {
                return Err(ModelError::Config(format!(
                    "partial RoPE ({rot} of {} dims) is not supported",
                    config.head_dim
                )));
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks the numbers are usable together.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::Config(m));
        if self.n_layers == 0
            || self.n_heads == 0
            || self.n_kv_heads == 0
            || self.n_embd == 0
            || self.n_ff == 0
        {
            return bad(format!("zero-sized dimension in {self:?}"));
        }
        if self.head_dim == 0 || self.head_dim % 2 != 0 {
            return bad(format!(
                "head dim {} must be even and non-zero",
                self.head_dim
            ));
        }
        if self.n_heads % self.n_kv_heads != 0 {
            return bad(format!(
                "{} heads do not group over {} KV heads",
                self.n_heads, self.n_kv_heads
            ));
        }
        if self.vocab == 0 || self.context_len == 0 {
            return bad("empty vocabulary or context".into());
        }
        let theta_ok = self.rope_theta.is_finite() && self.rope_theta > 0.0;
        let eps_ok = self.rms_eps.is_finite() && self.rms_eps >= 0.0;
        if !(theta_ok && eps_ok) {
            return bad(format!(
                "rope theta {} / rms eps {}",
                self.rope_theta, self.rms_eps
            ));
        }
        // Keep the products the forward pass forms far from overflow.
        let limit = 1usize << 24;
        if [
            self.n_layers,
            self.n_heads,
            self.head_dim,
            self.n_embd,
            self.n_ff,
            self.vocab,
        ]
        .iter()
        .any(|&d| d > limit)
        {
            return bad(format!("dimension beyond {limit} in {self:?}"));
        }
        Ok(())
    }

    /// Query width: `n_heads · head_dim`.
    pub fn q_dim(&self) -> usize {
        self.n_heads * self.head_dim
    }

    /// Key/value width: `n_kv_heads · head_dim`.
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }

    /// Query heads sharing one KV head.
    pub fn group(&self) -> usize {
        self.n_heads / self.n_kv_heads
    }
}
