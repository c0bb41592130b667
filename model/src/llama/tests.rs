//! Forward-pass tests on the real SmolLM2 file (skipped when absent).

use crate::test_support::{real_model, wiki_text};
use crate::{Attention, AttentionFailure, DenseCache, Logits, Model, ModelError};

fn argmax(x: &[f32]) -> u32 {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best as u32
}

fn greedy(model: &Model, prompt: &[u32], steps: usize) -> Vec<u32> {
    let mut cache = DenseCache::new(model.config());
    let mut logits = model
        .prefill(prompt, &mut cache, Logits::Last)
        .expect("prefill");
    let mut out = Vec::new();
    for i in 0..steps {
        let t = argmax(&logits);
        out.push(t);
        if i + 1 < steps {
            logits = model
                .decode(t, prompt.len() + i, &mut cache)
                .expect("decode");
        }
    }
    out
}

#[test]
fn config_matches_smollm2() {
    let Some(model) = real_model() else { return };
    let c = model.config();
    assert_eq!(
        (c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim),
        (30, 9, 3, 64)
    );
    assert_eq!(
        (c.n_embd, c.n_ff, c.vocab, c.context_len),
        (576, 1536, 49152, 8192)
    );
    assert_eq!(c.rope_theta, 100_000.0);
    assert_eq!(c.rms_eps, 1e-5);
}

#[test]
fn greedy_continuation_names_paris() {
    let Some(model) = real_model() else { return };
    let tok = model.tokenizer();
    let prompt = tok.encode("The capital of France is");
    let out = greedy(model, &prompt, 8);
    let text = tok.decode(&out);
    println!("continuation: {text:?}");
    assert!(text.contains("Paris"), "{text:?}");
}

fn log_softmax_at(logits: &[f32], target: u32) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = logits
        .iter()
        .map(|v| f64::from(v - max).exp())
        .sum::<f64>()
        .ln()
        + f64::from(max);
    f64::from(logits[target as usize]) - lse
}

/// Mean NLL measured on this implementation; the test guards it.
const WIKI_NLL_1024: f64 = 2.6138;

#[test]
fn wikitext_nll_of_first_1024_tokens() {
    let Some(model) = real_model() else { return };
    let text = wiki_text();
    let tokens = model.tokenizer().encode(&text);
    let tokens = &tokens[..1024];
    let mut cache = DenseCache::new(model.config());
    let t0 = std::time::Instant::now();
    let logits = model
        .prefill(tokens, &mut cache, Logits::All)
        .expect("prefill");
    let secs = t0.elapsed().as_secs_f64();
    let vocab = model.config().vocab;
    let nll: f64 = (1..1024)
        .map(|i| -log_softmax_at(&logits[(i - 1) * vocab..i * vocab], tokens[i]))
        .sum::<f64>()
        / 1023.0;
    println!(
        "wikitext NLL over tokens 1..1024: {nll:.4} nats (prefill {:.1} tok/s)",
        1024.0 / secs
    );
    assert!((2.0..=3.5).contains(&nll), "NLL {nll}");
    assert!(
        (nll - WIKI_NLL_1024).abs() <= 0.01,
        "NLL {nll}, recorded {WIKI_NLL_1024}"
    );
}

#[test]
fn decode_with_dense_cache_matches_longer_prefill() {
    let Some(model) = real_model() else { return };
    let tokens = model
        .tokenizer()
        .encode("The quick brown fox jumps over the lazy dog and runs");
    let split = 6;
    let mut cache = DenseCache::new(model.config());
    model
        .prefill(&tokens[..split], &mut cache, Logits::None)
        .expect("prefill");
    for pos in split..tokens.len() {
        let step = model.decode(tokens[pos], pos, &mut cache).expect("decode");
        let mut fresh = DenseCache::new(model.config());
        let full = model
            .prefill(&tokens[..=pos], &mut fresh, Logits::Last)
            .expect("prefill");
        let worst = step
            .iter()
            .zip(&full)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-3, "position {pos}: logits differ by {worst}");
    }
    assert_eq!(cache.len(0), tokens.len());
}

struct Failing;

impl Attention for Failing {
    fn prefill(&mut self, _: usize, _: &[f32], _: &[f32]) -> Result<(), AttentionFailure> {
        Ok(())
    }
    fn decode(
        &mut self,
        _: usize,
        _: &[f32],
        _: &[f32],
        _: &[f32],
    ) -> Result<Vec<f32>, AttentionFailure> {
        Err("device gone".into())
    }
}

#[test]
fn attention_failures_and_bad_inputs_are_errors() {
    let Some(model) = real_model() else { return };
    let err = model.decode(1, 0, &mut Failing).unwrap_err();
    assert!(
        matches!(err, ModelError::Attention { layer: 0, .. }),
        "{err}"
    );
    let mut cache = DenseCache::new(model.config());
    assert!(matches!(
        model.prefill(&[], &mut cache, Logits::Last),
        Err(ModelError::Input(_))
    ));
    assert!(matches!(
        model.decode(60_000, 0, &mut cache),
        Err(ModelError::TokenOutOfRange { .. })
    ));
    assert!(matches!(
        model.decode(1, 8192, &mut cache),
        Err(ModelError::ContextOverflow { .. })
    ));
}

/// Speed report (ignored by default): `cargo test --release -p model -- --ignored --nocapture speed`.
#[test]
#[ignore]
fn speed() {
    let Some(model) = real_model() else { return };
    let text = wiki_text();
    let tokens = model.tokenizer().encode(&text);
    let mut cache = DenseCache::new(model.config());
    let t0 = std::time::Instant::now();
    let logits = model
        .prefill(&tokens[..1024], &mut cache, Logits::Last)
        .expect("prefill");
    let prefill = t0.elapsed().as_secs_f64();
    let mut t = argmax(&logits);
    let steps = 64;
    let t0 = std::time::Instant::now();
    for i in 0..steps {
        t = argmax(&model.decode(t, 1024 + i, &mut cache).expect("decode"));
    }
    let decode = t0.elapsed().as_secs_f64();
    println!(
        "prefill 1024 tokens: {:.2} s ({:.1} tok/s); decode {steps} tokens at context 1024+: {:.1} tok/s",
        prefill,
        1024.0 / prefill,
        steps as f64 / decode
    );
}

/// `attend_group` gives every query `attend_one`'s bits, at tile edges and
/// with no keys.
#[test]
fn attend_group_equals_attend_one_per_query() {
    use crate::llama::{attend_group, attend_one};
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
    };
    for (g, d) in [(1, 64), (3, 64), (4, 256)] {
        for s in [0, 1, 15, 16, 17, 100] {
            let qs: Vec<f32> = (0..g * d).map(|_| next()).collect();
            let k: Vec<f32> = (0..s * d).map(|_| next()).collect();
            let v: Vec<f32> = (0..s * d).map(|_| next()).collect();
            let mut got = vec![1f32; g * d];
            attend_group(&qs, d, &k, &v, &mut Vec::new(), &mut got);
            for (q, o) in qs.chunks_exact(d).zip(got.chunks_exact(d)) {
                let mut want = vec![0f32; d];
                attend_one(q, &k, &v, &mut Vec::new(), &mut want);
                let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(o), bits(&want), "g {g}, d {d}, s {s}");
            }
        }
    }
}
