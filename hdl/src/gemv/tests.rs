//! GemvUnit against `attention::engine::{fx, logit}`, bit for bit.

use super::*;
use attention::engine::{FX_MAX, fx, logit};
use attention::testdata::SplitMix64;

/// Every fp16 class the decoder distinguishes, both signs.
const SPECIAL: [u16; 20] = [
    0x7BFF, 0xFBFF, // ±65504
    0x7C00, 0xFC00, // ±Inf
    0x7E00, 0xFE01, 0x7C01, // NaN
    0x0001, 0x8001, // smallest subnormal (fx → 0)
    0x0200, 0x8200, // 2^-15: half an Fx step, rounds away from zero
    0x01FF, 0x03FF, // just below half a step; largest subnormal
    0x0400, 0x8400, // smallest normal
    0x0000, 0x8000, // ±0
    0x3C00, 0x2C01, // 1.0; e = 11 (shift 0)
    0x2BFF, // e = 10 (rounded shift by 1)
];

fn model(query: &GemvQuery) -> Vec<i32> {
    query
        .keys
        .iter()
        .map(|k| logit(&query.q, k, query.c))
        .collect()
}

/// Runs the queries back to back through an `L`-lane unit, checks every
/// logit against the model, and returns the run.
fn check<const L: usize>(queries: &[GemvQuery], pad: u16) -> GemvRun {
    let stim = stimulus(queries, L, pad);
    let run = run::<L>(&stim);
    let want: Vec<i32> = queries.iter().flat_map(model).collect();
    assert_eq!(run.logits.len(), want.len(), "one logit per row");
    let mut i = 0;
    for (n, query) in queries.iter().enumerate() {
        for (r, key) in query.keys.iter().enumerate() {
            assert_eq!(
                run.logits[i],
                want[i],
                "L = {L}, query {n} row {r}: d = {}, c = {}, q = {:?}, k = {key:04x?}",
                query.q.len(),
                query.c,
                query.q
            );
            i += 1;
        }
    }
    run
}

fn random_fp16(rng: &mut SplitMix64, class: u64) -> u16 {
    match class {
        // Any bit pattern: NaN, Inf, subnormals included.
        0 => rng.next_u64() as u16,
        // Key-like values: |x| around 1.
        1 => attention::engine::f32_to_f16_bits(rng.normal()),
        // Extremes and special values.
        2 => SPECIAL[(rng.next_u64() % SPECIAL.len() as u64) as usize],
        // Small magnitudes (subnormals and the rounding region).
        _ => (rng.next_u64() as u16) & 0x87FF,
    }
}

fn random_q(rng: &mut SplitMix64, d: usize) -> Vec<i32> {
    match rng.next_u64() % 4 {
        // Any i32, i32::MIN included now and then.
        0 => (0..d)
            .map(|_| {
                if rng.next_u64().is_multiple_of(16) {
                    i32::MIN
                } else {
                    rng.next_u64() as i32
                }
            })
            .collect(),
        // fx of fp16 values (the engine's q).
        1 => (0..d)
            .map(|_| {
                let class = rng.next_u64() % 4;
                fx(random_fp16(rng, class))
            })
            .collect(),
        // Small values: logits that neither saturate nor vanish.
        2 => (0..d)
            .map(|_| (rng.next_u64() % (1 << 16)) as i32 - (1 << 15))
            .collect(),
        _ => (0..d)
            .map(|_| (rng.next_u64() % (1 << 24)) as i32 - (1 << 23))
            .collect(),
    }
}

fn random_c(rng: &mut SplitMix64, d: usize) -> u32 {
    match rng.next_u64() % 6 {
        0 => 0,
        1 => 1 << 20,
        2 => attention::engine::dense_scale(d),
        3 => rng.next_u64() as u32, // beyond the engine's 2^20: any u32 works
        _ => (rng.next_u64() % ((1 << 20) + 1)) as u32,
    }
}

