//! `Model`: config, tokenizer and weights loaded together, checked against
//! each other.

use std::path::Path;

use super::config::Config;
use super::ops::{rope_freqs, rope_freqs_scaled};
use super::weights::Weights;
use crate::{Gguf, ModelError, QTensor, Tokenizer};

/// A loaded llama-family model (llama, qwen2, qwen3, gemma3) ready to run.
#[derive(Debug)]
pub struct Model {
    pub(crate) config: Config,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) weights: Weights,
    /// RoPE frequencies of the global layers (every layer but gemma3's
    /// sliding-window ones).
    pub(crate) freqs: Vec<f32>,
    /// RoPE frequencies of the sliding-window layers (`rope_theta_swa`).
    pub(crate) freqs_swa: Vec<f32>,
}

impl Model {
    /// Reads and loads the GGUF file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        Self::from_gguf(Gguf::open(path)?)
    }

    /// Loads from a parsed file (the weights are copied out of it).
    pub fn from_gguf(gguf: Gguf) -> Result<Self, ModelError> {
        let config = Config::from_gguf(&gguf)?;
        let tokenizer = Tokenizer::from_gguf(&gguf)?;
        if tokenizer.vocab_size() > config.vocab {
            return Err(ModelError::Config(format!(
                "tokenizer has {} tokens but the embedding only {} rows",
                tokenizer.vocab_size(),
                config.vocab
            )));
        }
        let weights = Weights::load(&gguf, &config)?;
        Ok(Self {
            freqs: rope_freqs_scaled(config.rope_theta, config.head_dim, config.rope_freq_scale),
            freqs_swa: rope_freqs(config.rope_theta_swa, config.head_dim),
            config,
            tokenizer,
            weights,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The matrix producing logits (the embedding when tied).
    pub(crate) fn output(&self) -> &QTensor {
        self.weights.output.as_ref().unwrap_or(&self.weights.embed)
    }

    pub(crate) fn check_token(&self, token: u32) -> Result<(), ModelError> {
        if token as usize >= self.config.vocab {
            return Err(ModelError::TokenOutOfRange {
                id: token,
                vocab: self.config.vocab,
            });
        }
        Ok(())
    }
}
