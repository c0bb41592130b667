//! Softmax against `attention::engine::softmax`, bit for bit.

use super::*;
use attention::engine::{EXP2_POLY, LOG2E_Q16, P_ONE, softmax as model_softmax, weight};
use attention::testdata::SplitMix64;

const A: usize = SYNTH_ADDR_BITS;

fn model(logits: &[i32]) -> Vec<u32> {
    let mut p = vec![0u32; logits.len()];
    model_softmax(logits, &mut p);
    p
}

/// Runs every vector back to back through one unit and checks each;
/// returns the clocks of each.
fn check(cases: &[Vec<i32>]) -> Vec<usize> {
    let stim: Vec<SoftmaxCycle> = cases.iter().flat_map(|l| stimulus(l)).collect();
    let run = run::<A>(&stim);
    assert_eq!(run.probs.len(), cases.len(), "one done per softmax");
    for (i, (logits, got)) in cases.iter().zip(&run.probs).enumerate() {
        if *got != model(logits) {
            panic!("case {i}: n = {}, logits = {logits:?}", logits.len());
        }
    }
    run.clocks
}

/// Random logits of one of several kinds.
fn random_logits(rng: &mut SplitMix64, n: usize) -> Vec<i32> {
    match rng.next_u64() % 5 {
        // Realistic Q16 logits, ±(0..40)·2^16.
        0 | 1 => (0..n)
            .map(|_| (rng.next_u64() % (80 << 16)) as i32 - (40 << 16))
            .collect(),
        // Full i32 range.
        2 => (0..n).map(|_| rng.next_u64() as i32).collect(),
        // Near ties: a few distinct values within ±2.
        3 => (0..n)
            .map(|_| (rng.next_u64() % 5) as i32 * (1 << 15) - (1 << 16))
            .collect(),
        // Narrow spread around a random offset.
        _ => {
            let base = (rng.next_u64() as i32) / 2;
            (0..n)
                .map(|_| base + (rng.next_u64() % (8 << 16)) as i32)
                .collect()
        }
    }
}

/// The hardware datapath's arithmetic (magnitudes, 16 × 16 products) equals
/// the model's `weight` for every fraction f the polynomial can see, for
/// every shift, and on random and extreme `u`.
#[test]
fn softmax_datapath_matches_weight() {
    assert_eq!(LOG2E_Q16, (1 << 16) + LOG2E_LO as i64);
    assert_eq!(EXP2_POLY[4], (C4_HI << 16 | C4_LO) as i64);
    assert_eq!(EXP2_POLY[3], -(C3_NEG as i64));
    assert_eq!(EXP2_POLY[2], C2 as i64);
    assert_eq!(EXP2_POLY[1], -(C1_NEG as i64));
    assert_eq!(EXP2_POLY[0], C0 as i64);
    // Every u < 2^23 covers z (and so f) densely across n = 0..~46.
    for u in 0..(1u32 << 23) {
        assert_eq!(datapath_weight(u), weight(-i64::from(u)), "u = {u}");
    }
    let mut rng = SplitMix64::new(0x50F7);
    for _ in 0..1_000_000 {
        let u = rng.next_u64() as u32;
        assert_eq!(datapath_weight(u), weight(-i64::from(u)), "u = {u}");
    }
    for u in [u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1] {
        assert_eq!(datapath_weight(u), weight(-i64::from(u)), "u = {u}");
    }
}

