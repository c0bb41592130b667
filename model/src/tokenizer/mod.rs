//! The tokenizers of GGUF vocabularies, chosen by `tokenizer.ggml.model`:
//! byte-level BPE of GPT-2 style (`gpt2`: SmolLM2, Qwen) and SentencePiece
//! BPE (`llama`: Gemma; see `spm`). Loading from metadata, encoding (with
//! or without literal special tokens) and decoding to bytes.
//!
//! GPT-2 pipeline: special tokens (optional) → pre-tokenizer pieces → bytes
//! as single-byte tokens → merges by rank. Identical pieces are merged once
//! per call (a per-word cache), which makes long texts cheap.

mod bpe;
mod bytes;
mod pretokenize;
mod spm;

#[cfg(test)]
mod spm_tests;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use crate::{Gguf, ModelError};
use bpe::Merges;
use pretokenize::PreTokenizer;
use spm::Spm;

/// GGUF `token_type` of control tokens (`<|im_start|>`, `<|endoftext|>`).
pub const TOKEN_TYPE_CONTROL: i32 = 3;
/// GGUF `token_type` of user-defined tokens (matched literally, printed).
pub const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// Marks a byte the vocabulary has no token for; never merges.
const NO_TOKEN: u32 = u32::MAX;

/// A byte-level BPE or SentencePiece BPE tokenizer.
#[derive(Debug)]
pub struct Tokenizer {
    /// The SentencePiece vocabulary (`tokenizer.ggml.model = llama`); the
    /// byte-level fields below are then unused (no merges, no byte ids).
    spm: Option<Spm>,
    tokens: Vec<String>,
    token_type: Vec<i32>,
    merges: Merges,
    /// Single-byte token of each byte; `NO_TOKEN` when the vocabulary has
    /// none (SmolLM2 lacks a few control bytes).
    byte_ids: [u32; 256],
    /// Stand-in for bytes without a token; dropped when `None`.
    unk: Option<u32>,
    char_to_byte: Vec<Option<u8>>,
    /// Literally matched tokens, longest first.
    specials: Vec<(String, u32)>,
    pre: PreTokenizer,
    bos: u32,
    eos: u32,
    add_bos: bool,
}

fn token_id(gguf: &Gguf, key: &str, vocab: usize) -> Result<Option<u32>, ModelError> {
    if !gguf.contains_key(key) {
        return Ok(None);
    }
    let id = gguf.get_u32(key)?;
    if id as usize >= vocab {
        return Err(ModelError::Tokenizer(format!(
            "{key} = {id} is outside the vocabulary of {vocab}"
        )));
    }
    Ok(Some(id))
}

impl Tokenizer {
    /// Reads the `tokenizer.ggml.*` metadata.
    pub fn from_gguf(gguf: &Gguf) -> Result<Self, ModelError> {
        let model = gguf.get_str("tokenizer.ggml.model")?;
        if model != "gpt2" && model != "llama" {
            return Err(ModelError::Tokenizer(format!(
                "tokenizer model `{model}` is not supported (gpt2, llama)"
            )));
        }
        let pre = match gguf.get_str("tokenizer.ggml.pre") {
            _ if model == "llama" => PreTokenizer::Gpt2,
            Ok("smollm") => PreTokenizer::SmolLm,
            Ok("gpt2" | "gpt-2") => PreTokenizer::Gpt2,
            Ok("qwen2") => PreTokenizer::Qwen2,
            Ok(other) => {
                return Err(ModelError::Tokenizer(format!(
                    "pre-tokenizer `{other}` is not supported (smollm, gpt2, qwen2)"
                )));
            }
            Err(ModelError::MissingKey(_)) => PreTokenizer::Gpt2,
            Err(e) => return Err(e),
        };
        let tokens = gguf.get_str_array("tokenizer.ggml.tokens")?.to_vec();
        let vocab = tokens.len();
        if vocab == 0 || vocab > u32::MAX as usize {
            return Err(ModelError::Tokenizer(format!(
                "vocabulary of {vocab} tokens"
            )));
        }
        let token_type = if gguf.contains_key("tokenizer.ggml.token_type") {
            gguf.get_i32_array("tokenizer.ggml.token_type")?.to_vec()
        } else {
            vec![1; vocab]
        };
        if token_type.len() != vocab {
            return Err(ModelError::Tokenizer(format!(
                "{} token types for {vocab} tokens",
                token_type.len()
            )));
        }
        let id_of: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let spm = if model == "llama" {
            let scores = if gguf.contains_key("tokenizer.ggml.scores") {
                let scores = gguf.get_f32_array("tokenizer.ggml.scores")?;
                if scores.len() != vocab {
                    return Err(ModelError::Tokenizer(format!(
                        "{} scores for {vocab} tokens",
                        scores.len()
                    )));
                }
                Some(scores)
            } else {
                None
            };
            let add_space_prefix = match gguf.get_bool("tokenizer.ggml.add_space_prefix") {
                Ok(b) => b,
                Err(ModelError::MissingKey(_)) => true,
                Err(e) => return Err(e),
            };
            Some(Spm::new(&tokens, scores, add_space_prefix))
        } else {
            None
        };
        let merges = if spm.is_some() {
            Merges::default()
        } else if gguf.contains_key("tokenizer.ggml.merges") {
            Merges::new(gguf.get_str_array("tokenizer.ggml.merges")?, &id_of)
        } else {
            Merges::default()
        };
        let mut byte_ids = [NO_TOKEN; 256];
        for (slot, c) in byte_ids
            .iter_mut()
            .zip(bytes::byte_to_char())
            .filter(|_| spm.is_none())
        {
            if let Some(&id) = id_of.get(c.encode_utf8(&mut [0; 4]) as &str) {
                *slot = id;
            }
        }
        let unk = token_id(gguf, "tokenizer.ggml.unknown_token_id", vocab)?;
        let mut specials: Vec<(String, u32)> = tokens
            .iter()
            .zip(&token_type)
            .enumerate()
            .filter(|&(_, (t, &ty))| {
                !t.is_empty() && (ty == TOKEN_TYPE_CONTROL || ty == TOKEN_TYPE_USER_DEFINED)
            })
            .map(|(i, (t, _))| (t.clone(), i as u32))
            .collect();
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let eos = token_id(gguf, "tokenizer.ggml.eos_token_id", vocab)?
            .ok_or_else(|| ModelError::MissingKey("tokenizer.ggml.eos_token_id".into()))?;
        let bos = token_id(gguf, "tokenizer.ggml.bos_token_id", vocab)?.unwrap_or(eos);
        let add_bos = match gguf.get_bool("tokenizer.ggml.add_bos_token") {
            Ok(b) => b,
            Err(ModelError::MissingKey(_)) => false,
            Err(e) => return Err(e),
        };
        Ok(Self {
            spm,
            tokens,
            token_type,
            merges,
            byte_ids,
            unk,
            char_to_byte: bytes::char_to_byte(),
            specials,
            pre,
            bos,
            eos,
            add_bos,
        })
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// End-of-sequence token.
    pub fn eos(&self) -> u32 {
        self.eos
    }

    /// Beginning-of-sequence token (the EOS token when the file has none).
    pub fn bos(&self) -> u32 {
        self.bos
    }

    /// Whether the model expects a BOS token first (`add_bos_token`; false
    /// for SmolLM2, true for Gemma). `encode` never adds one;
    /// [`Self::encode_prompt`] does when this is true.
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// A prompt's ids as the model expects them: BOS first when
    /// [`Self::add_bos`], then `text` through [`Self::encode_with_special`]
    /// (`special`) or [`Self::encode`].
    pub fn encode_prompt(&self, text: &str, special: bool) -> Vec<u32> {
        let mut out = Vec::new();
        if self.add_bos {
            out.push(self.bos);
        }
        out.extend(if special {
            self.encode_with_special(text)
        } else {
            self.encode(text)
        });
        out
    }

    /// Number of merges that can apply.
    pub fn merge_count(&self) -> usize {
        self.merges.len()
    }

    /// The vocabulary string of `id` (in the byte-mapped alphabet).
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// True for control tokens (`token_type` 3).
    pub fn is_control(&self, id: u32) -> bool {
        self.token_type.get(id as usize) == Some(&TOKEN_TYPE_CONTROL)
    }

    /// Encodes `text` as plain text: special-token spellings are tokenized
    /// like any other text.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cache = HashMap::new();
        self.encode_text(text, &mut cache, &mut out);
        out
    }

