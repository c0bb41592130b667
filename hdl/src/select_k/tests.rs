//! SelectK against `attention::engine::argtopk`, bit for bit, and its
//! clocks against `attention::engine::RadixPlan::clocks`.

use super::*;
use attention::engine::{RadixPlan, argtopk as model_argtopk, radix_plan};
use attention::testdata::SplitMix64;

const A: usize = SYNTH_ADDR_BITS;

fn plan(keys: &[u64], k: usize) -> RadixPlan {
    radix_plan(keys, k)
}

fn model(keys: &[u64], k: usize) -> Vec<u32> {
    let mut out = Vec::new();
    model_argtopk(keys, k, &mut out);
    out
}

/// Runs every (keys, k) back to back through one unit and checks each
/// selection and its clocks.
fn check(cases: &[(Vec<u64>, u16)]) {
    let stim: Vec<SelectCycle> = cases
        .iter()
        .flat_map(|(keys, k)| {
            let p = plan(keys, usize::from(*k));
            stimulus(keys, *k, p.clocks() - keys.len() as u64 - 2)
        })
        .collect();
    let run = run::<A>(&stim);
    assert_eq!(run.selections.len(), cases.len(), "one done per selection");
    for (i, ((keys, k), got)) in cases.iter().zip(&run.selections).enumerate() {
        let k = usize::from(*k);
        assert!(
            *got == model(keys, k),
            "case {i}: n = {}, k = {k}: {} selected, want {}",
            keys.len(),
            got.len(),
            model(keys, k).len()
        );
        let p = plan(keys, k);
        assert_eq!(run.clocks[i] as u64, p.clocks(), "case {i}: clocks, {p:?}");
    }
}

fn random_keys(rng: &mut SplitMix64, n: usize) -> Vec<u64> {
    match rng.next_u64() % 5 {
        // Few distinct values: many ties.
        0 => (0..n).map(|_| rng.next_u64() % 4).collect(),
        // Full-width keys, top bit included.
        1 => (0..n).map(|_| rng.next_u64()).collect(),
        // Token keys: Q0.30 sums, some with the 2^40 local bonus.
        2 => (0..n)
            .map(|_| (rng.next_u64() >> 33) + (rng.next_u64().is_multiple_of(8) as u64) * (1 << 40))
            .collect(),
        // Ties deep in the key: full-width values from a small set.
        3 => {
            let set: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
            (0..n).map(|_| set[(rng.next_u64() % 3) as usize]).collect()
        }
        _ => (0..n).map(|_| rng.next_u64() % 1000).collect(),
    }
}

#[test]
fn select_k_small_cases_match_model() {
    let mut rng = SplitMix64::new(0x005E_1EC7);
    let mut cases: Vec<(Vec<u64>, u16)> = (0..300)
        .map(|_| {
            let n = (rng.next_u64() % 120) as usize;
            let k = (rng.next_u64() % 130) as u16;
            (random_keys(&mut rng, n), k)
        })
        .collect();
    cases.push((vec![], 0));
    cases.push((vec![], 3));
    cases.push((vec![5], 1));
    cases.push((vec![9; 80], 64));
    cases.push((vec![9; 80], 0));
    cases.push(((0..80).collect(), 1));
    cases.push(((0..80).rev().collect(), 79));
    cases.push((vec![u64::MAX, 0, u64::MAX, u64::MAX - 1, u64::MAX], 2));
    check(&cases);
}

#[test]
fn select_k_every_k_up_to_4096_at_4096_keys() {
    // k from 1 to 4096 in steps, over one 4096-key input of each kind.
    let mut rng = SplitMix64::new(0xA11_C0DE);
    for _ in 0..3 {
        let keys = random_keys(&mut rng, 4096);
        let cases: Vec<(Vec<u64>, u16)> =
            [1u16, 2, 3, 7, 64, 65, 255, 256, 511, 1000, 2048, 4095, 4096]
                .iter()
                .map(|&k| (keys.clone(), k))
                .collect();
        check(&cases);
    }
}

#[test]
fn select_k_at_32k_keys() {
    // S = 32K (the unit's capacity), k = S/8 and S/16, token keys with the
    // local bonus and with heavy ties.
    let mut rng = SplitMix64::new(0x32_000);
    let token: Vec<u64> = (0..SYNTH_N_MAX)
        .map(|j| (rng.next_u64() >> 34) + if j >= SYNTH_N_MAX - 64 { 1 << 40 } else { 0 })
        .collect();
    let ties: Vec<u64> = (0..SYNTH_N_MAX).map(|_| rng.next_u64() % 16).collect();
    check(&[(token.clone(), 4096), (token, 2048), (ties, 4096)]);
}

#[test]
fn select_k_start_mid_pass_clears_the_histogram() {
    // A selection aborted in its histogram pass by a new `start`: the next
    // one still matches the model (the dirty bins are cleared while it
    // collects).
    let keys: Vec<u64> = (0..200u64).map(|i| (i * 7919) % 251).collect();
    let mut stim = stimulus(&keys, 20, 0);
    stim.extend(std::iter::repeat_n(SelectCycle::default(), 120));
    let short: Vec<u64> = (0..3u64).collect();
    let p = plan(&short, 1);
    stim.extend(stimulus(&short, 1, p.clocks() + 300));
    let run = run::<A>(&stim);
    assert_eq!(run.selections, vec![model(&short, 1)]);
}

#[test]
fn select_k_overflow_drops_keys_and_flags() {
    let mut uut = SelectK::<3>::default();
    crate::sim::prepare(&mut uut);
    let keys: Vec<u64> = (0..10).collect();
    let mut got = Vec::new();
    let mut overflow = false;
    for c in stimulus(&keys, 2, 400) {
        uut.drive(&c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        overflow |= uut.overflow.val();
        if uut.out_valid.val() {
            got.push(uut.out_index.val().to_u32());
        }
    }
    assert!(overflow);
    // Only the first 8 keys were held: the top 2 of 0..8.
    assert_eq!(got, [6, 7]);
}

#[test]
fn select_k_result_port_reads_the_selection_back() {
    let mut uut = SelectK::<A>::default();
    crate::sim::prepare(&mut uut);
    let mut rng = SplitMix64::new(7);
    let keys = random_keys(&mut rng, 500);
    let p = plan(&keys, 60);
    for c in stimulus(&keys, 60, p.clocks()) {
        uut.drive(&c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
    }
    let want = model(&keys, 60);
    assert_eq!(uut.selected.val().to_u32() as usize, want.len());
    let mut back = Vec::new();
    for i in 0..want.len() {
        uut.res_addr.next = (i as u64).into();
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        back.push(uut.res_index.val().to_u32());
    }
    assert_eq!(back, want);
}
