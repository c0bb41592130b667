//! SketchRow against `attention::engine::sketch_row`, bit for bit, and the
//! multiplexer wired into a `GemvUnit` against `attention::engine::logit`
//! of the decoded rows.

use super::*;
use crate::gemv::{self, GemvCycle, GemvUnit};
use attention::engine::{
    dense_scale, f32_to_f16_bits, fx, logit, sketch_levels, sketch_pack, sketch_row, summarize,
};
use attention::testdata::SplitMix64;

/// fp16 patterns the GeMV's decoder tells apart, both signs (±0 too).
const SPECIAL: [u16; 12] = [
    0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x3C00, 0xBC00,
];

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

fn special(rng: &mut SplitMix64) -> u16 {
    SPECIAL[pick(rng, SPECIAL.len())]
}

/// A key element: mostly key-like, sometimes a special pattern.
fn key(rng: &mut SplitMix64) -> u16 {
    if rng.next_u64().is_multiple_of(16) {
        special(rng)
    } else {
        f32_to_f16_bits(rng.normal())
    }
}

/// The sketch of `n × d` keys as the engine builds it: codes packed
/// against the keys' summary, levels from the summary.
fn real_page(keys: &[u16], d: usize, bits: u32) -> SketchPage {
    let (mut summary, mut codes, mut levels) = (Vec::new(), Vec::new(), Vec::new());
    summarize(keys, d, &mut summary);
    sketch_pack(keys, &summary, d, bits, &mut codes);
    sketch_levels(&summary, d, bits, &mut levels);
    SketchPage {
        d,
        bits,
        rows: keys.len() / d.max(1),
        codes,
        levels,
    }
}

/// A random page: the engine's sketch of random keys, or raw code bytes
/// and a table of raw fp16 patterns (NaN, ±Inf, −0 among them: the block
/// passes any bits), now and then cut short (the model reads 0 there).
fn random_page(rng: &mut SplitMix64) -> SketchPage {
    let d = match rng.next_u64() % 8 {
        0 => 0,
        1 => 64,
        2 => 128,
        3 => 256,
        4 | 5 => 1 + pick(rng, 12),
        _ => pick(rng, 257),
    };
    let bits = 1 + (rng.next_u64() % 2) as u32;
    let rows = 1 + pick(rng, 6);
    if d > 0 && rng.next_u64().is_multiple_of(2) {
        let keys: Vec<u16> = (0..rows * d).map(|_| key(rng)).collect();
        return real_page(&keys, d, bits);
    }
    let mut codes: Vec<u8> = (0..(rows * d * bits as usize).div_ceil(8))
        .map(|_| rng.next_u64() as u8)
        .collect();
    let mut levels: Vec<u16> = (0..(1 << bits) * d)
        .map(|_| match rng.next_u64() % 3 {
            0 => special(rng),
            _ => rng.next_u64() as u16,
        })
        .collect();
    if rng.next_u64().is_multiple_of(8) {
        codes.truncate(pick(rng, codes.len() + 1));
        levels.truncate(pick(rng, levels.len() + 1));
    }
    SketchPage {
        d,
        bits,
        rows,
        codes,
        levels,
    }
}

fn model(page: &SketchPage, r: usize) -> Vec<u16> {
    let mut row = vec![0u16; page.d];
    sketch_row(&page.codes, &page.levels, r, page.bits, &mut row);
    row
}

/// `stim` with random codes and levels on its idle clocks (`in_valid`
/// low), which the block must ignore.
fn idle_noise(mut stim: Vec<SketchCycle>, lanes: usize, seed: u64) -> Vec<SketchCycle> {
    let mut rng = SplitMix64::new(seed);
    for c in stim.iter_mut().filter(|c| !c.in_valid) {
        c.code = (0..lanes).map(|_| (rng.next_u64() % 4) as u8).collect();
        c.level = std::array::from_fn(|_| (0..lanes).map(|_| rng.next_u64() as u16).collect());
    }
    stim
}

/// Streams `pages` through an `N`-lane block (noise on the idle clocks)
/// and checks every row against the model and every beat's clock (out
/// right after its own edge).
fn check<const N: usize>(pages: &[SketchPage], pad: u16, gap: usize) {
    let stim = idle_noise(stimulus(pages, N, pad, gap), N, gap as u64);
    let run = run::<N>(&stim);
    let dims = row_dims(pages);
    let got = run.rows(&dims, N);
    assert_eq!(got.len(), dims.len());
    let mut rows = got.iter();
    for (n, page) in pages.iter().enumerate() {
        for r in 0..page.rows {
            let g = rows.next().expect("row");
            assert_eq!(
                *g,
                model(page, r),
                "N = {N}, page {n} row {r}: d = {}, bits = {}, codes = {:02x?}, levels = {:04x?}",
                page.d,
                page.bits,
                page.codes,
                page.levels
            );
        }
    }
    let beat_clocks: Vec<usize> = stim
        .iter()
        .enumerate()
        .filter(|(_, c)| c.in_valid)
        .map(|(t, _)| t)
        .collect();
    assert_eq!(run.out_clock, beat_clocks, "one beat out per beat in");
}

