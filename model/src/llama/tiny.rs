//! Tiny synthetic llama, qwen2, qwen3 and gemma3 models built in memory with
//! `GgufWriter` (`Spec`, `build`), so the forward pass is checked even where
//! no real model file is present; here, the llama's decode-vs-prefill and
//! bad-tensor tests (the architecture tests are in `arch_tests`).

use attention::testdata::SplitMix64;

use crate::gguf::{Array, GgufWriter, Value};
use crate::{DenseCache, Gguf, Logits, Model, ModelError, QTensor, TensorKind};

const D: usize = 64;
const KV_HEADS: usize = 2;
const HD: usize = D / 4;
const LAYERS: usize = 2;

/// Shape and contents of a tiny synthetic model.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spec {
    /// `general.architecture`, also the metadata prefix.
    pub(super) arch: &'static str,
    pub(super) layers: usize,
    pub(super) d: usize,
    pub(super) ff: usize,
    pub(super) heads: usize,
    pub(super) kv_heads: usize,
    /// Written as `key_length`/`value_length` when not `d / heads`.
    pub(super) head_dim: usize,
    pub(super) theta: f32,
    pub(super) eps: f32,
    /// Scale of the `attn_{q,k,v}.bias` noise; no bias tensors when `None`.
    pub(super) bias: Option<f32>,
    /// Gain on the `attn_{q,k}_norm` weights; no such tensors when `None`.
    pub(super) qk_norm: Option<f32>,
    /// No `output.weight`: logits from `token_embd.weight`.
    pub(super) tied: bool,
    /// Mixed quantized kinds (Q8_0, Q4_1, F16); all F32 otherwise.
    pub(super) quantized: bool,
    /// gemma3's `attention.sliding_window`; not written when `None`.
    pub(super) window: Option<usize>,
    /// gemma3's `attention.sliding_window_pattern` (period); not written
    /// when `None` (llama.cpp's default, 6, applies).
    pub(super) swa_period: Option<usize>,
}

impl Spec {
    /// The quantized llama the decode/prefill tests use.
    pub(super) fn llama() -> Self {
        Self {
            arch: "llama",
            layers: LAYERS,
            d: D,
            ff: 96,
            heads: 4,
            kv_heads: KV_HEADS,
            head_dim: HD,
            theta: 10_000.0,
            eps: 1e-5,
            bias: None,
            qk_norm: None,
            tied: false,
            quantized: true,
            window: None,
            swa_period: None,
        }
    }

    /// An F32 qwen2: QKV biases, tied embeddings.
    pub(super) fn qwen2() -> Self {
        Self {
            arch: "qwen2",
            bias: Some(0.5),
            tied: true,
            quantized: false,
            theta: 1_000.0,
            ..Self::llama()
        }
    }

    /// An F32 qwen3 whose head_dim (16) is not d / heads (48 / 4).
    pub(super) fn qwen3() -> Self {
        Self {
            arch: "qwen3",
            d: 48,
            ff: 80,
            qk_norm: Some(1.0),
            quantized: false,
            theta: 1_000.0,
            ..Self::llama()
        }
    }
}

fn noise(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| (rng.next_f32() * 2.0 - 1.0) * scale)
        .collect()
}

impl Spec {
    /// An F32 gemma3: 2 layers, the first with a sliding window of 3
    /// positions and local RoPE base 10000, the second global (base 1e6);
    /// one KV head, head_dim 16 ≠ 48 / 4, tied output.
    pub(super) fn gemma3() -> Self {
        Self {
            arch: "gemma3",
            d: 48,
            ff: 80,
            kv_heads: 1,
            theta: 1_000_000.0,
            eps: 1e-6,
            qk_norm: Some(1.0),
            tied: true,
            quantized: false,
            window: Some(3),
            swa_period: Some(2),
            ..Self::llama()
        }
    }

    /// Whether layer `l` uses the sliding window (llama.cpp's pattern).
    pub(super) fn windowed(&self, l: usize) -> bool {
        let p = self.swa_period.unwrap_or(6);
        self.window.is_some() && (p == 0 || l % p < p - 1)
    }
}

