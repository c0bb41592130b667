//! WeightedSum against `attention::engine::{accumulate, finish}`, bit for bit.

use super::*;
use attention::engine::{P_ONE, accumulate, finish, fx, softmax};
use attention::testdata::SplitMix64;

/// Every fp16 class the decoder distinguishes, both signs.
const SPECIAL: [u16; 16] = [
    0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x8001, 0x0200, 0x8200, 0x01FF, 0x0400,
    0x8000, 0x0000, 0x3C00, 0x2BFF,
];

fn model(q: &WsQuery) -> Vec<i32> {
    let mut acc = vec![0i64; q.d];
    for (p, row) in &q.rows {
        accumulate(&mut acc, *p, row);
    }
    let mut out = vec![0i32; q.d];
    finish(&acc, q.alpha, &q.vmean, &mut out);
    out
}

/// Runs the heads back to back through an `L`-lane unit, checks every
/// output against the model, and returns the run.
fn check<const L: usize>(queries: &[WsQuery], pad: u16) -> WsRun {
    let stim = stimulus(queries, L, pad);
    let run = run::<L>(&stim);
    let got = run.outputs(queries, L);
    assert_eq!(got.len(), queries.len());
    for (n, (q, g)) in queries.iter().zip(&got).enumerate() {
        let want = model(q);
        if *g != want {
            panic!(
                "L = {L}, head {n}: d = {}, rows = {}, alpha = {}\n got {g:?}\nwant {want:?}",
                q.d,
                q.rows.len(),
                q.alpha
            );
        }
    }
    // Lanes past d are 0.
    let mut it = run.beats.iter();
    for q in queries {
        for b in 0..beats(q.d, L) {
            let beat = it.next().expect("beat");
            for (j, &x) in beat.iter().enumerate() {
                if b * L + j >= q.d {
                    assert_eq!(x, 0, "masked lane");
                }
            }
        }
    }
    run
}

fn random_fp16(rng: &mut SplitMix64, class: u64) -> u16 {
    match class {
        0 => rng.next_u64() as u16,
        1 => attention::engine::f32_to_f16_bits(rng.normal()),
        2 => SPECIAL[(rng.next_u64() % SPECIAL.len() as u64) as usize],
        _ => (rng.next_u64() as u16) & 0x87FF,
    }
}

/// Probabilities of `s` rows from `softmax` of random logits (Σp ≤ 2^30).
fn random_probs(rng: &mut SplitMix64, s: usize) -> Vec<u32> {
    let spread = match rng.next_u64() % 3 {
        0 => 1 << 16,
        1 => 10 << 16,
        _ => 1 << 30,
    };
    let logits: Vec<i32> = (0..s)
        .map(|_| (rng.next_u64() % (2 * spread)) as i32 - spread as i32)
        .collect();
    let mut p = vec![0u32; s];
    softmax(&logits, &mut p);
    p
}

fn random_alpha(rng: &mut SplitMix64) -> u32 {
    match rng.next_u64() % 5 {
        0 | 1 => P_ONE,
        2 => 0,
        3 => rng.next_u64() as u32, // above P_ONE acts as P_ONE
        _ => (rng.next_u64() % u64::from(P_ONE)) as u32,
    }
}

fn random_vmean(rng: &mut SplitMix64, d: usize) -> Vec<i32> {
    match rng.next_u64() % 3 {
        0 => (0..d).map(|_| rng.next_u64() as i32).collect(),
        1 => (0..d).map(|_| fx(random_fp16(rng, 1))).collect(),
        _ => (0..d)
            .map(|_| [i32::MIN, i32::MAX, 0, -1][(rng.next_u64() % 4) as usize])
            .collect(),
    }
}

fn random_query(rng: &mut SplitMix64, max_rows: u64) -> WsQuery {
    let d = match rng.next_u64() % 8 {
        0 => 256,
        1 => 1 + (rng.next_u64() % 16) as usize,
        2 => 64,
        _ => 1 + (rng.next_u64() % 256) as usize,
    };
    let s = 1 + (rng.next_u64() % max_rows) as usize;
    let probs = random_probs(rng, s);
    let class = rng.next_u64() % 4;
    let rows = probs
        .into_iter()
        .map(|p| (p, (0..d).map(|_| random_fp16(rng, class)).collect()))
        .collect();
    WsQuery {
        d,
        rows,
        alpha: random_alpha(rng),
        vmean: random_vmean(rng, d),
    }
}

