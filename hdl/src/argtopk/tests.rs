//! ArgTopK against `attention::engine::argtopk`, bit for bit.

use super::*;
use attention::engine::argtopk as model_argtopk;
use attention::testdata::SplitMix64;

const K: usize = SYNTH_K_MAX;

fn model(keys: &[u64], k: usize) -> Vec<u32> {
    let mut out = Vec::new();
    model_argtopk(keys, k, &mut out);
    out
}

/// Runs every (keys, k) back to back through one unit and checks each
/// selection; returns the clocks of each.
fn check(cases: &[(Vec<u64>, u16)]) -> Vec<usize> {
    let stim: Vec<TopKCycle> = cases
        .iter()
        .flat_map(|(keys, k)| stimulus(keys, *k, K))
        .collect();
    let run = run::<K>(&stim);
    assert_eq!(run.selections.len(), cases.len(), "one done per selection");
    for (i, ((keys, k), got)) in cases.iter().zip(&run.selections).enumerate() {
        assert_eq!(
            *got,
            model(keys, usize::from(*k)),
            "case {i}: k = {k}, keys = {keys:?}"
        );
    }
    run.clocks
}

fn random_keys(rng: &mut SplitMix64, n: usize) -> Vec<u64> {
    match rng.next_u64() % 4 {
        // Few distinct values: many ties.
        0 => (0..n).map(|_| rng.next_u64() % 4).collect(),
        // Full-width keys, top bit included.
        1 => (0..n).map(|_| rng.next_u64()).collect(),
        // Token keys: Q0.30 sums, some with the 2^40 local bonus.
        2 => (0..n)
            .map(|_| (rng.next_u64() >> 33) + (rng.next_u64().is_multiple_of(8) as u64) * (1 << 40))
            .collect(),
        _ => (0..n).map(|_| rng.next_u64() % 1000).collect(),
    }
}

#[test]
fn argtopk_random_vectors_match_model() {
    let mut rng = SplitMix64::new(0x70_9B);
    let mut total = 0;
    for _ in 0..25 {
        let cases: Vec<(Vec<u64>, u16)> = (0..80)
            .map(|_| {
                let n = (rng.next_u64() % 200) as usize;
                let k = (rng.next_u64() % (K as u64 + 1)) as u16;
                (random_keys(&mut rng, n), k)
            })
            .collect();
        total += cases.len();
        check(&cases);
    }
    assert_eq!(total, 2000);
}

#[test]
fn argtopk_edge_cases() {
    let ramp: Vec<u64> = (0..100).collect();
    let cases = vec![
        // All keys equal: the lowest indices win.
        (vec![7u64; 100], 10),
        (vec![0u64; 100], K as u16),
        (vec![u64::MAX; 70], 64),
        // k = 1.
        (ramp.clone(), 1),
        (vec![5, 9, 9, 1], 1),
        // k = n.
        (ramp[..64].to_vec(), 64),
        (vec![3, 1, 2], 3),
        // n < k.
        (vec![3, 1, 2], 64),
        (vec![42], 5),
        // n = 0, k = 0.
        (vec![], 5),
        (ramp.clone(), 0),
        // Descending and ascending ramps, k = K.
        (ramp.iter().rev().copied().collect(), 64),
        (ramp.clone(), 64),
        // The model's own tie example.
        (vec![3, 7, 3, 7, 3], 3),
    ];
    check(&cases);
}

/// Clocks per selection, measured against the formula in the module docs:
/// n + 1 + min(k, n) + 1 + min(k, n) + 1 from `start` to `done`, plus the
/// `start` clock.
#[test]
fn argtopk_cycles() {
    let mut rng = SplitMix64::new(3);
    let cases: Vec<(Vec<u64>, u16)> = [(1000usize, 64u16), (4096, 64), (100, 1), (10, 64), (0, 8)]
        .iter()
        .map(|&(n, k)| (random_keys(&mut rng, n), k))
        .collect();
    let clocks = check(&cases);
    for ((keys, k), c) in cases.iter().zip(&clocks) {
        let m = usize::from(*k).min(keys.len());
        assert_eq!(
            *c,
            1 + keys.len() + 1 + m + 1 + m + 1,
            "n = {}, k = {k}",
            keys.len()
        );
    }
}

#[test]
fn argtopk_start_aborts_a_selection() {
    // A `start` in the middle of a selection begins a new one cleanly.
    let mut stim = stimulus(&[9, 8, 7, 6], 2, K);
    stim.truncate(3);
    stim.extend(stimulus(&[1, 2, 3, 4, 5], 2, K));
    let run = run::<K>(&stim);
    assert_eq!(run.selections, [vec![3u32, 4]]);
}

#[test]
fn argtopk_small_unit_matches_model() {
    // A 4-entry unit: k up to 4, inputs much longer than the array.
    let mut rng = SplitMix64::new(11);
    let cases: Vec<(Vec<u64>, u16)> = (0..300)
        .map(|_| {
            let n = (rng.next_u64() % 40) as usize;
            (random_keys(&mut rng, n), (rng.next_u64() % 5) as u16)
        })
        .collect();
    let stim: Vec<TopKCycle> = cases
        .iter()
        .flat_map(|(keys, k)| stimulus(keys, *k, 4))
        .collect();
    let run = run::<4>(&stim);
    for ((keys, k), got) in cases.iter().zip(&run.selections) {
        assert_eq!(*got, model(keys, usize::from(*k)));
    }
    assert_eq!(run.selections.len(), cases.len());
}

/// rust-hdl's own threaded `Simulation` agrees with `crate::sim`.
#[test]
fn argtopk_rust_hdl_simulation_agrees() {
    let keys = [5u64, 1, 5, 9, 0, 9, 3, 3, 7];
    let stim = stimulus(&keys, 4, 8);
    let want = run::<8>(&stim);
    let mut uut = ArgTopK::<8>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<ArgTopK<8>>| x.clock.next = !x.clock.val());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<ArgTopK<8>>| {
        let mut x = sim.init()?;
        wait_clock_false!(sim, clock, x);
        for c in &stim {
            x.drive(c);
            wait_clock_true!(sim, clock, x);
            wait_clock_false!(sim, clock, x);
            if x.out_valid.val() {
                sink.lock().expect("lock").push(x.out_index.val().to_u32());
            }
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 20 * (n as u64 + 10))
        .expect("simulation");
    assert_eq!(want.selections, [model(&keys, 4)]);
    assert_eq!(want.selections, [vec![0u32, 3, 5, 8]]);
    assert_eq!(*got.lock().expect("lock"), want.selections[0]);
}
