//! The qwen2 and qwen3 architectures (and llama) on tiny synthetic models:
//! prefill and decode logits against the plain f64 forward pass of
//! `reference`, the features that set them apart shown to matter, and
//! other architectures refused by name.

use super::reference;
use super::tiny::{Spec, build, load};
use crate::{Arch, DenseCache, Gguf, Logits, Model, ModelError, RopeStyle};

/// Largest |a − b| over two logit rows.
pub(super) fn worst(a: &[f32], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - y).abs())
        .fold(0.0, f64::max)
}

pub(super) fn tokens(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 37 + 5) % 257).collect()
}

/// Prefill of 5 tokens (all logits), then 4 decode steps, each position's
/// logits against the reference; returns the largest difference.
pub(super) fn check_against_reference(s: &Spec) -> f64 {
    let w = build(s, None);
    let model = load(&w).unwrap_or_else(|e| panic!("{}: {e}", s.arch));
    let gguf = Gguf::parse(w.to_bytes()).expect("parse");
    let toks = tokens(9);
    let want = reference::logits(s, &gguf, &toks);
    let vocab = model.config().vocab;
    let mut cache = DenseCache::new(model.config());
    let all = model
        .prefill(&toks[..5], &mut cache, Logits::All)
        .expect("prefill");
    let mut diff = (0..5)
        .map(|i| worst(&all[i * vocab..(i + 1) * vocab], &want[i]))
        .fold(0.0, f64::max);
    for pos in 5..toks.len() {
        let step = model.decode(toks[pos], pos, &mut cache).expect("decode");
        diff = diff.max(worst(&step, &want[pos]));
    }
    diff
}

/// Both sides round q, k and v to fp16, from values that differ in their
/// last f32 bits: an element that lies at an fp16 rounding boundary can
/// round up in one and down in the other, one fp16 ulp (2^-11 relative),
/// which moves a logit by a few 1e-4. A wrong rotation, norm or scale
/// moves them by far more.
pub(super) const TOLERANCE: f64 = 5e-4;

#[test]
fn qwen2_matches_the_reference() {
    let diff = check_against_reference(&Spec::qwen2());
    assert!(diff < TOLERANCE, "qwen2 logits differ by {diff}");
}

#[test]
fn qwen3_matches_the_reference() {
    // head_dim 16 with n_embd 48 and 4 heads, untied output.
    let diff = check_against_reference(&Spec::qwen3());
    assert!(diff < TOLERANCE, "qwen3 logits differ by {diff}");
    // head_dim = n_embd / n_head, tied output.
    let s = Spec {
        d: 64,
        tied: true,
        ..Spec::qwen3()
    };
    let diff = check_against_reference(&s);
    assert!(diff < TOLERANCE, "tied qwen3 logits differ by {diff}");
}

#[test]
fn llama_matches_the_reference() {
    let s = Spec {
        quantized: false,
        ..Spec::llama()
    };
    let diff = check_against_reference(&s);
    assert!(diff < TOLERANCE, "llama logits differ by {diff}");
    let tied = Spec { tied: true, ..s };
    let diff = check_against_reference(&tied);
    assert!(diff < TOLERANCE, "tied llama logits differ by {diff}");
}

#[test]
fn configs_name_their_arch() {
    let m = load(&build(&Spec::qwen3(), None)).expect("qwen3");
    let c = m.config();
    assert_eq!(
        (c.arch, c.head_dim, c.q_dim(), c.n_embd),
        (Arch::Qwen3, 16, 64, 48)
    );
    assert_eq!(c.arch.rope_style(), RopeStyle::Neox);
    let m = load(&build(&Spec::qwen2(), None)).expect("qwen2");
    assert_eq!(m.config().arch, Arch::Qwen2);
    assert_eq!(Arch::Llama.rope_style(), RopeStyle::Normal);
}

/// Largest logit difference of two models over the same 6 tokens.
pub(super) fn output_gap(a: &Spec, b: &Spec) -> f32 {
    let run = |s: &Spec| -> Vec<f32> {
        let m = load(&build(s, None)).expect("load");
        m.prefill(&tokens(6), &mut DenseCache::new(m.config()), Logits::All)
            .expect("prefill")
    };
    run(a)
        .iter()
        .zip(run(b))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn biases_and_qk_norm_change_the_output() {
    let no_bias = Spec {
        bias: Some(0.0),
        ..Spec::qwen2()
    };
    let gap = output_gap(&Spec::qwen2(), &no_bias);
    assert!(gap > 0.05, "zeroing the QKV biases moved logits by {gap}");
    let louder = Spec {
        qk_norm: Some(3.0),
        ..Spec::qwen3()
    };
    let gap = output_gap(&Spec::qwen3(), &louder);
    assert!(
        gap > 0.05,
        "tripling the QK-norm weights moved logits by {gap}"
    );
}

#[test]
fn other_architectures_are_refused_by_name() {
    for arch in ["gemma2", "phi3"] {
        let s = Spec {
            arch,
            ..Spec::qwen2()
        };
        let err = load(&build(&s, None)).expect_err(arch);
        let msg = err.to_string();
        assert!(matches!(err, ModelError::Config(_)), "{msg}");
        assert!(
            msg.contains(arch) && msg.contains("llama, qwen2, qwen3, gemma3"),
            "{msg}"
        );
    }
}

#[test]
fn missing_arch_tensors_and_bad_lengths_are_errors() {
    let missing =
        |s: &Spec, name: &str| -> Result<Model, ModelError> { load(&build(s, Some(name))) };
    let name = "blk.1.attn_k.bias";
    assert!(
        matches!(missing(&Spec::qwen2(), name), Err(ModelError::MissingTensor(n)) if n == name)
    );
    let name = "blk.0.attn_q_norm.weight";
    assert!(
        matches!(missing(&Spec::qwen3(), name), Err(ModelError::MissingTensor(n)) if n == name)
    );
    // A llama may carry QKV biases (llama.cpp loads them when present).
    let biased = Spec {
        bias: Some(0.5),
        quantized: false,
        ..Spec::llama()
    };
    assert!(check_against_reference(&biased) < TOLERANCE);
    let mut w = build(&Spec::qwen2(), None);
    w.kv("qwen2.attention.value_length", crate::gguf::Value::U32(8));
    let err = load(&w).expect_err("value length 8 with key length 16");
    assert!(matches!(err, ModelError::Config(_)), "{err}");
}