/// How often each code occurs among the elements of `pages` with `bits`.
fn code_counts(pages: &[SketchPage], bits: u32) -> [usize; 4] {
    let mut n = [0; 4];
    for p in pages.iter().filter(|p| p.bits == bits) {
        for r in 0..p.rows {
            for i in 0..p.d {
                n[usize::from(p.code(r, i))] += 1;
            }
        }
    }
    n
}

#[test]
fn sketch_row_random_pages_match_model() {
    let mut rng = SplitMix64::new(0x5E_7C01);
    let pages: Vec<SketchPage> = (0..150).map(|_| random_page(&mut rng)).collect();
    // Every multiplexer input is picked often, in both widths, and the
    // pages cover d = 0, odd d and both widths' real sketches.
    let (c1, c2) = (code_counts(&pages, 1), code_counts(&pages, 2));
    assert!(
        c1[0] > 2_000 && c1[1] > 2_000 && c1[2] + c1[3] == 0,
        "{c1:?}"
    );
    assert!(c2.iter().all(|&n| n > 1_000), "{c2:?}");
    assert!(pages.iter().any(|p| p.d == 0) && pages.iter().any(|p| p.d % 8 != 0));
    check::<SYNTH_LANES>(&pages, 0x7E00, 0);
    check::<SYNTH_LANES>(&pages, 0xFFFF, 3);
}

#[test]
fn sketch_row_four_and_one_lanes_match_model() {
    let mut rng = SplitMix64::new(0x5E_7C02);
    let pages: Vec<SketchPage> = (0..60).map(|_| random_page(&mut rng)).collect();
    check::<4>(&pages, 0x7C00, 5);
    check::<1>(&pages[..20], 0xFC00, 2);
}

/// Each code picks its own level, the levels a 1-bit code cannot reach
/// are never picked, and the chosen bits pass untouched: ±0, NaN and
/// ±Inf included.
#[test]
fn sketch_row_code_edges() {
    // 2 bits, d = 8: row 0 has codes 0, 1, 2, 3, 3, 2, 1, 0.
    let codes = vec![0b1110_0100, 0b0001_1011];
    let levels: Vec<u16> = [
        [
            0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7BFF, 0xFBFF,
        ],
        [
            0x8000, 0x0000, 0xFC00, 0x7C00, 0xFE01, 0x7E00, 0xFBFF, 0x7BFF,
        ],
        [
            0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8001, 0x0000, 0x3C00, 0xBC00,
        ],
        [
            0xFC00, 0x7E00, 0x0001, 0x8001, 0x3C00, 0xBC00, 0x8000, 0x0000,
        ],
    ]
    .concat();
    let two = SketchPage {
        d: 8,
        bits: 2,
        rows: 1,
        codes,
        levels,
    };
    let want2 = [
        0x0000u16, 0x0000, 0x7E00, 0x8001, 0x3C00, 0x0000, 0xFBFF, 0xFBFF,
    ];
    assert_eq!(model(&two, 0), want2);
    // 1 bit, d = 8: codes 1, 0, 1, 1, 0, 0, 1, 0; levels 2 and 3 (the
    // padding) are a NaN and +0, neither of which may reach the outputs.
    let one = SketchPage {
        d: 8,
        bits: 1,
        rows: 1,
        codes: vec![0b0100_1101],
        levels: two.levels[..16].to_vec(),
    };
    let want1 = [
        0x8000u16, 0x8000, 0xFC00, 0x7C00, 0x7E00, 0xFE01, 0xFBFF, 0xFBFF,
    ];
    assert_eq!(model(&one, 0), want1);
    for pad in [0x7D00, 0x0000] {
        assert!(!want1.contains(&pad));
        let run = run::<8>(&stimulus(&[two.clone(), one.clone()], 8, pad, 0));
        assert_eq!(run.beats, [want2.to_vec(), want1.to_vec()], "pad {pad:04x}");
    }
}

/// The multiplexer wired into a GeMV unit, as it sits in front of the
/// GeMV lanes: its registered outputs are the unit's key beat.
#[derive(LogicBlock, Default)]
struct SketchGemv {
    clock: Signal<In, Clock>,
    q_we: Signal<In, Bit>,
    q_addr: Signal<In, Bits<8>>,
    q_data: Signal<In, Bits<32>>,
    start: Signal<In, Bit>,
    d: Signal<In, Bits<9>>,
    c: Signal<In, Bits<32>>,
    in_valid: Signal<In, Bit>,
    code: [Signal<In, Bits<2>>; 8],
    level0: [Signal<In, Bits<16>>; 8],
    level1: [Signal<In, Bits<16>>; 8],
    level2: [Signal<In, Bits<16>>; 8],
    level3: [Signal<In, Bits<16>>; 8],
    out_valid: Signal<Out, Bit>,
    out_logit: Signal<Out, Bits<32>>,
    mux: SketchRow<8>,
    gemv: GemvUnit<8>,
}