fn random_query(rng: &mut SplitMix64, max_rows: u64) -> GemvQuery {
    let d = match rng.next_u64() % 8 {
        0 => 256,
        1 => 1 + (rng.next_u64() % 16) as usize,
        2 => 0,
        _ => (rng.next_u64() % 257) as usize,
    };
    let q = random_q(rng, d);
    let c = random_c(rng, d);
    let rows = 1 + rng.next_u64() % max_rows;
    let keys = (0..rows)
        .map(|_| {
            let class = rng.next_u64() % 4;
            (0..d).map(|_| random_fp16(rng, class)).collect()
        })
        .collect();
    GemvQuery { q, c, keys }
}

#[test]
fn gemv_random_vectors_match_model() {
    let mut rng = SplitMix64::new(0x6E_3A11);
    let queries: Vec<GemvQuery> = (0..600).map(|_| random_query(&mut rng, 8)).collect();
    let rows: usize = queries.iter().map(|q| q.keys.len()).sum();
    let run = check::<SYNTH_LANES>(&queries, 0x7E00);
    // Coverage: saturation both ways and plain logits all occur.
    let pos = run.logits.iter().filter(|&&x| x == i32::MAX).count();
    let neg = run.logits.iter().filter(|&&x| x == i32::MIN).count();
    let plain = run
        .logits
        .iter()
        .filter(|&&x| x != 0 && x.unsigned_abs() < 1 << 30)
        .count();
    eprintln!("gemv L=8: {rows} rows, {pos} saturated high, {neg} low, {plain} plain");
    assert!(rows >= 2500, "{rows} rows");
    assert!(
        pos > 20 && neg > 20 && plain > rows / 5,
        "{pos} {neg} {plain}"
    );
}

#[test]
fn gemv_four_lanes_match_model() {
    let mut rng = SplitMix64::new(0x6E_3A12);
    let queries: Vec<GemvQuery> = (0..300).map(|_| random_query(&mut rng, 6)).collect();
    check::<4>(&queries, 0x7C00);
}

#[test]
fn gemv_one_lane_matches_model() {
    let mut rng = SplitMix64::new(0x6E_3A13);
    let queries: Vec<GemvQuery> = (0..60)
        .map(|_| {
            let mut query = random_query(&mut rng, 4);
            query.q.truncate(40);
            for k in &mut query.keys {
                k.truncate(query.q.len());
            }
            query
        })
        .collect();
    check::<1>(&queries, 0xFFFF);
}

/// Every fp16 bit pattern through the hardware `fx`, on every lane: q is
/// one-hot on lane `j` with value 1 and c = 2^28, so the logit is fx(k_j).
#[test]
fn gemv_fx_every_fp16_on_every_lane() {
    const L: usize = SYNTH_LANES;
    let mut queries = Vec::new();
    for j in 0..L {
        let mut q = vec![0; L];
        q[j] = 1;
        let keys = (0..=u16::MAX)
            .filter(|h| usize::from(*h) % L == j)
            .map(|h| {
                (0..L)
                    .map(|i| {
                        if i == j {
                            h
                        } else {
                            h.wrapping_mul(31) ^ 0x7C00
                        }
                    })
                    .collect()
            })
            .collect();
        queries.push(GemvQuery {
            q,
            c: 1 << 28,
            keys,
        });
    }
    let run = check::<L>(&queries, 0);
    let mut got: Vec<(u16, i32)> = Vec::new();
    let mut i = 0;
    for query in &queries {
        let j = query.q.iter().position(|&x| x == 1).expect("one-hot");
        for k in &query.keys {
            got.push((k[j], run.logits[i]));
            i += 1;
        }
    }
    assert_eq!(got.len(), 65536);
    for (h, x) in got {
        assert_eq!(x, fx(h), "fx({h:#06x})");
    }
}