/// The polynomial's f covers all 65536 values for u < 2^23 (so the test
/// above is exhaustive over the Horner stages).
#[test]
fn softmax_datapath_covers_every_fraction() {
    let mut seen = vec![false; 1 << 16];
    for u in 0..(1u64 << 23) {
        let z = (u * LOG2E_Q16 as u64).div_ceil(1 << 16);
        seen[(z & 0xFFFF) as usize] = true;
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn softmax_random_vectors_match_model() {
    let mut rng = SplitMix64::new(0x50F7_0001);
    let mut total = 0;
    for _ in 0..30 {
        let cases: Vec<Vec<i32>> = (0..100)
            .map(|_| {
                let n = 1 + (rng.next_u64() % 64) as usize;
                random_logits(&mut rng, n)
            })
            .collect();
        total += cases.len();
        check(&cases);
    }
    assert_eq!(total, 3000);
}

#[test]
fn softmax_long_vectors_match_model() {
    let mut rng = SplitMix64::new(0x50F7_0002);
    let cases: Vec<Vec<i32>> = (0..6)
        .map(|_| {
            let n = 200 + (rng.next_u64() % 1800) as usize;
            random_logits(&mut rng, n)
        })
        .collect();
    check(&cases);
}

#[test]
fn softmax_edge_cases() {
    let ramp: Vec<i32> = (0..100).map(|j| j << 14).collect();
    let cases = vec![
        // All equal.
        vec![5 << 16; 100],
        vec![0; 3],
        vec![i32::MIN; 17],
        vec![i32::MAX; 17],
        // One element.
        vec![-123_456],
        vec![i32::MIN],
        vec![i32::MAX],
        // Max first / last.
        ramp.iter().rev().copied().collect(),
        ramp.clone(),
        // Huge spreads: everything but the max underflows to 0.
        vec![i32::MAX, i32::MIN, 0, -(40 << 16), i32::MIN + 1],
        vec![i32::MIN, i32::MIN, i32::MAX],
        vec![0, -(22 << 16), -(21 << 16), -(30 << 16)],
        // Ties at the max.
        vec![i32::MAX, i32::MAX, i32::MIN, i32::MAX],
        // Two logits 1.0 apart; exactly at the 31-shift boundary.
        vec![1 << 16, 0],
        vec![0, -1_407_374, -1_407_375, -1_407_373, -1_407_376],
        // Sum = 2^30 exactly (recip = 2^32) with other tiny weights around.
        vec![7, i32::MIN + 7],
    ];
    check(&cases);
}

#[test]
fn softmax_n_max() {
    let mut rng = SplitMix64::new(0x50F7_0003);
    let full: Vec<i32> = (0..SYNTH_N_MAX)
        .map(|_| (rng.next_u64() % (80 << 16)) as i32 - (40 << 16))
        .collect();
    let equal = vec![42; SYNTH_N_MAX];
    let clocks = check(&[full, equal]);
    assert_eq!(clocks, [cycles(SYNTH_N_MAX); 2]);
    // The largest sum: n_max equal weights of 2^30 (recip = 2^62 / 2^43).
    let p = model(&[42; SYNTH_N_MAX]);
    assert_eq!(p[0], P_ONE / SYNTH_N_MAX as u32);
}

/// Logits past 2^A are ignored: a 4-logit unit given 6 computes the
/// softmax of the first 4.
#[test]
fn softmax_overflow_is_ignored() {
    let logits = [1 << 16, 3 << 16, 0, -(1 << 16), 9 << 16, 8 << 16];
    let stim = stimulus(&logits);
    let run = run::<2>(&stim);
    assert_eq!(run.probs, [model(&logits[..4])]);
}

/// Clocks per softmax, measured against [`cycles`]: 3n + 2·PIPE +
/// DIV_STEPS + 4 from `start` to `done` inclusive.
#[test]
fn softmax_cycles() {
    let mut rng = SplitMix64::new(3);
    let cases: Vec<Vec<i32>> = [1usize, 2, 10, 1000, 4096]
        .iter()
        .map(|&n| random_logits(&mut rng, n))
        .collect();
    let clocks = check(&cases);
    for (l, c) in cases.iter().zip(&clocks) {
        let n = l.len();
        assert_eq!(*c, cycles(n), "n = {n}");
        assert_eq!(*c, 3 * n + 2 * PIPE + DIV_STEPS + 4, "n = {n}");
    }
    // n = 0: start, flush, done; nothing out.
    let run = run::<A>(&stimulus(&[]));
    assert_eq!(run.probs, [Vec::<u32>::new()]);
    assert_eq!(run.clocks, [cycles(0)]);
}

#[test]
fn softmax_start_aborts() {
    // A `start` in the middle of a softmax begins a new one cleanly.
    let mut stim = stimulus(&[9 << 16, 8, 7, 6]);
    stim.truncate(12);
    stim.extend(stimulus(&[1, 2 << 16, 3, -(4 << 16), 5]));
    let run = run::<A>(&stim);
    assert_eq!(run.probs, [model(&[1, 2 << 16, 3, -(4 << 16), 5])]);
}

/// rust-hdl's own threaded `Simulation` agrees with `crate::sim`.
#[test]
fn softmax_rust_hdl_simulation_agrees() {
    let logits = [5 << 16, 1, 5 << 16, -(9 << 16), 0, 9 << 15, 3, 3];
    let stim = stimulus(&logits);
    let want = run::<4>(&stim);
    let mut uut = Softmax::<4>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Softmax<4>>| x.clock.next = !x.clock.val());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<Softmax<4>>| {
        let mut x = sim.init()?;
        wait_clock_false!(sim, clock, x);
        for c in &stim {
            x.drive(c);
            wait_clock_true!(sim, clock, x);
            wait_clock_false!(sim, clock, x);
            if x.out_valid.val() {
                sink.lock().expect("lock").push(x.out_prob.val().to_u32());
            }
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 20 * (n as u64 + 10))
        .expect("simulation");
    assert_eq!(want.probs, [model(&logits)]);
    assert_eq!(*got.lock().expect("lock"), want.probs[0]);
}
