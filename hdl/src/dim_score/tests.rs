//! DimScore against the engine model's approximate logits, bit for bit.

use super::*;
use attention::testdata::SplitMix64;

#[path = "../../tests/support/dim_head.rs"]
mod dim_head;
use dim_head::TestHead as Head;

const W: usize = SYNTH_WORD_BITS;

#[test]
fn dim_score_matches_the_models_approximate_logits() {
    let mut rng = SplitMix64::new(0xD1_5C0);
    // (s, d, r, tokens per dim row)
    for (s, d, r, run) in [
        (48, 16, 4, 48),
        (100, 16, 4, 48),
        (300, 64, 8, 64),
        (129, 128, 16, 128),
        (517, 64, 32, 256),
        (8, 8, 1, 48),
        (1000, 256, 64, 512),
    ] {
        let head = Head::random(&mut rng, s, d, r, run);
        let stim = head.stimulus();
        let run = run_head::<W>(&stim);
        assert!(!run.hazard, "s = {s}");
        assert_eq!(run.logits, head.want(), "s = {s}, d = {d}, r = {r}");
        assert_eq!(run.flush_to_done, s + FLUSH_TO_DONE, "s = {s}");
    }
}

#[test]
fn dim_score_at_32k_tokens() {
    let mut rng = SplitMix64::new(0x32_DC);
    let head = Head::random(&mut rng, SYNTH_S_MAX, 16, 2, 1024);
    let run = run_head::<W>(&head.stimulus());
    assert_eq!(run.logits, head.want());
}

#[test]
fn dim_score_flags_a_group_that_comes_back_too_soon() {
    let mut rng = SplitMix64::new(5);
    // Rows of 16 tokens (2 beats) over 2 dims: a group returns 2 beats on.
    let head = Head::random(&mut rng, 16, 8, 2, 16);
    let run = run_head::<W>(&head.stimulus());
    assert!(run.hazard);
    // Rows of 48 tokens (6 beats) are far enough apart.
    let head = Head::random(&mut rng, 48, 8, 3, 48);
    let run = run_head::<W>(&head.stimulus());
    assert!(!run.hazard);
    assert_eq!(run.logits, head.want());
}
