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
    /// Sliding-window attention (gemma3, `attention.sliding_window`): how
    /// many positions, the query's own included, a windowed layer attends
    /// to; `None` when every layer attends to the whole sequence.
    pub sliding_window: Option<usize>,
    /// Per layer: whether it uses [`Self::sliding_window`]. Gemma 3 windows
    /// every layer but each 6th (`attention.sliding_window_pattern`: a
    /// period, or one bool per layer); empty without a window.
    pub swa_layers: Vec<bool>,
    /// RoPE base of the windowed layers (`rope.freq_base_swa`, default
    /// 10000 as llama.cpp hard-codes for Gemma 3).
    pub rope_theta_swa: f32,
    /// Linear RoPE position scale of the global layers (gemma3:
    /// 1 / `rope.scaling.factor`); 1 for every other model.
    pub rope_freq_scale: f32,
    /// Softmax scale of q·k when it is not 1/sqrt(head_dim): Gemma 3 27B
    /// (62 layers) uses 1/sqrt(n_embd / n_heads), as llama.cpp does.
    pub attn_scale: Option<f32>,
    /// Final-logit soft-capping `c·tanh(logit / c)`: llama.cpp applies a
    /// gemma3 `final_logit_softcapping` only when there is no window.
    pub final_softcap: Option<f32>,
}

