//! gemma3 on tiny synthetic models: logits against the f64 reference over
//! a prefill and decode steps past the sliding window; the window, the
//! embedding scale and the post-norms each shown to matter; the window
//! pattern read from metadata; attention without window support refused.

use super::arch_tests::{TOLERANCE, check_against_reference, output_gap, tokens, worst};
use super::reference::{self, Skip};
use super::tiny::{Spec, build, load};
use crate::gguf::{Array, Value};
use crate::{Arch, Attention, AttentionFailure, DenseCache, Gguf, Logits, ModelError};

#[test]
fn gemma3_matches_the_reference() {
    // Prefill of 5 and decode to position 8: both past the window of 3.
    let diff = check_against_reference(&Spec::gemma3());
    assert!(diff < TOLERANCE, "gemma3 logits differ by {diff}");
    // Two KV heads, untied output, quantized weights, a window of 2.
    let s = Spec {
        d: 64,
        ff: 96,
        kv_heads: 2,
        tied: false,
        quantized: true,
        window: Some(2),
        ..Spec::gemma3()
    };
    // Both sides quantize each matrix's input to 8 bits as ggml does, but
    // from activations that differ in the last bits (f32 against f64), so
    // an element near a rounding boundary lands one step apart (1/254 of
    // its block's largest), amplified by gemma's sqrt(n_embd) embedding
    // scale: a looser bound than the float models'.
    let diff = check_against_reference(&s);
    assert!(diff < 0.2, "quantized gemma3 logits differ by {diff}");
    // Three layers, default pattern (period 6): all windowed.
    let s = Spec {
        layers: 3,
        swa_period: None,
        ..Spec::gemma3()
    };
    let diff = check_against_reference(&s);
    assert!(
        diff < TOLERANCE,
        "all-window gemma3 logits differ by {diff}"
    );
}

#[test]
fn gemma3_config_reads_window_and_pattern() {
    let m = load(&build(&Spec::gemma3(), None)).expect("gemma3");
    let c = m.config();
    assert_eq!(c.arch, Arch::Gemma3);
    assert_eq!((c.head_dim, c.n_kv_heads), (16, 1));
    assert_eq!((c.window(0), c.window(1)), (Some(3), None));
    assert_eq!((c.rope_theta, c.rope_theta_swa), (1_000_000.0, 10_000.0));
    assert_eq!((c.attn_scale, c.final_softcap), (None, None));
    // Default period 6: every 6th layer global.
    let s = Spec {
        layers: 7,
        swa_period: None,
        ..Spec::gemma3()
    };
    let m = load(&build(&s, None)).expect("7 layers");
    let windows: Vec<bool> = (0..7).map(|l| m.config().window(l).is_some()).collect();
    assert_eq!(windows, [true, true, true, true, true, false, true]);
    // One bool per layer.
    let mut w = build(
        &Spec {
            swa_period: None,
            ..Spec::gemma3()
        },
        None,
    );
    w.kv(
        "gemma3.attention.sliding_window_pattern",
        Value::Array(Array::Bool(vec![false, true])),
    );
    let m = load(&w).expect("per-layer pattern");
    assert_eq!(
        (m.config().window(0), m.config().window(1)),
        (None, Some(3))
    );
    // No window key: every layer global.
    let m = load(&build(
        &Spec {
            window: None,
            ..Spec::gemma3()
        },
        None,
    ))
    .expect("no window");
    assert!((0..2).all(|l| m.config().window(l).is_none()));
    // Missing post-norm tensors are errors.
    let name = "blk.1.post_ffw_norm.weight";
    let err = load(&build(&Spec::gemma3(), Some(name))).expect_err(name);
    assert!(matches!(err, ModelError::MissingTensor(n) if n == name));
}

#[test]
fn the_window_changes_logits_only_past_it() {
    let windowed = Spec::gemma3();
    let wide = Spec {
        window: Some(64),
        ..windowed
    };
    let run = |s: &Spec| -> Vec<f32> {
        let m = load(&build(s, None)).expect("load");
        m.prefill(&tokens(6), &mut DenseCache::new(m.config()), Logits::All)
            .expect("prefill")
    };
    let (a, b) = (run(&windowed), run(&wide));
    let vocab = a.len() / 6;
    let gap = |i: usize| -> f32 {
        a[i * vocab..(i + 1) * vocab]
            .iter()
            .zip(&b[i * vocab..(i + 1) * vocab])
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    };
    for i in 0..3 {
        assert!(
            gap(i) < 1e-6,
            "position {i} within the window moved by {}",
            gap(i)
        );
    }
    for i in 3..6 {
        assert!(
            gap(i) > 0.05,
            "position {i} past the window moved only {}",
            gap(i)
        );
    }
    assert!(output_gap(&windowed, &wide) > 0.05);
}

#[test]
fn embedding_scale_post_norms_and_window_all_matter() {
    let s = Spec::gemma3();
    let w = build(&s, None);
    let model = load(&w).expect("load");
    let gguf = Gguf::parse(w.to_bytes()).expect("parse");
    let toks = tokens(7);
    let got = model
        .prefill(&toks, &mut DenseCache::new(model.config()), Logits::All)
        .expect("prefill");
    let vocab = model.config().vocab;
    let gap = |skip: Skip| -> f64 {
        let want = reference::logits_skipping(&s, &gguf, &toks, skip);
        (0..toks.len())
            .map(|i| worst(&got[i * vocab..(i + 1) * vocab], &want[i]))
            .fold(0.0, f64::max)
    };
    assert!(gap(Skip::default()) < TOLERANCE);
    for (what, skip) in [
        (
            "embedding scale",
            Skip {
                embed_scale: true,
                ..Skip::default()
            },
        ),
        (
            "post-norms",
            Skip {
                post_norms: true,
                ..Skip::default()
            },
        ),
        (
            "window",
            Skip {
                window: true,
                ..Skip::default()
            },
        ),
    ] {
        let g = gap(skip);
        assert!(
            g > 0.05,
            "leaving out the {what} moved the reference only {g}"
        );
    }
}

/// Attention that keeps nothing and supports no window.
struct NoWindow;

impl Attention for NoWindow {
    fn prefill(&mut self, _: usize, _: &[f32], _: &[f32]) -> Result<(), AttentionFailure> {
        Ok(())
    }

    fn decode(
        &mut self,
        _: usize,
        q: &[f32],
        _: &[f32],
        _: &[f32],
    ) -> Result<Vec<f32>, AttentionFailure> {
        Ok(vec![0.0; q.len()])
    }
}

#[test]
fn attention_without_window_support_is_refused() {
    let m = load(&build(&Spec::gemma3(), None)).expect("load");
    let err = m
        .prefill(&tokens(4), &mut NoWindow, Logits::Last)
        .expect_err("prefill");
    assert!(
        matches!(err, ModelError::Attention { layer: 0, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("sliding-window") || format!("{err:?}").contains("sliding-window"),
        "{err:?}"
    );
    let err = m.decode(5, 4, &mut NoWindow).expect_err("decode");
    assert!(format!("{err:?}").contains("sliding-window"), "{err:?}");
    // Without windows, the same implementation is fine.
    let m = load(&build(
        &Spec {
            window: None,
            ..Spec::gemma3()
        },
        None,
    ))
    .expect("load");
    m.prefill(&tokens(4), &mut NoWindow, Logits::Last)
        .expect("no window, no refusal");
}
