//! AttentionKernel against `attention::engine::dense_group` (a group of
//! one), bit for bit, and its clock count against [`cycles`].

use super::*;
use attention::GroupShape;
use attention::engine::{dense_group, dense_scale, f32_to_f16_bits, fx};
use attention::testdata::{SplitMix64, structured_kv, structured_query};

/// A query head from fp16 q, K, V (flat, S × d).
fn query(d: usize, q: &[u16], k: &[u16], v: &[u16]) -> KernelQuery {
    KernelQuery {
        d,
        c: dense_scale(d),
        q: q.iter().map(|&h| fx(h)).collect(),
        k: k.chunks_exact(d).map(<[u16]>::to_vec).collect(),
        v: v.chunks_exact(d).map(<[u16]>::to_vec).collect(),
    }
}

fn model(d: usize, q: &[u16], k: &[u16], v: &[u16]) -> Vec<i32> {
    dense_group(
        q,
        k,
        v,
        GroupShape {
            group: 1,
            head_dim: d,
        },
    )
    .expect("valid shape")
}

/// The structured test problem of `seed` as fp16.
fn structured(seed: u64, s: usize, d: usize) -> (Vec<u16>, Vec<u16>, Vec<u16>) {
    let (k, v) = structured_kv(seed, 1, s, d);
    let q = structured_query(seed, 1, d, 1);
    let h = |x: Vec<f32>| x.into_iter().map(f32_to_f16_bits).collect::<Vec<u16>>();
    (h(q), h(k), h(v))
}

/// Runs q, K, V through an `L`-lane kernel (reactive driver), checks the
/// outputs against the model and the output lanes past d, returns the
/// clocks from `start` to `done` inclusive.
fn check<const L: usize>(
    d: usize,
    (q, k, v): (&[u16], &[u16], &[u16]),
    k_gap: impl Fn(usize) -> usize,
    v_delay: usize,
    v_gap: impl Fn(usize) -> usize,
) -> usize {
    let want = model(d, q, k, v);
    let kq = query(d, q, k, v);
    let s = kq.k.len();
    let (run, t0) = run_reactive::<L>(&kq, 0x7E00, k_gap, v_delay, v_gap);
    assert_eq!(run.done_clock.len(), 1, "one done");
    assert_eq!(run.beats.len(), weighted_sum::beats(d, L), "output beats");
    assert_eq!(run.outputs(d), want, "L = {L}, S = {s}, d = {d}");
    for (i, &x) in run.beats.iter().flatten().enumerate() {
        if i >= d {
            assert_eq!(x, 0, "masked lane");
        }
    }
    run.done_clock[0] + 1 - t0
}

#[test]
fn kernel_structured_matches_dense_group() {
    for (n, &s) in [1usize, 2, 17, 100, 300].iter().enumerate() {
        for (m, &d) in [8usize, 64, 100].iter().enumerate() {
            let (q, k, v) = structured(0xA77E_0000 + (10 * n + m) as u64, s, d);
            let clocks = check::<8>(d, (&q, &k, &v), |_| 0, 0, |_| 0);
            assert_eq!(clocks, cycles(s, d, 8), "S = {s}, d = {d}");
            eprintln!("S = {s:3}, d = {d:3}: {clocks} clocks");
        }
    }
}

/// Every fp16 class: random bits, normals, the extremes.
fn random_fp16(rng: &mut SplitMix64, class: u64) -> u16 {
    const SPECIAL: [u16; 12] = [
        0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8001, 0x03FF, 0x8000, 0x0000, 0x3C00,
        0xBC00,
    ];
    match class {
        0 => rng.next_u64() as u16,
        1 => f32_to_f16_bits(4.0 * rng.normal()),
        _ => SPECIAL[(rng.next_u64() % SPECIAL.len() as u64) as usize],
    }
}