#[test]
fn weighted_sum_random_vectors_match_model() {
    let mut rng = SplitMix64::new(0x3E_5A01);
    let queries: Vec<WsQuery> = (0..400).map(|_| random_query(&mut rng, 12)).collect();
    let rows: usize = queries.iter().map(|q| q.rows.len()).sum();
    let outs: usize = queries.iter().map(|q| q.d).sum();
    let run = check::<SYNTH_LANES>(&queries, 0x7E00);
    let all: Vec<i32> = run.beats.concat();
    let sat = all
        .iter()
        .filter(|&&x| x == i32::MAX || x == i32::MIN)
        .count();
    eprintln!(
        "weighted_sum L=8: {} heads, {rows} rows, {outs} outputs, {sat} at an i32 limit",
        queries.len()
    );
    assert!(rows >= 2000 && outs >= 40_000, "{rows} {outs}");
}

#[test]
fn weighted_sum_four_and_one_lanes_match_model() {
    let mut rng = SplitMix64::new(0x3E_5A02);
    let queries: Vec<WsQuery> = (0..150).map(|_| random_query(&mut rng, 8)).collect();
    check::<4>(&queries, 0x7C00);
    let queries: Vec<WsQuery> = (0..40)
        .map(|_| {
            let mut q = random_query(&mut rng, 6);
            q.d = q.d.min(20);
            for (_, r) in &mut q.rows {
                r.truncate(q.d);
            }
            q.vmean.truncate(q.d);
            q
        })
        .collect();
    check::<1>(&queries, 0xFFFF);
}

#[test]
fn weighted_sum_edge_cases() {
    let mut queries = Vec::new();
    // Single row, p = P_ONE, every special value: out = fx(v) exactly
    // (α = P_ONE), and blended with extreme v̄ at α = 0, ½, 1 − 2^−30.
    for alpha in [P_ONE, 0, P_ONE / 2, P_ONE - 1, u32::MAX] {
        for vm in [0, i32::MIN, i32::MAX] {
            queries.push(WsQuery {
                d: SPECIAL.len(),
                rows: vec![(P_ONE, SPECIAL.to_vec())],
                alpha,
                vmean: vec![vm; SPECIAL.len()],
            });
        }
    }
    // The largest sums: Σp = 2^30 on ±Inf (acc = ±2^30·FX_MAX ≈ 2^60).
    for h in [0x7C00u16, 0xFC00, 0x7BFF, 0xFBFF] {
        queries.push(WsQuery {
            d: 256,
            rows: (0..4).map(|_| (P_ONE / 4, vec![h; 256])).collect(),
            alpha: P_ONE,
            vmean: vec![],
        });
    }
    // p beyond a softmax's (any u32): sums up to 2^62, clamped to i32.
    queries.push(WsQuery {
        d: 9,
        rows: vec![(u32::MAX, vec![0x7C00; 9]), (u32::MAX, vec![0x7BFF; 9])],
        alpha: P_ONE,
        vmean: vec![0; 9],
    });
    queries.push(WsQuery {
        d: 9,
        rows: vec![(u32::MAX, vec![0xFC00; 9]), (u32::MAX, vec![0xFBFF; 9])],
        alpha: P_ONE / 3,
        vmean: vec![i32::MIN; 9],
    });
    // Rounding half up at the 2^29 boundary: p = 1, v = ±0.5 Fx·2^… .
    queries.push(WsQuery {
        d: 3,
        rows: vec![(1 << 15, vec![0x3C00, 0xBC00, 0x3800])],
        alpha: P_ONE,
        vmean: vec![0; 3],
    });
    // d = 1, d = L ± 1, d = 255, d = 256, no rows at all, d = 0.
    for d in [1usize, 7, 8, 9, 255, 256] {
        let rows = (0..3)
            .map(|r| {
                (
                    P_ONE / 3,
                    (0..d)
                        .map(|i| ((i * 37 + r * 11) as u16) & 0x4FFF)
                        .collect(),
                )
            })
            .collect();
        queries.push(WsQuery {
            d,
            rows,
            alpha: P_ONE / 5,
            vmean: (0..d).map(|i| (i as i32 - 100) << 12).collect(),
        });
    }
    queries.push(WsQuery {
        d: 5,
        rows: vec![],
        alpha: 7,
        vmean: vec![1 << 20, -(1 << 20), i32::MAX, i32::MIN, 3],
    });
    queries.push(WsQuery {
        d: 0,
        rows: vec![(P_ONE, vec![]), (P_ONE, vec![])],
        alpha: P_ONE,
        vmean: vec![],
    });
    for pad in [0x7C00, 0xFE00, 0x7BFF] {
        check::<SYNTH_LANES>(&queries, pad);
    }
    check::<4>(&queries, 0xFC00);
}

