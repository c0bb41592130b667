//! BoundRow against `attention::engine::bound_row`, bit for bit, and the
//! multiplexer wired into a `GemvUnit` against
//! `attention::engine::page_logits`.

use super::*;
use crate::gemv::{self, GemvCycle, GemvUnit};
use attention::engine::{bound_row, dense_scale, f32_to_f16_bits, fx, page_logits, summarize};
use attention::testdata::SplitMix64;

/// fp16 patterns the GeMV's decoder tells apart, both signs (±0 too).
const SPECIAL: [u16; 12] = [
    0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x3C00, 0xBC00,
];

/// A query element: the engine's `fx` of an fp16 (−0 and +0 give 0), 0,
/// the extremes, or any i32.
fn q_elem(rng: &mut SplitMix64) -> i32 {
    match rng.next_u64() % 6 {
        0 => fx(SPECIAL[(rng.next_u64() % SPECIAL.len() as u64) as usize]),
        1 => fx(f32_to_f16_bits(rng.normal())),
        2 => 0,
        3 => [i32::MIN, -1, 1, i32::MAX][(rng.next_u64() % 4) as usize],
        _ => rng.next_u64() as i32,
    }
}

/// A `min ‖ max` summary of d elements: that of a random page of keys, or
/// raw fp16 patterns (min > max, NaN, −0: the block passes any bits).
fn summary(rng: &mut SplitMix64, d: usize) -> Vec<u16> {
    if d > 0 && rng.next_u64().is_multiple_of(2) {
        let t = 1 + (rng.next_u64() % 8) as usize;
        let keys: Vec<u16> = (0..t * d).map(|_| f32_to_f16_bits(rng.normal())).collect();
        let mut s = Vec::new();
        summarize(&keys, d, &mut s);
        s
    } else {
        (0..2 * d)
            .map(|_| match rng.next_u64() % 3 {
                0 => SPECIAL[(rng.next_u64() % SPECIAL.len() as u64) as usize],
                _ => rng.next_u64() as u16,
            })
            .collect()
    }
}

fn random_rows(rng: &mut SplitMix64, n: usize) -> Vec<(Vec<i32>, Vec<u16>)> {
    (0..n)
        .map(|_| {
            let d = match rng.next_u64() % 6 {
                0 => 0,
                1 => 256,
                2 => 1 + (rng.next_u64() % 12) as usize,
                _ => (rng.next_u64() % 257) as usize,
            };
            let q = (0..d).map(|_| q_elem(rng)).collect();
            (q, summary(rng, d))
        })
        .collect()
}

fn model(q: &[i32], s: &[u16]) -> Vec<u16> {
    let mut row = vec![0u16; q.len()];
    bound_row(q, s, &mut row);
    row
}

/// Streams `rows` through an `N`-lane block and checks every row against
/// the model and every beat's clock (out right after its own edge).
fn check<const N: usize>(rows: &[(Vec<i32>, Vec<u16>)], pad: u16, gap: usize) {
    let stim = stimulus(rows, N, pad, gap);
    let run = run::<N>(&stim);
    let dims: Vec<usize> = rows.iter().map(|(q, _)| q.len()).collect();
    let got = run.rows(&dims, N);
    assert_eq!(got.len(), rows.len());
    for (n, ((q, s), g)) in rows.iter().zip(&got).enumerate() {
        assert_eq!(*g, model(q, s), "N = {N}, row {n}: q = {q:?}, s = {s:04x?}");
    }
    let beat_clocks: Vec<usize> = stim
        .iter()
        .enumerate()
        .filter(|(_, c)| c.in_valid)
        .map(|(t, _)| t)
        .collect();
    assert_eq!(run.out_clock, beat_clocks, "one beat out per beat in");
}

#[test]
fn bound_row_random_summaries_match_model() {
    let mut rng = SplitMix64::new(0xB0_0D01);
    let rows = random_rows(&mut rng, 400);
    let elems: usize = rows.iter().map(|(q, _)| q.len()).sum();
    let zeros = rows
        .iter()
        .flat_map(|(q, _)| q)
        .filter(|&&x| x == 0)
        .count();
    assert!(
        elems > 30_000 && zeros > 3_000,
        "{elems} elements, {zeros} q = 0"
    );
    check::<SYNTH_LANES>(&rows, 0x7E00, 0);
    check::<SYNTH_LANES>(&rows, 0xFFFF, 3);
}

#[test]
fn bound_row_four_and_one_lanes_match_model() {
    let mut rng = SplitMix64::new(0xB0_0D02);
    let rows = random_rows(&mut rng, 120);
    check::<4>(&rows, 0x7C00, 5);
    check::<1>(&rows[..40], 0, 0);
}