#[test]
fn kernel_random_and_extreme_values() {
    let mut rng = SplitMix64::new(0xA77E_1111);
    // (S, d, class of q, class of K, class of V)
    let cases = [
        (5, 8, 1, 1, 1),
        (9, 13, 0, 0, 0),
        (7, 8, 2, 2, 2),
        (3, 20, 2, 0, 2),
        (6, 1, 0, 2, 0),
        (2, 256, 1, 1, 1),
    ];
    for (s, d, cq, ck, cv) in cases {
        let q: Vec<u16> = (0..d).map(|_| random_fp16(&mut rng, cq)).collect();
        let k: Vec<u16> = (0..s * d).map(|_| random_fp16(&mut rng, ck)).collect();
        let v: Vec<u16> = (0..s * d).map(|_| random_fp16(&mut rng, cv)).collect();
        let clocks = check::<8>(d, (&q, &k, &v), |_| 0, 0, |_| 0);
        assert_eq!(clocks, cycles(s, d, 8), "S = {s}, d = {d}");
    }
    // All-max values: logits saturate, one-hot and uniform softmax.
    for (s, d, x) in [(4, 16, 0x7BFFu16), (3, 8, 0xFBFF), (5, 9, 0x7C00)] {
        let q = vec![x; d];
        let k = vec![x; s * d];
        let v: Vec<u16> = (0..s * d)
            .map(|i| if i % 2 == 0 { 0x7BFF } else { 0xFC00 })
            .collect();
        check::<8>(d, (&q, &k, &v), |_| 0, 0, |_| 0);
    }
}

#[test]
fn kernel_gaps_and_lanes() {
    let mut rng = SplitMix64::new(0xA77E_2222);
    for (s, d) in [(11usize, 21usize), (4, 8), (3, 3)] {
        let (q, k, v) = structured(rng.next_u64(), s, d);
        let gaps: Vec<usize> = (0..4 * s * d + 8)
            .map(|_| (rng.next_u64() % 4) as usize)
            .collect();
        let gap = |i: usize| gaps[i] % 3;
        check::<8>(d, (&q, &k, &v), gap, 3, |i| gaps[i + 1] % 2);
        check::<4>(d, (&q, &k, &v), |_| 0, 0, |_| 0);
        let clocks = check::<1>(d, (&q, &k, &v), |_| 0, 0, |_| 0);
        assert_eq!(clocks, cycles(s, d, 1));
    }
}

#[test]
fn kernel_fixed_schedule_matches_reactive() {
    let (q, k, v) = structured(0xA77E_3333, 17, 24);
    let kq = query(24, &q, &k, &v);
    let stim = stimulus(&kq, 8, 0);
    let fixed = run::<8>(&stim);
    let (reactive, t0) = run_reactive::<8>(&kq, 0, |_| 0, 0, |_| 0);
    assert_eq!(fixed.beats, reactive.beats);
    assert_eq!(fixed.v_ready_clock, reactive.v_ready_clock);
    assert_eq!(fixed.done_clock, vec![stim.len() - 1]);
    assert_eq!(fixed.done_clock, reactive.done_clock);
    assert_eq!(fixed.outputs(24), model(24, &q, &k, &v));
    assert_eq!(stim.len() - t0, cycles(17, 24, 8));
}

#[test]
fn kernel_s_max() {
    let (s, d) = (S_MAX, 8);
    let (q, k, v) = structured(0xA77E_4444, s, d);
    let clocks = check::<8>(d, (&q, &k, &v), |_| 0, 0, |_| 0);
    assert_eq!(clocks, cycles(s, d, 8));
    assert_eq!(clocks, 32_841);
}

#[test]
fn kernel_no_tokens_gives_zeros() {
    let mut uut = AttentionKernel::<8>::default();
    crate::sim::prepare(&mut uut);
    let mut run = KernelRun::default();
    let mut ready = false;
    let mut stim = vec![KernelCycle {
        start: true,
        d: 12,
        s: 0,
        c: 1,
        ..KernelCycle::default()
    }];
    stim.resize(40, KernelCycle::default());
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        record(&uut, t, &mut ready, &mut run);
    }
    assert_eq!(run.done_clock.len(), 1);
    assert!(run.v_ready_clock.is_empty());
    assert_eq!(run.beats, vec![vec![0; 8]; 2]);
}
