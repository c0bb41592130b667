//! Loading the weights of a llama-family model from GGUF tensors, every
//! shape checked against the config (dims listed `ne[0]` first:
//! `[cols, rows]`). Which optional tensors exist depends on the `Arch`.

use super::config::Config;
use crate::{Gguf, ModelError, QTensor};

/// One transformer block's weights.
#[derive(Debug)]
pub(crate) struct Layer {
    pub(crate) attn_norm: Vec<f32>,
    pub(crate) wq: QTensor,
    pub(crate) wk: QTensor,
    pub(crate) wv: QTensor,
    pub(crate) wo: QTensor,
    /// Q/K/V biases (`attn_{q,k,v}.bias`: qwen2, optional for llama).
    pub(crate) qkv_bias: Option<QkvBias>,
    /// Per-head RMSNorm weights of q and k, `head_dim` each (qwen3).
    pub(crate) qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    /// RMSNorm weights applied to the attention output and to the FFN
    /// output before each residual add (gemma3's `post_attention_norm`,
    /// `post_ffw_norm`; stored with Gemma's +1 already added).
    pub(crate) post_norms: Option<(Vec<f32>, Vec<f32>)>,
    pub(crate) ffn_norm: Vec<f32>,
    pub(crate) gate: QTensor,
    pub(crate) up: QTensor,
    pub(crate) down: QTensor,
}

/// Biases added to the Q, K and V projections.
#[derive(Debug)]
pub(crate) struct QkvBias {
    pub(crate) q: Vec<f32>,
    pub(crate) k: Vec<f32>,
    pub(crate) v: Vec<f32>,
}

/// All weights.
#[derive(Debug)]
pub(crate) struct Weights {
    pub(crate) embed: QTensor,
    /// `output.weight` when present; tied to `embed` otherwise.
    pub(crate) output: Option<QTensor>,
    pub(crate) output_norm: Vec<f32>,
    pub(crate) layers: Vec<Layer>,
}

fn check_dims(gguf: &Gguf, name: &str, expected: &[usize]) -> Result<(), ModelError> {
    let info = gguf
        .tensor_info(name)
        .ok_or_else(|| ModelError::MissingTensor(name.to_owned()))?;
    let expected: Vec<u64> = expected.iter().map(|&d| d as u64).collect();
    if info.dims != expected {
        return Err(ModelError::TensorShape {
            name: name.to_owned(),
            expected,
            found: info.dims.clone(),
        });
    }
    Ok(())
}

/// A `rows × cols` matrix stored as dims `[cols, rows]`.
fn matrix(gguf: &Gguf, name: &str, rows: usize, cols: usize) -> Result<QTensor, ModelError> {
    check_dims(gguf, name, &[cols, rows])?;
    gguf.tensor(name)
}

/// A vector of `len` floats (any supported kind, decoded).
fn vector(gguf: &Gguf, name: &str, len: usize) -> Result<Vec<f32>, ModelError> {
    check_dims(gguf, name, &[len])?;
    let t = gguf.tensor(name)?;
    let mut out = vec![0f32; len];
    if t.rows() == 1 {
        t.dequantize_row(0, &mut out);
    }
    Ok(out)
}

/// The Q/K/V biases of block `i`: `None` when the arch has none, or when
/// they are optional and `attn_q.bias` is absent.
fn qkv_bias(gguf: &Gguf, c: &Config, i: usize) -> Result<Option<QkvBias>, ModelError> {
    let n = |s: &str| format!("blk.{i}.{s}.bias");
    match c.arch.qkv_bias() {
        None => return Ok(None),
        Some(false) if gguf.tensor_info(&n("attn_q")).is_none() => return Ok(None),
        Some(_) => {}
    }
    Ok(Some(QkvBias {
        q: vector(gguf, &n("attn_q"), c.q_dim())?,
        k: vector(gguf, &n("attn_k"), c.kv_dim())?,
        v: vector(gguf, &n("attn_v"), c.kv_dim())?,
    }))
}

impl Weights {
    pub(crate) fn load(gguf: &Gguf, c: &Config) -> Result<Self, ModelError> {
        let (d, ff) = (c.n_embd, c.n_ff);
        let layers = (0..c.n_layers)
            .map(|i| {
                let n = |s: &str| format!("blk.{i}.{s}.weight");
                Ok(Layer {
                    attn_norm: vector(gguf, &n("attn_norm"), d)?,
                    wq: matrix(gguf, &n("attn_q"), c.q_dim(), d)?,
                    wk: matrix(gguf, &n("attn_k"), c.kv_dim(), d)?,
                    wv: matrix(gguf, &n("attn_v"), c.kv_dim(), d)?,
                    wo: matrix(gguf, &n("attn_output"), d, c.q_dim())?,
                    qkv_bias: qkv_bias(gguf, c, i)?,
                    qk_norm: if c.arch.qk_norm() {
                        Some((
                            vector(gguf, &n("attn_q_norm"), c.head_dim)?,
                            vector(gguf, &n("attn_k_norm"), c.head_dim)?,
                        ))
                    } else {
                        None
                    },
                    post_norms: if c.arch.gemma() {
                        Some((
                            vector(gguf, &n("post_attention_norm"), d)?,
                            vector(gguf, &n("post_ffw_norm"), d)?,
                        ))
                    } else {
                        None
                    },
                    ffn_norm: vector(gguf, &n("ffn_norm"), d)?,
                    gate: matrix(gguf, &n("ffn_gate"), ff, d)?,
                    up: matrix(gguf, &n("ffn_up"), ff, d)?,
                    down: matrix(gguf, &n("ffn_down"), d, ff)?,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        let output = match gguf.tensor_info("output.weight") {
            Some(_) => Some(matrix(gguf, "output.weight", c.vocab, d)?),
            None => None,
        };
        Ok(Self {
            embed: matrix(gguf, "token_embd.weight", c.vocab, d)?,
            output,
            output_norm: vector(gguf, "output_norm.weight", d)?,
            layers,
        })
    }
}
