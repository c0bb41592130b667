//! `Arch`: the members of the llama family this crate runs, and what sets
//! them apart (QKV biases, per-head QK-norm, RoPE pairing, Gemma 3's
//! post-norms, GeGLU and sliding-window layers).

use std::fmt;

/// A supported `general.architecture`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `llama` (SmolLM2): RoPE on adjacent pairs, optional QKV biases.
    Llama,
    /// `qwen2` (Qwen2, Qwen2.5): QKV biases, NEOX RoPE.
    Qwen2,
    /// `qwen3` (Qwen3): per-head RMSNorm of q and k before RoPE, NEOX RoPE.
    Qwen3,
    /// `gemma3` (Gemma 3): embeddings scaled by sqrt(n_embd), QK-norm,
    /// post-attention and post-FFN RMSNorms, GeGLU (tanh GELU), NEOX RoPE,
    /// and sliding-window attention on most layers.
    Gemma3,
}

/// How RoPE pairs a head's dimensions (llama.cpp's `LLAMA_ROPE_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopeStyle {
    /// Adjacent pairs (2i, 2i+1): llama GGUFs, whose converter permutes Q/K
    /// rows for it.
    Normal,
    /// Halves (i, i + head_dim/2), as the Hugging Face weights are laid out.
    Neox,
}

impl Arch {
    /// Every supported architecture.
    pub const ALL: [Arch; 4] = [Arch::Llama, Arch::Qwen2, Arch::Qwen3, Arch::Gemma3];

    /// The architecture named `name`, if supported.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Its `general.architecture` name, also the metadata key prefix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::Gemma3 => "gemma3",
        }
    }

    /// Which RoPE pairing it uses (llama.cpp: NORM for llama, NEOX for qwen
    /// and gemma3).
    pub fn rope_style(self) -> RopeStyle {
        match self {
            Self::Llama => RopeStyle::Normal,
            Self::Qwen2 | Self::Qwen3 | Self::Gemma3 => RopeStyle::Neox,
        }
    }

    /// Whether `attn_{q,k,v}.bias` must be present (qwen2), may be (llama)
    /// or are not used (qwen3): `Some(required)` when loaded.
    pub(crate) fn qkv_bias(self) -> Option<bool> {
        match self {
            Self::Qwen2 => Some(true),
            Self::Llama => Some(false),
            Self::Qwen3 | Self::Gemma3 => None,
        }
    }

    /// Whether q and k are RMS-normalised per head (`attn_{q,k}_norm`).
    pub(crate) fn qk_norm(self) -> bool {
        matches!(self, Self::Qwen3 | Self::Gemma3)
    }

    /// Gemma's block: scaled embeddings, `post_attention_norm` and
    /// `post_ffw_norm`, GeGLU instead of SwiGLU.
    pub(crate) fn gemma(self) -> bool {
        self == Self::Gemma3
    }

    /// The supported names, comma-separated, for error messages.
    pub(crate) fn supported() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