/// Every fp16 pattern on every lane: p = 2^30 on one row → out = fx(v).
#[test]
fn weighted_sum_fx_every_fp16() {
    const L: usize = SYNTH_LANES;
    let queries: Vec<WsQuery> = (0..(65536 / 256))
        .map(|k| WsQuery {
            d: 256,
            rows: vec![(P_ONE, (0..256).map(|i| (k * 256 + i) as u16).collect())],
            alpha: P_ONE,
            vmean: vec![],
        })
        .collect();
    let run = check::<L>(&queries, 0);
    let got = run.outputs(&queries, L).concat();
    for (h, x) in got.iter().enumerate() {
        assert_eq!(*x, fx(h as u16), "fx({h:#06x})");
    }
}

/// ⌈d/L⌉ clocks per row and per finish; the first output leaves LATENCY
/// clocks after the first finish beat, the last LATENCY after the last.
#[test]
fn weighted_sum_cycles() {
    const L: usize = SYNTH_LANES;
    let mut rng = SplitMix64::new(9);
    for d in [1usize, 7, 8, 9, 64, 100, 128, 256] {
        let s = 20;
        let probs = random_probs(&mut rng, s);
        let query = WsQuery {
            d,
            rows: probs
                .into_iter()
                .map(|p| (p, (0..d).map(|_| random_fp16(&mut rng, 1)).collect()))
                .collect(),
            alpha: P_ONE / 2,
            vmean: random_vmean(&mut rng, d),
        };
        let stim = stimulus(std::slice::from_ref(&query), L, 0);
        let first_row = stim.iter().position(|c| c.v_valid).expect("rows");
        let first_fin = stim.iter().position(|c| c.f_valid).expect("finish");
        let last_fin = stim.iter().rposition(|c| c.f_valid).expect("finish");
        let b = beats(d, L);
        assert_eq!(first_fin - first_row, s * b, "rows back to back");
        let run = check::<L>(&[query], 0);
        assert_eq!(run.out_clock[0] - first_fin, LATENCY, "d = {d}");
        assert_eq!(*run.out_clock.last().expect("out") - last_fin, LATENCY);
        for w in run.out_clock.windows(2) {
            assert_eq!(w[1] - w[0], 1);
        }
        eprintln!(
            "weighted_sum L={L} d={d}: {b} clocks per row, finish {b} clocks + {LATENCY} latency; \
             S={s} rows: {} clocks from first row beat to last output",
            run.out_clock.last().expect("out") + 1 - first_row
        );
    }
}

/// Idle clocks anywhere change nothing but the timing.
#[test]
fn weighted_sum_idle_clocks_are_harmless() {
    let mut rng = SplitMix64::new(0x1D7F);
    let queries: Vec<WsQuery> = (0..30).map(|_| random_query(&mut rng, 5)).collect();
    let mut stim = Vec::new();
    for c in stimulus(&queries, SYNTH_LANES, 0x7C00) {
        while rng.next_u64().is_multiple_of(4) {
            stim.push(WsCycle {
                p: rng.next_u64() as u32,
                alpha: rng.next_u64() as u32,
                v: vec![0x7C00; SYNTH_LANES],
                ..WsCycle::default()
            });
        }
        stim.push(c);
    }
    let run = run::<SYNTH_LANES>(&stim);
    let want: Vec<Vec<i32>> = queries.iter().map(model).collect();
    assert_eq!(run.outputs(&queries, SYNTH_LANES), want);
}

/// rust-hdl's own threaded `Simulation` agrees with `crate::sim`.
#[test]
fn weighted_sum_rust_hdl_simulation_agrees() {
    const L: usize = 4;
    let mut rng = SplitMix64::new(78);
    let queries: Vec<WsQuery> = (0..3)
        .map(|_| {
            let mut q = random_query(&mut rng, 3);
            q.d = q.d.min(10);
            for (_, r) in &mut q.rows {
                r.truncate(q.d);
            }
            q.vmean.truncate(q.d);
            q
        })
        .collect();
    let stim = stimulus(&queries, L, 0x7C00);
    let want = run::<L>(&stim);
    let mut uut = WeightedSum::<L>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<WeightedSum<L>>| {
        x.clock.next = !x.clock.val()
    });
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<WeightedSum<L>>| {
        let mut x = sim.init()?;
        wait_clock_false!(sim, clock, x);
        for c in &stim {
            x.drive(c);
            wait_clock_true!(sim, clock, x);
            wait_clock_false!(sim, clock, x);
            if x.out_valid.val() {
                let beat: Vec<i32> = x.out_data.iter().map(|o| o.val().to_u32() as i32).collect();
                sink.lock().expect("lock").push(beat);
            }
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 20 * (n as u64 + 10))
        .expect("simulation");
    let model: Vec<Vec<i32>> = queries.iter().map(model).collect();
    assert_eq!(want.outputs(&queries, L), model);
    assert_eq!(*got.lock().expect("lock"), want.beats);
}