#[test]
fn gemv_edge_cases() {
    let mut queries = Vec::new();
    // Special fp16 values against q = ±1.0 and extreme q, several c.
    for &c in &[0u32, 1, 1 << 16, 1 << 20, u32::MAX] {
        for &qv in &[1 << 14, -(1 << 14), i32::MAX, i32::MIN, 1, -1] {
            queries.push(GemvQuery {
                q: vec![qv],
                c,
                keys: SPECIAL.iter().map(|&h| vec![h]).collect(),
            });
        }
    }
    // Saturation both ways, and the largest |dot| (d = 256, |q| = 2^31,
    // |fx| = FX_MAX: 2047·2^58 < 2^69) with the largest c.
    for &c in &[1u32 << 20, u32::MAX, 1] {
        for &(qv, h) in &[
            (i32::MAX, 0x7BFFu16),
            (i32::MIN, 0x7BFF),
            (i32::MIN, 0xFC00),
            (i32::MIN, 0x7C00),
            (i32::MAX, 0xFC00),
        ] {
            queries.push(GemvQuery {
                q: vec![qv; 256],
                c,
                keys: vec![vec![h; 256]],
            });
        }
    }
    // Just at and around the clamp: dot·c >> 28 = 2^31 − 1, 2^31, −2^31,
    // −2^31 − 1 (q·fx(1.0) = q·2^14, c = 2^14 → logit = q).
    queries.push(GemvQuery {
        q: vec![i32::MAX],
        c: 1 << 14,
        keys: vec![vec![0x3C00], vec![0xBC00], vec![0x4000], vec![0xC000]],
    });
    queries.push(GemvQuery {
        q: vec![i32::MIN],
        c: 1 << 14,
        keys: vec![vec![0x3C00], vec![0xBC00], vec![0x4000], vec![0xC000]],
    });
    // Floor of negative logits: -1 Fx unit · 1.0 · c = 1 → −1.
    queries.push(GemvQuery {
        q: vec![-1, 0, 0],
        c: 1,
        keys: vec![vec![0x3C00, 0, 0], vec![0xBC00, 0x7E00, 0xFC00]],
    });
    // d = 1, d = 256, d not a multiple of the lanes, d = 0.
    for d in [1usize, 2, 7, 8, 9, 255, 256, 0] {
        let q: Vec<i32> = (0..d).map(|i| (i as i32 - 100) << 12).collect();
        let keys = (0..3)
            .map(|r| {
                (0..d)
                    .map(|i| ((i * 37 + r * 11) as u16) & 0x4FFF)
                    .collect()
            })
            .collect();
        queries.push(GemvQuery {
            q,
            c: attention::engine::dense_scale(d.max(1)),
            keys,
        });
    }
    // Every pad value is masked: Inf, NaN, 65504.
    for pad in [0x7C00, 0xFE00, 0x7BFF, 0xFFFF] {
        let run = check::<SYNTH_LANES>(&queries, pad);
        assert!(run.logits.contains(&i32::MAX) && run.logits.contains(&i32::MIN));
    }
    check::<4>(&queries, 0xFC00);
    // The bound is tight: FX_MAX is 2047·2^19.
    assert_eq!(FX_MAX, 2047 << 19);
}

/// Clocks per row: rows back to back give one logit every ⌈d/L⌉ clocks,
/// and a row's logit comes ⌈d/L⌉ + LATENCY − 1 clocks after its first
/// beat (⌈d/L⌉ + LATENCY clocks inclusive).
#[test]
fn gemv_cycles() {
    const L: usize = SYNTH_LANES;
    let mut rng = SplitMix64::new(5);
    for d in [1usize, 7, 8, 9, 64, 100, 128, 256] {
        let query = GemvQuery {
            q: random_q(&mut rng, d),
            c: 1 << 16,
            keys: (0..20)
                .map(|_| (0..d).map(|_| random_fp16(&mut rng, 1)).collect())
                .collect(),
        };
        let stim = stimulus(std::slice::from_ref(&query), L, 0);
        let first_beat = stim.iter().position(|c| c.k_valid).expect("beats");
        let run = check::<L>(&[query], 0);
        let b = beats(d, L);
        assert_eq!(run.out_clock[0] + 1 - first_beat, b + LATENCY, "d = {d}");
        for w in run.out_clock.windows(2) {
            assert_eq!(w[1] - w[0], b, "d = {d}: one row per ⌈d/L⌉ clocks");
        }
        eprintln!(
            "gemv L={L} d={d}: {b} clocks per row, {} from first beat to logit",
            b + LATENCY
        );
    }
}