impl Logic for SketchGemv {
    #[hdl_gen]
    fn update(&mut self) {
        self.mux.clock.next = self.clock.val();
        self.gemv.clock.next = self.clock.val();
        self.mux.in_valid.next = self.in_valid.val();
        for j in 0..8 {
            self.mux.code[j].next = self.code[j].val();
            self.mux.level0[j].next = self.level0[j].val();
            self.mux.level1[j].next = self.level1[j].val();
            self.mux.level2[j].next = self.level2[j].val();
            self.mux.level3[j].next = self.level3[j].val();
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
    beat: SketchCycle,
}

/// Scores every row of `pages` (all of head dim `d`) for the `g` query
/// heads of `qf` (`g × d`), head after head: the head's q written into the
/// GeMV, `start` with the dense scale, then the pages' rows' beats back to
/// back. Returns the logits (head-major) and the clock of each.
fn score_rows(qf: &[i32], g: usize, d: usize, pages: &[SketchPage]) -> (Vec<i32>, Vec<usize>) {
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
        for page in pages {
            for r in 0..page.rows {
                for b in 0..gemv::beats(d, 8) {
                    stim.push(PairCycle {
                        beat: SketchCycle::beat(page, r, b, 8, 0x7E00),
                        ..PairCycle::default()
                    });
                }
            }
        }
    }
    stim.extend(std::iter::repeat_n(
        PairCycle::default(),
        gemv::LATENCY + LATENCY + 1,
    ));
    let mut uut = SketchGemv::default();
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
        let level = |k: usize, j: usize| u64::from(c.beat.level[k].get(j).copied().unwrap_or(0));
        for j in 0..8 {
            uut.code[j].next = u64::from(c.beat.code.get(j).copied().unwrap_or(0)).into();
            uut.level0[j].next = level(0, j).into();
            uut.level1[j].next = level(1, j).into();
            uut.level2[j].next = level(2, j).into();
            uut.level3[j].next = level(3, j).into();
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
fn sketch_row_into_gemv_gives_row_logits() {
    let mut rng = SplitMix64::new(0x5E_7C03);
    for (g, d, t, n_pages, bits) in [(3, 64, 4, 3, 2), (2, 20, 5, 2, 1), (1, 128, 3, 2, 2)] {
        let pages: Vec<SketchPage> = (0..n_pages)
            .map(|_| {
                let keys: Vec<u16> = (0..t * d).map(|_| f32_to_f16_bits(rng.normal())).collect();
                real_page(&keys, d, bits)
            })
            .collect();
        let mut qf: Vec<i32> = (0..g * d)
            .map(|_| fx(f32_to_f16_bits(rng.normal())))
            .collect();
        // Zeros (both fp16 zeros map to q = 0) and the extremes.
        qf[0] = fx(0x8000);
        qf[1] = 0;
        qf[2] = i32::MIN;
        let c = dense_scale(d);
        let mut want = Vec::new();
        for q in qf.chunks_exact(d) {
            for page in &pages {
                for r in 0..page.rows {
                    want.push(logit(q, &model(page, r), c));
                }
            }
        }
        let (got, clocks) = score_rows(&qf, g, d, &pages);
        assert_eq!(got, want, "g = {g}, d = {d}, {n_pages} pages of {t}");
        // Each head: d q writes and `start`, then a row's logit leaves
        // ⌈d/8⌉ − 1 + LATENCY (multiplexer) + gemv::LATENCY clocks after
        // the row's first beat; rows follow each other every ⌈d/8⌉.
        let nb = gemv::beats(d, 8);
        let rows = t * n_pages;
        assert_eq!(clocks.len(), g * rows);
        for h in 0..g {
            let first_beat = h * (d + 1 + rows * nb) + d + 1;
            for n in 0..rows {
                assert_eq!(
                    clocks[h * rows + n],
                    first_beat + n * nb + nb - 1 + LATENCY + gemv::LATENCY,
                    "head {h} row {n}"
                );
            }
        }
        // Not a trivial case: the decoded rows score differently.
        assert!(want.windows(2).any(|w| w[0] != w[1]), "{want:?}");
    }
}

/// rust-hdl's own threaded `Simulation` agrees with `crate::sim`.
#[test]
fn sketch_row_rust_hdl_simulation_agrees() {
    const N: usize = 4;
    let mut rng = SplitMix64::new(0x5E_7C04);
    let pages: Vec<SketchPage> = (0..4).map(|_| random_page(&mut rng)).collect();
    let stim = stimulus(&pages, N, 0x7C00, 2);
    let want = run::<N>(&stim);
    let mut uut = SketchRow::<N>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<SketchRow<N>>| x.clock.next = !x.clock.val());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<SketchRow<N>>| {
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
    assert!(want.beats.len() > 20);
    assert_eq!(*got.lock().expect("lock"), want.beats);
}