/// q = 0 (also `fx` of −0) picks max, any negative q picks min, and the
/// chosen bits pass untouched: ±0, NaN and ±Inf included.
#[test]
fn bound_row_sign_edges() {
    let q = vec![
        0,
        fx(0x8000),
        fx(0x0000),
        -1,
        1,
        i32::MIN,
        i32::MAX,
        fx(0x8001),
    ];
    assert_eq!(fx(0x8000), 0);
    let min = [
        0x8000, 0x0000, 0x8000, 0x7E00, 0xFC00, 0x8000, 0x1234, 0xFBFF,
    ];
    let max = [
        0x0000, 0x8000, 0x7E00, 0x8000, 0x7C00, 0x0000, 0xFE01, 0x7BFF,
    ];
    let s: Vec<u16> = min.iter().chain(&max).copied().collect();
    let want = [
        0x0000u16, 0x8000, 0x7E00, 0x7E00, 0x7C00, 0x8000, 0xFE01, 0x7BFF,
    ];
    assert_eq!(model(&q, &s), want);
    let run = run::<8>(&stimulus(&[(q, s)], 8, 0, 0));
    assert_eq!(run.beats, [want.to_vec()]);
}

/// The multiplexer wired into a GeMV unit, as it sits in front of the
/// GeMV lanes: its registered outputs are the unit's key beat.
#[derive(LogicBlock, Default)]
struct BoundGemv {
    clock: Signal<In, Clock>,
    q_we: Signal<In, Bit>,
    q_addr: Signal<In, Bits<8>>,
    q_data: Signal<In, Bits<32>>,
    start: Signal<In, Bit>,
    d: Signal<In, Bits<9>>,
    c: Signal<In, Bits<32>>,
    in_valid: Signal<In, Bit>,
    k_min: [Signal<In, Bits<16>>; 8],
    k_max: [Signal<In, Bits<16>>; 8],
    q_neg: [Signal<In, Bit>; 8],
    out_valid: Signal<Out, Bit>,
    out_logit: Signal<Out, Bits<32>>,
    mux: BoundRow<8>,
    gemv: GemvUnit<8>,
}

impl Logic for BoundGemv {
    #[hdl_gen]
    fn update(&mut self) {
        self.mux.clock.next = self.clock.val();
        self.gemv.clock.next = self.clock.val();
        self.mux.in_valid.next = self.in_valid.val();
        for j in 0..8 {
            self.mux.k_min[j].next = self.k_min[j].val();
            self.mux.k_max[j].next = self.k_max[j].val();
            self.mux.q_neg[j].next = self.q_neg[j].val();
            self.gemv.k_data[j].next = self.mux.out_data[j].val();
        }
        self.gemv.k_valid.next = self.mux.out_valid.val();
        self.gemv.q_we.next = self.q_we.val();
        self.gemv.q_addr.next = self.q_addr.val();
        self.gemv.q_data.next = self.q_data.val();
        self.gemv.start.next = self.start.val();
        self.gemv.d.next = self.d.val();
        self.gemv.c.next = self.c.val();
        self.out_valid.next = self.gemv.out_valid.val();
        self.out_logit.next = self.gemv.out_logit.val();
    }
}

/// One clock of the pair: the GeMV's q and `start` inputs, the
/// multiplexer's beat.
#[derive(Clone, Debug, Default)]
struct PairCycle {
    gemv: GemvCycle,
    beat: BoundCycle,
}