/// The vocabulary: 256 byte tokens (found by their mapped spelling) and an
/// end token.
fn vocabulary() -> Vec<String> {
    let mut shifted = 0u32;
    let mut all: Vec<String> = (0u8..=255)
        .map(|b| match b {
            b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF => char::from(b).to_string(),
            _ => {
                shifted += 1;
                char::from_u32(255 + shifted)
                    .map(String::from)
                    .unwrap_or_default()
            }
        })
        .collect();
    all.push("<|end|>".into());
    all
}

/// Metadata of `s`, keys under its arch prefix.
fn metadata(w: &mut GgufWriter, s: &Spec, vocab: Vec<String>) {
    let u32v = |v: usize| Value::U32(v as u32);
    let key = |k: &str| format!("{}.{k}", s.arch);
    let n = vocab.len();
    let mut types = vec![1i32; n];
    types[n - 1] = 3;
    w.kv("general.architecture", Value::String(s.arch.into()))
        .kv(&key("block_count"), u32v(s.layers))
        .kv(&key("context_length"), u32v(64))
        .kv(&key("embedding_length"), u32v(s.d))
        .kv(&key("feed_forward_length"), u32v(s.ff))
        .kv(&key("attention.head_count"), u32v(s.heads))
        .kv(&key("attention.head_count_kv"), u32v(s.kv_heads))
        .kv(&key("rope.freq_base"), Value::F32(s.theta))
        .kv(&key("attention.layer_norm_rms_epsilon"), Value::F32(s.eps))
        .kv("tokenizer.ggml.model", Value::String("gpt2".into()))
        .kv("tokenizer.ggml.pre", Value::String("smollm".into()))
        .kv("tokenizer.ggml.tokens", Value::Array(Array::String(vocab)))
        .kv("tokenizer.ggml.token_type", Value::Array(Array::I32(types)))
        .kv(
            "tokenizer.ggml.merges",
            Value::Array(Array::String(vec!["a b".into()])),
        )
        .kv("tokenizer.ggml.eos_token_id", u32v(n - 1));
    if let Some(window) = s.window {
        w.kv(&key("attention.sliding_window"), u32v(window));
    }
    if let Some(period) = s.swa_period {
        w.kv(&key("attention.sliding_window_pattern"), u32v(period));
    }
    if s.head_dim * s.heads != s.d {
        w.kv(&key("attention.key_length"), u32v(s.head_dim))
            .kv(&key("attention.value_length"), u32v(s.head_dim));
    }
}

