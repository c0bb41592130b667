//! Tests on a tiny synthetic llama (built in memory with `GgufWriter`), so
//! the forward pass is checked even where the real model file is absent.

use attention::testdata::SplitMix64;

use crate::gguf::{Array, GgufWriter, Value};
use crate::{DenseCache, Gguf, Logits, Model, ModelError, QTensor, TensorKind};

const D: usize = 64;
const FF: usize = 96;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HD: usize = D / HEADS;
const LAYERS: usize = 2;

fn noise(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| (rng.next_f32() * 2.0 - 1.0) * scale)
        .collect()
}

/// GGUF writer for the tiny model; `skip` leaves one tensor out.
fn tiny(skip: Option<&str>) -> GgufWriter {
    let mut w = GgufWriter::new();
    let u32v = |v: usize| Value::U32(v as u32);
    // Byte tokens are found by their mapped spelling; give all 256 of them.
    let map: Vec<String> = {
        let mut shifted = 0u32;
        (0u8..=255)
            .map(|b| match b {
                b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF => char::from(b).to_string(),
                _ => {
                    shifted += 1;
                    char::from_u32(255 + shifted)
                        .map(String::from)
                        .unwrap_or_default()
                }
            })
            .collect()
    };
    let vocab = map.len() + 1;
    let mut all = map;
    all.push("<|end|>".into());
    let mut types = vec![1i32; vocab];
    types[vocab - 1] = 3;
    w.kv("general.architecture", Value::String("llama".into()))
        .kv("llama.block_count", u32v(LAYERS))
        .kv("llama.context_length", u32v(64))
        .kv("llama.embedding_length", u32v(D))
        .kv("llama.feed_forward_length", u32v(FF))
        .kv("llama.attention.head_count", u32v(HEADS))
        .kv("llama.attention.head_count_kv", u32v(KV_HEADS))
        .kv("llama.rope.freq_base", Value::F32(10_000.0))
        .kv("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5))
        .kv("tokenizer.ggml.model", Value::String("gpt2".into()))
        .kv("tokenizer.ggml.pre", Value::String("smollm".into()))
        .kv("tokenizer.ggml.tokens", Value::Array(Array::String(all)))
        .kv("tokenizer.ggml.token_type", Value::Array(Array::I32(types)))
        .kv(
            "tokenizer.ggml.merges",
            Value::Array(Array::String(vec!["a b".into()])),
        )
        .kv("tokenizer.ggml.eos_token_id", u32v(vocab - 1));
    let mut seed = 0;
    let mut add = |w: &mut GgufWriter, name: &str, rows: usize, cols: usize, kind: TensorKind| {
        seed += 1;
        if skip == Some(name) {
            return;
        }
        let values = if rows == 1 {
            vec![1.0; cols]
        } else {
            noise(rows * cols, seed, 0.3)
        };
        let t = QTensor::quantize(kind, rows, cols, &values).unwrap_or_else(|e| panic!("{e}"));
        let dims: Vec<u64> = if rows == 1 {
            vec![cols as u64]
        } else {
            vec![cols as u64, rows as u64]
        };
        w.tensor(name, &dims, kind, t.data().to_vec());
    };
    add(&mut w, "token_embd.weight", vocab, D, TensorKind::Q8_0);
    add(&mut w, "output_norm.weight", 1, D, TensorKind::F32);
    for l in 0..LAYERS {
        let n = |s: &str| format!("blk.{l}.{s}.weight");
        add(&mut w, &n("attn_norm"), 1, D, TensorKind::F32);
        add(&mut w, &n("attn_q"), D, D, TensorKind::Q4_1);
        add(&mut w, &n("attn_k"), KV_HEADS * HD, D, TensorKind::Q4_1);
        add(&mut w, &n("attn_v"), KV_HEADS * HD, D, TensorKind::Q4_1);
        add(&mut w, &n("attn_output"), D, D, TensorKind::Q4_1);
        add(&mut w, &n("ffn_norm"), 1, D, TensorKind::F16);
        add(&mut w, &n("ffn_gate"), FF, D, TensorKind::Q4_1);
        add(&mut w, &n("ffn_up"), FF, D, TensorKind::Q8_0);
        add(&mut w, &n("ffn_down"), D, FF, TensorKind::Q4_1);
    }
    w
}

fn load(w: &GgufWriter) -> Result<Model, ModelError> {
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