/// Scores `pages` summaries (`min ‖ max`, 2·d each) for the `g` query
/// heads of `qf` (`g × d`), head after head: the head's q written into the
/// GeMV, `start` with the dense scale, then each page's bound-row beats
/// back to back. Returns the logits (head-major) and the clock of each.
fn score_pages(qf: &[i32], g: usize, d: usize, summaries: &[u16]) -> (Vec<i32>, Vec<usize>) {
    let mut stim: Vec<PairCycle> = Vec::new();
    for q in qf.chunks_exact(d).take(g) {
        for (i, &x) in q.iter().enumerate() {
            stim.push(PairCycle {
                gemv: GemvCycle {
                    q_we: true,
                    q_addr: i as u8,
                    q_data: x as u32,
                    ..GemvCycle::default()
                },
                ..PairCycle::default()
            });
        }
        stim.push(PairCycle {
            gemv: GemvCycle {
                start: true,
                d: d as u16,
                c: dense_scale(d),
                ..GemvCycle::default()
            },
            ..PairCycle::default()
        });
        for s in summaries.chunks_exact(2 * d) {
            for b in 0..gemv::beats(d, 8) {
                stim.push(PairCycle {
                    beat: BoundCycle::beat(q, s, b, 8, 0x7E00),
                    ..PairCycle::default()
                });
            }
        }
    }
    stim.extend(std::iter::repeat_n(
        PairCycle::default(),
        gemv::LATENCY + LATENCY + 1,
    ));
    let mut uut = BoundGemv::default();
    crate::sim::prepare(&mut uut);
    let (mut logits, mut clocks) = (Vec::new(), Vec::new());
    for (t, c) in stim.iter().enumerate() {
        uut.q_we.next = c.gemv.q_we;
        uut.q_addr.next = u64::from(c.gemv.q_addr).into();
        uut.q_data.next = u64::from(c.gemv.q_data).into();
        uut.start.next = c.gemv.start;
        uut.d.next = u64::from(c.gemv.d).into();
        uut.c.next = u64::from(c.gemv.c).into();
        uut.in_valid.next = c.beat.in_valid;
        for j in 0..8 {
            uut.q_neg[j].next = c.beat.q_neg.get(j).copied().unwrap_or(false);
            uut.k_min[j].next = u64::from(c.beat.k_min.get(j).copied().unwrap_or(0)).into();
            uut.k_max[j].next = u64::from(c.beat.k_max.get(j).copied().unwrap_or(0)).into();
        }
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            logits.push(uut.out_logit.val().to_u32() as i32);
            clocks.push(t);
        }
    }
    (logits, clocks)
}

#[test]
fn bound_row_into_gemv_gives_page_logits() {
    let mut rng = SplitMix64::new(0xB0_0D03);
    for (g, d, pages) in [(3, 64, 6), (2, 20, 5), (1, 128, 3)] {
        let t = 4;
        let mut summaries = Vec::new();
        for _ in 0..pages {
            let keys: Vec<u16> = (0..t * d).map(|_| f32_to_f16_bits(rng.normal())).collect();
            let mut s = Vec::new();
            summarize(&keys, d, &mut s);
            summaries.extend(s);
        }
        let mut qf: Vec<i32> = (0..g * d)
            .map(|_| fx(f32_to_f16_bits(rng.normal())))
            .collect();
        // Zeros (both fp16 zeros map to q = 0) and the extremes.
        qf[0] = fx(0x8000);
        qf[1] = 0;
        qf[2] = i32::MIN;
        let mut want = Vec::new();
        page_logits(&qf, g, d, &summaries, &mut want);
        let (got, clocks) = score_pages(&qf, g, d, &summaries);
        assert_eq!(got, want, "g = {g}, d = {d}, {pages} pages");
        // Each head: d q writes and `start`, then a page's logit leaves
        // ⌈d/8⌉ − 1 + LATENCY (multiplexer) + gemv::LATENCY clocks after
        // the page's first beat; pages follow each other every ⌈d/8⌉.
        let nb = gemv::beats(d, 8);
        for h in 0..g {
            let first_beat = h * (d + 1 + pages * nb) + d + 1;
            for p in 0..pages {
                assert_eq!(
                    clocks[h * pages + p],
                    first_beat + p * nb + nb - 1 + LATENCY + gemv::LATENCY
                );
            }
        }
        // Not a trivial case: the bounds differ from page to page.
        assert!(want.windows(2).any(|w| w[0] != w[1]), "{want:?}");
    }
}

/// rust-hdl's own threaded `Simulation` agrees with `crate::sim`.
#[test]
fn bound_row_rust_hdl_simulation_agrees() {
    const N: usize = 4;
    let mut rng = SplitMix64::new(0xB0_0D04);
    let rows = random_rows(&mut rng, 6);
    let stim = stimulus(&rows, N, 0x7C00, 2);
    let want = run::<N>(&stim);
    let mut uut = BoundRow::<N>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<BoundRow<N>>| x.clock.next = !x.clock.val());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<BoundRow<N>>| {
        let mut x = sim.init()?;
        wait_clock_false!(sim, clock, x);
        for c in &stim {
            x.drive(c);
            wait_clock_true!(sim, clock, x);
            wait_clock_false!(sim, clock, x);
            if x.out_valid.val() {
                let beat: Vec<u16> = (0..N).map(|j| x.out_data[j].val().to_u16()).collect();
                sink.lock().expect("lock").push(beat);
            }
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 20 * (n as u64 + 10))
        .expect("simulation");
    assert!(!want.beats.is_empty());
    assert_eq!(*got.lock().expect("lock"), want.beats);
}