/// Idle clocks anywhere (between q writes, beats and rows) change nothing
/// but the timing.
#[test]
fn gemv_idle_clocks_are_harmless() {
    let mut rng = SplitMix64::new(0x1D7E);
    let queries: Vec<GemvQuery> = (0..40).map(|_| random_query(&mut rng, 5)).collect();
    let mut stim = Vec::new();
    for c in stimulus(&queries, SYNTH_LANES, 0x7C00) {
        while rng.next_u64().is_multiple_of(4) {
            stim.push(GemvCycle::default());
        }
        stim.push(c);
    }
    let run = run::<SYNTH_LANES>(&stim);
    let want: Vec<i32> = queries.iter().flat_map(model).collect();
    assert_eq!(run.logits, want);
}

/// `start` in the middle of a row drops that row and begins afresh; q
/// writes during the previous query's rows in flight do not disturb them.
#[test]
fn gemv_start_aborts_a_row() {
    const L: usize = 4;
    let a = GemvQuery {
        q: vec![3 << 14; 10],
        c: 1 << 16,
        keys: vec![vec![0x3C00; 10]],
    };
    let b = GemvQuery {
        q: vec![-(5 << 14); 6],
        c: 1 << 16,
        keys: vec![vec![0x4000; 6], vec![0x3800; 6]],
    };
    let mut stim = stimulus(std::slice::from_ref(&a), L, 0);
    // Keep q writes, start and the first two of the row's three beats.
    let first = stim.iter().position(|c| c.k_valid).expect("beats");
    stim.truncate(first + 2);
    stim.extend(stimulus(std::slice::from_ref(&b), L, 0));
    let run = run::<L>(&stim);
    assert_eq!(run.logits, model(&b));
    assert_eq!(run.logits, [-(5 * 6 * 2) << 16, -(5 * 6) << 15]);
}

/// rust-hdl's own threaded `Simulation` agrees with `crate::sim`.
#[test]
fn gemv_rust_hdl_simulation_agrees() {
    const L: usize = 4;
    let mut rng = SplitMix64::new(77);
    let queries: Vec<GemvQuery> = (0..3)
        .map(|_| {
            let d = 1 + (rng.next_u64() % 12) as usize;
            GemvQuery {
                q: random_q(&mut rng, d),
                c: random_c(&mut rng, d),
                keys: (0..3)
                    .map(|_| (0..d).map(|_| random_fp16(&mut rng, 0)).collect())
                    .collect(),
            }
        })
        .collect();
    let stim = stimulus(&queries, L, 0x7C00);
    let want = run::<L>(&stim);
    let mut uut = GemvUnit::<L>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<GemvUnit<L>>| x.clock.next = !x.clock.val());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<GemvUnit<L>>| {
        let mut x = sim.init()?;
        wait_clock_false!(sim, clock, x);
        for c in &stim {
            x.drive(c);
            wait_clock_true!(sim, clock, x);
            wait_clock_false!(sim, clock, x);
            if x.out_valid.val() {
                sink.lock()
                    .expect("lock")
                    .push(x.out_logit.val().to_u32() as i32);
            }
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 20 * (n as u64 + 10))
        .expect("simulation");
    let model: Vec<i32> = queries.iter().flat_map(model).collect();
    assert_eq!(want.logits, model);
    assert_eq!(*got.lock().expect("lock"), want.logits);
}

#[test]
fn widen_zero_extends() {
    let x: Bits<16> = 0xFFFF.into();
    let y: Bits<70> = x.to_bits::<70>();
    assert_eq!(y.to_u128(), 0xFFFF);
}