fn optional<T>(r: Result<T, ModelError>) -> Result<Option<T>, ModelError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ModelError::MissingKey(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Config {
    /// Reads the config of a `llama`, `qwen2`, `qwen3` or `gemma3` model;
    /// any other architecture is refused by name.
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
        if let Some(dv) = optional(gguf.get_usize(&key("attention.value_length")))?
            && dv != head_dim
        {
            return Err(ModelError::Config(format!(
                "value length {dv} differs from key length {head_dim}"
            )));
        }
        let gemma = Gemma::read(gguf, &key, arch.gemma())?;
        let n_layers = gguf.get_usize(&key("block_count"))?;
        let swa_layers = match (gemma.window, &gemma.pattern) {
            (None, _) => Vec::new(),
            (Some(_), Pattern::PerLayer(flags)) if flags.len() == n_layers => flags.clone(),
            (Some(_), Pattern::PerLayer(flags)) => {
                return Err(ModelError::Config(format!(
                    "sliding-window pattern of {} layers for {n_layers}",
                    flags.len()
                )));
            }
            // llama.cpp's `set_swa_pattern`: period 0 windows every layer.
            (Some(_), &Pattern::Period(p)) => {
                (0..n_layers).map(|l| p == 0 || l % p < p - 1).collect()
            }
        };
        let rope_theta = optional(gguf.get_f32(&key("rope.freq_base")))?.unwrap_or(10_000.0);
        let config = Self {
            arch,
            n_layers,
            n_heads,
            n_kv_heads,
            head_dim,
            n_embd,
            n_ff: gguf.get_usize(&key("feed_forward_length"))?,
            vocab,
            rope_theta,
            rms_eps: gguf.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
            context_len: gguf.get_usize(&key("context_length"))?,
            sliding_window: gemma.window,
            swa_layers,
            rope_theta_swa: gemma.theta_swa.unwrap_or(rope_theta),
            rope_freq_scale: gemma.freq_scale,
            attn_scale: (arch.gemma() && n_layers == 62 && n_heads > 0)
                .then(|| 1.0 / ((n_embd / n_heads) as f32).sqrt()),
            final_softcap: gemma.softcap.filter(|_| gemma.window.is_none()),
        };
        if let Some(rot) = optional(gguf.get_usize(&key("rope.dimension_count")))?
            && rot != config.head_dim
        {
            return Err(ModelError::Config(format!(
                "partial RoPE ({rot} of {} dims) is not supported",
                config.head_dim
            )));
        }
        config.validate()?;
        Ok(config)
    }

    /// The window of `layer` when it attends to only the last positions.
    pub fn window(&self, layer: usize) -> Option<usize> {
        self.sliding_window
            .filter(|_| self.swa_layers.get(layer).copied().unwrap_or(false))
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
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(2) {
            return bad(format!(
                "head dim {} must be even and non-zero",
                self.head_dim
            ));
        }
        if !self.n_heads.is_multiple_of(self.n_kv_heads) {
            return bad(format!(
                "{} heads do not group over {} KV heads",
                self.n_heads, self.n_kv_heads
            ));
        }
        if self.vocab == 0 || self.context_len == 0 {
            return bad("empty vocabulary or context".into());
        }
        if self.sliding_window == Some(0) {
            return bad("sliding window of 0 positions".into());
        }
        let theta_ok = [self.rope_theta, self.rope_theta_swa, self.rope_freq_scale]
            .iter()
            .all(|t| t.is_finite() && *t > 0.0)
            && self
                .attn_scale
                .into_iter()
                .chain(self.final_softcap)
                .all(|v| v.is_finite() && v > 0.0);
        let eps_ok = self.rms_eps.is_finite() && self.rms_eps >= 0.0;
        if !(theta_ok && eps_ok) {
            return bad(format!(
                "rope theta {} / {} (scale {}) / rms eps {} / attention scale {:?} / softcap {:?}",
                self.rope_theta,
                self.rope_theta_swa,
                self.rope_freq_scale,
                self.rms_eps,
                self.attn_scale,
                self.final_softcap
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

/// Which layers a sliding window applies to.
enum Pattern {
    /// Every layer but each `p`-th (llama.cpp's `set_swa_pattern(p)`).
    Period(usize),
    /// One flag per layer.
    PerLayer(Vec<bool>),
}

/// The gemma3-only metadata (defaults elsewhere).
struct Gemma {
    window: Option<usize>,
    pattern: Pattern,
    theta_swa: Option<f32>,
    freq_scale: f32,
    softcap: Option<f32>,
}

impl Gemma {
    fn read(gguf: &Gguf, key: &dyn Fn(&str) -> String, gemma: bool) -> Result<Self, ModelError> {
        let mut g = Self {
            window: None,
            pattern: Pattern::Period(6),
            theta_swa: None,
            freq_scale: 1.0,
            softcap: None,
        };
        if !gemma {
            return Ok(g);
        }
        // Absent or 0: no window (llama.cpp's non-iSWA gemma3 graph).
        g.window = optional(gguf.get_usize(&key("attention.sliding_window")))?.filter(|&w| w > 0);
        let pattern = key("attention.sliding_window_pattern");
        if gguf.contains_key(&pattern) {
            g.pattern = match gguf.get_array(&pattern) {
                Ok(crate::gguf::Array::Bool(flags)) => Pattern::PerLayer(flags.clone()),
                Ok(_) => {
                    return Err(ModelError::Config(format!(
                        "{pattern} is neither a period nor one bool per layer"
                    )));
                }
                Err(_) => Pattern::Period(gguf.get_usize(&pattern)?),
            };
        }
        g.theta_swa = Some(optional(gguf.get_f32(&key("rope.freq_base_swa")))?.unwrap_or(10_000.0));
        let scaling = optional(gguf.get_str(&key("rope.scaling.type")))?;
        if let Some(kind) = scaling.filter(|k| !matches!(*k, "none" | "linear")) {
            return Err(ModelError::Config(format!(
                "RoPE scaling `{kind}` is not supported (linear only)"
            )));
        }
        if let Some(factor) = optional(gguf.get_f32(&key("rope.scaling.factor")))?
            && factor != 0.0
            && scaling != Some("none")
        {
            g.freq_scale = 1.0 / factor;
        }
        g.softcap = optional(gguf.get_f32(&key("final_logit_softcapping")))?.filter(|&c| c != 0.0);
        Ok(g)
    }
}