    /// Encodes `text`, turning literal control and user-defined token
    /// spellings (`<|im_start|>`) into their ids.
    pub fn encode_with_special(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cache = HashMap::new();
        let mut plain_start = 0;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if let Some((s, id)) = self
                .specials
                .iter()
                .find(|(s, _)| rest.starts_with(s.as_str()))
            {
                self.encode_text(&text[plain_start..i], &mut cache, &mut out);
                out.push(*id);
                i += s.len();
                plain_start = i;
            } else {
                i += rest.chars().next().map_or(1, char::len_utf8);
            }
        }
        self.encode_text(&text[plain_start..], &mut cache, &mut out);
        out
    }

    fn encode_text<'a>(
        &self,
        text: &'a str,
        cache: &mut HashMap<&'a str, Vec<u32>>,
        out: &mut Vec<u32>,
    ) {
        if let Some(spm) = &self.spm {
            spm.encode(text, self.unk, out);
            return;
        }
        let mut pieces = Vec::new();
        self.pre.split(text, &mut pieces);
        for piece in pieces {
            let ids = cache.entry(piece).or_insert_with(|| {
                let mut symbols: Vec<u32> =
                    piece.bytes().map(|b| self.byte_ids[b as usize]).collect();
                self.merges.apply(&mut symbols);
                match self.unk {
                    Some(unk) => symbols
                        .iter_mut()
                        .filter(|s| **s == NO_TOKEN)
                        .for_each(|s| *s = unk),
                    None => symbols.retain(|&s| s != NO_TOKEN),
                }
                symbols
            });
            out.extend_from_slice(ids);
        }
    }

    /// The bytes `id` stands for; empty for control tokens and unknown ids.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        if self.is_control(id) {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.push_bytes(id, &mut out);
        out
    }

    fn push_bytes(&self, id: u32, out: &mut Vec<u8>) {
        let Some(text) = self.tokens.get(id as usize) else {
            return;
        };
        if let Some(spm) = &self.spm {
            spm.push_bytes(id, text, out);
            return;
        }
        for c in text.chars() {
            match self.char_to_byte.get(c as usize).copied().flatten() {
                Some(b) => out.push(b),
                None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
        }
    }

    /// Decodes to text (invalid UTF-8 replaced); control tokens are left out.
    /// A SentencePiece vocabulary with `add_space_prefix` loses the space
    /// its encoding put first.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            if !self.is_control(id) {
                self.push_bytes(id, &mut bytes);
            }
        }
        if self.spm.as_ref().is_some_and(|s| s.add_space_prefix) && bytes.first() == Some(&b' ') {
            bytes.remove(0);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Decodes to text with control tokens spelled out (`<|im_end|>`).
    pub fn decode_with_special(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            match self.tokens.get(id as usize) {
                Some(t) if self.is_control(id) => bytes.extend_from_slice(t.as_bytes()),
                _ => self.push_bytes(id, &mut bytes),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