/// GGUF writer for the tiny model `s`; `skip` leaves one tensor out.
pub(super) fn build(s: &Spec, skip: Option<&str>) -> GgufWriter {
    use TensorKind::{F16, F32, Q4_1, Q8_0};
    let mut w = GgufWriter::new();
    let vocab = vocabulary();
    let n_vocab = vocab.len();
    metadata(&mut w, s, vocab);
    let kind = |k: TensorKind| if s.quantized { k } else { F32 };
    let mut seed = 0;
    // Values `around + noise · scale`, each tensor from its own seed.
    let mut add = |w: &mut GgufWriter, name: &str, rows, cols, kind, around: f32, scale| {
        seed += 1;
        if skip == Some(name) {
            return;
        }
        let values: Vec<f32> = noise(rows * cols, seed, scale)
            .into_iter()
            .map(|v| around + v)
            .collect();
        let t = QTensor::quantize(kind, rows, cols, &values).unwrap_or_else(|e| panic!("{e}"));
        let dims: Vec<u64> = if rows == 1 {
            vec![cols as u64]
        } else {
            vec![cols as u64, rows as u64]
        };
        w.tensor(name, &dims, kind, t.data().to_vec());
    };
    let (d, ff, hd) = (s.d, s.ff, s.head_dim);
    let (q_dim, kv_dim) = (s.heads * hd, s.kv_heads * hd);
    add(
        &mut w,
        "token_embd.weight",
        n_vocab,
        d,
        kind(Q8_0),
        0.0,
        0.3,
    );
    if !s.tied {
        add(&mut w, "output.weight", n_vocab, d, kind(Q8_0), 0.0, 0.3);
    }
    add(&mut w, "output_norm.weight", 1, d, F32, 1.0, 0.25);
    for l in 0..s.layers {
        let n = |t: &str| format!("blk.{l}.{t}.weight");
        add(&mut w, &n("attn_norm"), 1, d, F32, 1.0, 0.25);
        add(&mut w, &n("attn_q"), q_dim, d, kind(Q4_1), 0.0, 0.3);
        add(&mut w, &n("attn_k"), kv_dim, d, kind(Q4_1), 0.0, 0.3);
        add(&mut w, &n("attn_v"), kv_dim, d, kind(Q4_1), 0.0, 0.3);
        if let Some(scale) = s.bias {
            let b = |t: &str| format!("blk.{l}.{t}.bias");
            add(&mut w, &b("attn_q"), 1, q_dim, F32, 0.0, scale);
            add(&mut w, &b("attn_k"), 1, kv_dim, F32, 0.0, scale);
            add(&mut w, &b("attn_v"), 1, kv_dim, F32, 0.0, scale);
        }
        if let Some(gain) = s.qk_norm {
            add(&mut w, &n("attn_q_norm"), 1, hd, F32, gain, 0.5 * gain);
            add(&mut w, &n("attn_k_norm"), 1, hd, F32, gain, 0.5 * gain);
        }
        add(&mut w, &n("attn_output"), d, q_dim, kind(Q4_1), 0.0, 0.3);
        if s.arch == "gemma3" {
            add(&mut w, &n("post_attention_norm"), 1, d, F32, 1.0, 0.25);
            add(&mut w, &n("post_ffw_norm"), 1, d, F32, 1.0, 0.25);
        }
        add(&mut w, &n("ffn_norm"), 1, d, kind(F16), 1.0, 0.25);
        add(&mut w, &n("ffn_gate"), ff, d, kind(Q4_1), 0.0, 0.3);
        add(&mut w, &n("ffn_up"), ff, d, kind(Q8_0), 0.0, 0.3);
        add(&mut w, &n("ffn_down"), d, ff, kind(Q4_1), 0.0, 0.3);
    }
    w
}

/// The quantized llama; `skip` leaves one tensor out.
fn tiny(skip: Option<&str>) -> GgufWriter {
    build(&Spec::llama(), skip)
}

pub(super) fn load(w: &GgufWriter) -> Result<Model, ModelError> {
    Model::from_gguf(Gguf::parse(w.to_bytes())?)
}

#[test]
fn tiny_model_decode_matches_prefill() {
    let model = match load(&tiny(None)) {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    };
    let vocab = model.config().vocab;
    let tokens: Vec<u32> = (0..12u32).map(|i| (i * 37 + 5) % vocab as u32).collect();
    let mut cache = DenseCache::new(model.config());
    let all = model
        .prefill(&tokens[..4], &mut cache, Logits::All)
        .expect("prefill");
    let last = model
        .prefill(
            &tokens[..4],
            &mut DenseCache::new(model.config()),
            Logits::Last,
        )
        .expect("prefill");
    let worst = all[3 * vocab..]
        .iter()
        .zip(&last)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-4, "All vs Last differ by {worst}");
    for pos in 4..tokens.len() {
        let step = model.decode(tokens[pos], pos, &mut cache).expect("decode");
        let full = model
            .prefill(
                &tokens[..=pos],
                &mut DenseCache::new(model.config()),
                Logits::Last,
            )
            .expect("prefill");
        let worst = step
            .iter()
            .zip(&full)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-4, "position {pos}: {worst}");
    }
    assert_eq!(cache.len(LAYERS - 1), tokens.len());
}

#[test]
fn tiny_model_missing_or_misshapen_tensors_are_errors() {
    assert!(matches!(
        load(&tiny(Some("blk.1.ffn_down.weight"))),
        Err(ModelError::MissingTensor(name)) if name == "blk.1.ffn_down.weight"
    ));
    let mut w = tiny(Some("output_norm.weight"));
    w.tensor(
        "output_norm.weight",
        &[D as u64 / 2],
        TensorKind::F32,
        vec![0; D * 2],
    );
    assert!(matches!(load(&w), Err(ModelError::TensorShape { .. })));
    let mut w = tiny(None);
    w.kv("llama.attention.head_count_kv", Value::U32(3));
    // A duplicate key is a corrupt file.
    assert!(matches!(load(&w), Err(ModelError::Corrupt { .. })));
}
