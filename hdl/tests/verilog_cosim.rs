//! The generated Verilog of each block, simulated with Icarus Verilog
//! (`iverilog`/`vvp`) on vectors dumped here, against the model: the same
//! bits as `firmware`'s `RowFilter` and `attention::engine::argtopk`, and
//! the same clocks as the rust-hdl simulation.
//!
//! Skips (with a note) when `iverilog` is not installed. `HDL_COSIM_SCALE`
//! multiplies the vector counts (`cargo xtask hdl sim` sets it); the
//! default is the short run CI does.

use std::path::{Path, PathBuf};
use std::process::Command;

use attention::testdata::SplitMix64;
use firmware::hal::RowFilter;
use hdl::argtopk::{self, SYNTH_K_MAX};
use hdl::nfc_filter::{self, NfcPage};

#[path = "support/dim_head.rs"]
mod dim_head;

fn have_iverilog() -> bool {
    testkit::require(
        testkit::tool::runs("iverilog", "-V"),
        "iverilog",
        "the Verilog co-simulation",
    )
}

fn scale() -> usize {
    std::env::var("HDL_COSIM_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

fn work_dir(block: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/hdl/cosim")
        .join(block);
    std::fs::create_dir_all(&dir).expect("create cosim dir");
    dir
}

/// Writes the block's Verilog and vectors, runs the testbench, returns the
/// output lines.
fn simulate(block: &str, lines: impl Iterator<Item = String>) -> Vec<String> {
    let dir = work_dir(block);
    let verilog = hdl::block(block).expect("block exists");
    let v = dir.join(format!("{block}.v"));
    std::fs::write(&v, verilog).expect("write verilog");
    let vectors = dir.join("vectors.hex");
    let mut text = String::new();
    for l in lines {
        text.push_str(&l);
        text.push('\n');
    }
    std::fs::write(&vectors, text).expect("write vectors");
    let tb = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tb/{block}_tb.v"));
    let exe = dir.join("sim.vvp");
    let status = Command::new("iverilog")
        .args(["-g2012", "-o"])
        .arg(&exe)
        .arg(&tb)
        .arg(&v)
        .status()
        .expect("run iverilog");
    assert!(status.success(), "iverilog failed");
    let out = dir.join("out.txt");
    let status = Command::new("vvp")
        .arg("-n")
        .arg(&exe)
        .arg(format!("+vectors={}", vectors.display()))
        .arg(format!("+out={}", out.display()))
        .status()
        .expect("run vvp");
    assert!(status.success(), "vvp failed");
    let text = std::fs::read_to_string(&out).expect("read output");
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert!(
        lines.last().is_some_and(|l| l.starts_with("end ")),
        "testbench did not finish"
    );
    lines
}

fn nfc_model(page: &NfcPage) -> Vec<u16> {
    let filter = RowFilter {
        rows: page.rows,
        row_bytes: 2 * page.row_len,
        keep_bytes: 2 * page.keep,
        mask: page.mask,
    };
    let bytes: Vec<u8> = page.data.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = vec![0u8; bytes.len()];
    let n = filter.apply(&bytes, &mut out).expect("page fits");
    out[..n]
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect()
}

fn nfc_page(rng: &mut SplitMix64) -> NfcPage {
    let rows = 1 + (rng.next_u64() % 256) as u16;
    let row_len = 8 * (1 + (rng.next_u64() % (64 / u64::from(rows)).max(1)) as u16);
    let keep = (rng.next_u64() % (u64::from(row_len) + 1)) as u16;
    let density = rng.next_u64() % 65;
    let mut mask = [0u64; 4];
    for r in 0..256 {
        if rng.next_u64() % 64 < density {
            mask[r / 64] |= 1 << (r % 64);
        }
    }
    let n = usize::from(rows) * usize::from(row_len) + 8 * (rng.next_u64() % 5) as usize;
    NfcPage {
        rows,
        row_len,
        keep,
        mask,
        data: (0..n).map(|_| rng.next_u64() as u16).collect(),
    }
}

/// fp16 values that stress the fp16 → fixed-point decoder: ±max, ±Inf,
/// NaNs, subnormals, rounding boundaries, ±0, 1.0.
const SPECIAL_FP16: [u16; 16] = [
    0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x8001, 0x0200, 0x8200, 0x01FF, 0x0400,
    0x8000, 0x0000, 0x3C00, 0x2BFF,
];

/// An fp16 value of `class`: 0 any bit pattern, 1 a normal-distributed
/// value, otherwise one of [`SPECIAL_FP16`].
fn fp16(rng: &mut SplitMix64, class: u64) -> u16 {
    match class {
        0 => rng.next_u64() as u16,
        1 => attention::engine::f32_to_f16_bits(rng.normal()),
        _ => SPECIAL_FP16[(rng.next_u64() % SPECIAL_FP16.len() as u64) as usize],
    }
}

#[test]
fn verilog_nfc_filter_matches_model() {
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0001);
    let mut pages: Vec<NfcPage> = (0..200 * scale()).map(|_| nfc_page(&mut rng)).collect();
    // Edge cases: no row kept, all kept, prefix 0, a full 16 KiB page.
    pages.push(NfcPage {
        rows: 4,
        row_len: 8,
        keep: 8,
        mask: [0; 4],
        data: vec![1; 32],
    });
    pages.push(NfcPage {
        rows: 4,
        row_len: 8,
        keep: 0,
        mask: [u64::MAX; 4],
        data: vec![2; 32],
    });
    pages.push(NfcPage {
        rows: 2,
        row_len: 24,
        keep: 13,
        mask: [u64::MAX; 4],
        data: (0..48).map(|j| 0x100 + j as u16).collect(),
    });
    pages.push(NfcPage {
        rows: 256,
        row_len: 32,
        keep: 32,
        mask: [u64::MAX; 4],
        data: (0..8192).map(|j| j as u16).collect(),
    });
    let stim = nfc_filter::stimulus(&pages);
    let lines = simulate("nfc_filter", stim.iter().map(|c| c.vector_line()));
    // "<clock> <count> <lane0> .. <lane7>": the kept lanes, and the lanes
    // past the count must read 0.
    let mut clocks = Vec::new();
    let mut data = Vec::new();
    for l in &lines[..lines.len() - 1] {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 10, "line {l:?}");
        clocks.push(f[0].parse::<usize>().expect("clock"));
        let n = usize::from_str_radix(f[1], 16).expect("count");
        for (j, x) in f[2..].iter().enumerate() {
            let x = u16::from_str_radix(x, 16).expect("hex");
            if j < n {
                data.push(x);
            } else {
                assert_eq!(x, 0, "lane {j} past count {n}");
            }
        }
    }
    let want: Vec<u16> = pages.iter().flat_map(nfc_model).collect();
    assert_eq!(data, want, "Verilog output differs from RowFilter");
    let rust = nfc_filter::run(&stim);
    assert_eq!(
        clocks, rust.out_clock,
        "Verilog clocks differ from rust-hdl"
    );
    eprintln!(
        "verilog nfc_filter: {} pages, {} clocks, {} kept, bit-exact",
        pages.len(),
        stim.len(),
        want.len()
    );
}

#[test]
fn verilog_argtopk_matches_model() {
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0002);
    let mut cases: Vec<(Vec<u64>, u16)> = (0..150 * scale())
        .map(|_| {
            let n = (rng.next_u64() % 150) as usize;
            let ties = rng.next_u64().is_multiple_of(2);
            let keys = (0..n)
                .map(|_| {
                    if ties {
                        rng.next_u64() % 5
                    } else {
                        rng.next_u64()
                    }
                })
                .collect();
            (keys, (rng.next_u64() % (SYNTH_K_MAX as u64 + 1)) as u16)
        })
        .collect();
    cases.push((vec![9; 80], 64));
    cases.push(((0..80).collect(), 1));
    cases.push((vec![1, 2, 3], 64));
    cases.push((vec![], 3));
    let stim: Vec<argtopk::TopKCycle> = cases
        .iter()
        .flat_map(|(keys, k)| argtopk::stimulus(keys, *k, SYNTH_K_MAX))
        .collect();
    let lines = simulate("argtopk", stim.iter().map(|c| c.vector_line()));
    let selections = outputs_by_done(&lines);
    assert_eq!(selections.len(), cases.len());
    for ((keys, k), got) in cases.iter().zip(&selections) {
        let mut want = Vec::new();
        attention::engine::argtopk(keys, usize::from(*k), &mut want);
        assert_eq!(*got, want, "k = {k}, keys = {keys:?}");
    }
    let rust = argtopk::run::<SYNTH_K_MAX>(&stim);
    assert_eq!(rust.selections, selections, "Verilog differs from rust-hdl");
    eprintln!(
        "verilog argtopk: {} selections, {} clocks, bit-exact",
        cases.len(),
        stim.len()
    );
}

/// The values a testbench wrote ("o <clock> <hex>" per output, "d
/// <clock>" per done), grouped by done: one group per case.
fn outputs_by_done(lines: &[String]) -> Vec<Vec<u32>> {
    let mut groups = vec![Vec::new()];
    for l in &lines[..lines.len() - 1] {
        let mut f = l.split(' ');
        match f.next() {
            Some("o") => {
                let _clock = f.next();
                let v = u32::from_str_radix(f.next().expect("value"), 16).expect("hex");
                groups.last_mut().expect("open").push(v);
            }
            Some("d") => groups.push(Vec::new()),
            other => panic!("bad line {other:?}"),
        }
    }
    assert!(groups.pop().is_some_and(|g| g.is_empty()));
    groups
}

#[test]
fn verilog_select_k_matches_model() {
    use attention::engine::{RadixPlan, radix_plan};
    use hdl::select_k::{self, SYNTH_N_MAX};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_00E7);
    // Short inputs of every kind, then k from 1 to 4096 over 4096 keys,
    // then S = 32K at k = S/8 (token keys with the local bonus).
    let mut cases: Vec<(Vec<u64>, u16)> = (0..60 * scale())
        .map(|_| {
            let n = (rng.next_u64() % 300) as usize;
            let ties = rng.next_u64() % 3;
            let keys = (0..n)
                .map(|_| match ties {
                    0 => rng.next_u64() % 5,
                    1 => rng.next_u64() >> 23,
                    _ => rng.next_u64(),
                })
                .collect();
            (keys, (rng.next_u64() % 320) as u16)
        })
        .collect();
    let wide: Vec<u64> = (0..4096).map(|_| rng.next_u64() >> 23).collect();
    for k in [1u16, 2, 33, 255, 256, 1024, 4095, 4096] {
        cases.push((wide.clone(), k));
    }
    let long: Vec<u64> = (0..SYNTH_N_MAX)
        .map(|j| (rng.next_u64() >> 34) + if j + 32 >= SYNTH_N_MAX { 1 << 40 } else { 0 })
        .collect();
    cases.push((long, 4096));
    cases.push((vec![], 3));
    cases.push((vec![7; 50], 0));
    let plans: Vec<RadixPlan> = cases
        .iter()
        .map(|(keys, k)| radix_plan(keys, usize::from(*k)))
        .collect();
    let stim: Vec<select_k::SelectCycle> = cases
        .iter()
        .zip(&plans)
        .flat_map(|((keys, k), p)| select_k::stimulus(keys, *k, p.clocks() - keys.len() as u64 - 2))
        .collect();
    let lines = simulate("select_k", stim.iter().map(|c| c.vector_line()));
    let selections = outputs_by_done(&lines);
    assert_eq!(selections.len(), cases.len());
    for ((keys, k), got) in cases.iter().zip(&selections) {
        let mut want = Vec::new();
        attention::engine::argtopk(keys, usize::from(*k), &mut want);
        assert!(*got == want, "n = {}, k = {k}", keys.len());
    }
    let rust = select_k::run::<{ select_k::SYNTH_ADDR_BITS }>(&stim);
    assert_eq!(rust.selections, selections, "Verilog differs from rust-hdl");
    let want_clocks: Vec<usize> = plans.iter().map(|p| p.clocks() as usize).collect();
    assert_eq!(rust.clocks, want_clocks, "clocks against the plan");
    eprintln!(
        "verilog select_k: {} selections (k up to 4096, S up to {SYNTH_N_MAX}), {} clocks, bit-exact",
        cases.len(),
        stim.len()
    );
}

#[test]
fn verilog_dim_score_matches_model() {
    use hdl::dim_score::{self, DimCycle};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0D15);
    // (s, d, r, tokens per dim-page row): SparF heads at 1/8 of d and
    // beyond, up to 32K tokens.
    let mut shapes = vec![
        (300usize, 64usize, 8usize, 64usize),
        (129, 128, 16, 128),
        (1000, 256, 64, 512),
    ];
    shapes.extend((0..2 * scale()).map(|_| {
        let d = 8 * (1 + (rng.next_u64() % 32) as usize);
        let r = 1 + (rng.next_u64() as usize) % d;
        (
            1 + (rng.next_u64() % 700) as usize,
            d,
            r,
            48 + 8 * (rng.next_u64() % 20) as usize,
        )
    }));
    shapes.push((dim_score::SYNTH_S_MAX, 16, 2, 1024));
    let heads: Vec<dim_head::TestHead> = shapes
        .iter()
        .map(|&(s, d, r, run)| dim_head::TestHead::random(&mut rng, s, d, r, run))
        .collect();
    let stim: Vec<DimCycle> = heads.iter().flat_map(|h| h.stimulus()).collect();
    let lines = simulate("dim_score", stim.iter().map(|c| c.vector_line()));
    let heads_out: Vec<Vec<i32>> = outputs_by_done(&lines)
        .into_iter()
        .map(|h| h.into_iter().map(|v| v as i32).collect())
        .collect();
    assert_eq!(heads_out.len(), heads.len());
    for ((h, got), shape) in heads.iter().zip(&heads_out).zip(&shapes) {
        assert!(*got == h.want(), "shape {shape:?}");
    }
    eprintln!(
        "verilog dim_score: {} heads, {} clocks, bit-exact",
        heads.len(),
        stim.len()
    );
}

#[test]
fn verilog_gemv_matches_model() {
    use hdl::gemv::{self, GemvQuery, SYNTH_LANES};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0004);
    // Any fp16 pattern, key-like values, or the special ones.
    let mut queries: Vec<GemvQuery> = (0..80 * scale())
        .map(|_| {
            let d = match rng.next_u64() % 4 {
                0 => 256,
                1 => (rng.next_u64() % 20) as usize,
                _ => (rng.next_u64() % 257) as usize,
            };
            let q: Vec<i32> = match rng.next_u64() % 3 {
                0 => (0..d).map(|_| rng.next_u64() as i32).collect(),
                1 => (0..d)
                    .map(|_| attention::engine::fx(fp16(&mut rng, 1)))
                    .collect(),
                _ => (0..d)
                    .map(|_| (rng.next_u64() % (1 << 20)) as i32 - (1 << 19))
                    .collect(),
            };
            let c = match rng.next_u64() % 4 {
                0 => 1 << 20,
                1 => rng.next_u64() as u32,
                _ => (rng.next_u64() % ((1 << 20) + 1)) as u32,
            };
            let rows = 1 + rng.next_u64() % 6;
            let keys = (0..rows)
                .map(|_| {
                    let class = rng.next_u64() % 3;
                    (0..d).map(|_| fp16(&mut rng, class)).collect()
                })
                .collect();
            GemvQuery { q, c, keys }
        })
        .collect();
    // Edge cases: the largest |dot| both signs with c = 2^20 and c = 0,
    // d = 1, d = 0, every special value.
    for (qv, h) in [
        (i32::MIN, 0x7C00u16),
        (i32::MIN, 0xFC00),
        (i32::MAX, 0x7BFF),
    ] {
        for c in [1 << 20, 0, u32::MAX] {
            queries.push(GemvQuery {
                q: vec![qv; 256],
                c,
                keys: vec![vec![h; 256]],
            });
        }
    }
    queries.push(GemvQuery {
        q: vec![1 << 14],
        c: 1 << 20,
        keys: SPECIAL_FP16.iter().map(|&h| vec![h]).collect(),
    });
    queries.push(GemvQuery {
        q: vec![],
        c: 1 << 16,
        keys: vec![vec![], vec![]],
    });
    let stim = gemv::stimulus(&queries, SYNTH_LANES, 0x7C00);
    let lines = simulate("gemv", stim.iter().map(|c| c.vector_line(SYNTH_LANES)));
    let mut clocks = Vec::new();
    let mut logits = Vec::new();
    for l in &lines[..lines.len() - 1] {
        let (t, x) = l.split_once(' ').expect("clock logit");
        clocks.push(t.parse::<usize>().expect("clock"));
        logits.push(u32::from_str_radix(x, 16).expect("hex") as i32);
    }
    let want: Vec<i32> = queries
        .iter()
        .flat_map(|q| {
            q.keys
                .iter()
                .map(|k| attention::engine::logit(&q.q, k, q.c))
        })
        .collect();
    assert_eq!(logits, want, "Verilog logits differ from the model");
    let rust = gemv::run::<SYNTH_LANES>(&stim);
    assert_eq!(
        clocks, rust.out_clock,
        "Verilog clocks differ from rust-hdl"
    );
    eprintln!(
        "verilog gemv: {} queries, {} rows, {} clocks, bit-exact",
        queries.len(),
        want.len(),
        stim.len()
    );
}

#[test]
fn verilog_bound_row_matches_model() {
    use hdl::bound_row::{self, SYNTH_LANES};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0008);
    // Summaries of any fp16 pattern, key-like values or the special ones
    // (±0, NaN, ±Inf among them); q of any sign, zeros often.
    let mut rows: Vec<(Vec<i32>, Vec<u16>)> = (0..150 * scale())
        .map(|_| {
            let d = match rng.next_u64() % 4 {
                0 => 256,
                1 => (rng.next_u64() % 20) as usize,
                _ => (rng.next_u64() % 257) as usize,
            };
            let q: Vec<i32> = (0..d)
                .map(|_| match rng.next_u64() % 4 {
                    0 => 0,
                    1 => attention::engine::fx(fp16(&mut rng, 2)),
                    2 => attention::engine::fx(fp16(&mut rng, 1)),
                    _ => rng.next_u64() as i32,
                })
                .collect();
            let class = rng.next_u64() % 3;
            let summary = (0..2 * d).map(|_| fp16(&mut rng, class)).collect();
            (q, summary)
        })
        .collect();
    // Edge cases: q = 0 and fx(−0) pick max; i32::MIN and −1 pick min.
    rows.push((
        vec![
            0,
            attention::engine::fx(0x8000),
            -1,
            i32::MIN,
            1,
            i32::MAX,
            0,
            -1,
        ],
        vec![
            0x8000, 0x8000, 0x8000, 0x7E00, 0xFC00, 0x0001, 0x0000, 0xFBFF, // min
            0x0000, 0x7E00, 0x0000, 0x8000, 0x7C00, 0x8001, 0x8000, 0x7BFF, // max
        ],
    ));
    let stim = bound_row::stimulus(&rows, SYNTH_LANES, 0x7E00, 7);
    let lines = simulate("bound_row", stim.iter().map(|c| c.vector_line(SYNTH_LANES)));
    let run = row_run(&lines, SYNTH_LANES);
    let dims: Vec<usize> = rows.iter().map(|(q, _)| q.len()).collect();
    let got = run.rows(&dims, SYNTH_LANES);
    for ((q, s), g) in rows.iter().zip(&got) {
        let mut want = vec![0u16; q.len()];
        attention::engine::bound_row(q, s, &mut want);
        assert_eq!(*g, want, "q = {q:?}, summary = {s:04x?}");
    }
    assert_eq!(
        got.last().map(Vec::as_slice),
        Some(
            &[
                0x0000u16, 0x7E00, 0x8000, 0x7E00, 0x7C00, 0x8001, 0x8000, 0xFBFF
            ][..]
        )
    );
    let rust = bound_row::run::<SYNTH_LANES>(&stim);
    assert_eq!(rust.beats, run.beats, "Verilog lanes differ from rust-hdl");
    assert_eq!(
        run.out_clock, rust.out_clock,
        "Verilog clocks differ from rust-hdl"
    );
    eprintln!(
        "verilog bound_row: {} rows, {} elements, {} clocks, bit-exact",
        rows.len(),
        dims.iter().sum::<usize>(),
        stim.len()
    );
}

/// A row block's output lines (`clock lane0 … lane(n−1)`, hex lanes; the
/// last line is the testbench's `end`) as a run.
fn row_run(lines: &[String], lanes: usize) -> hdl::sim::RowRun {
    let mut run = hdl::sim::RowRun::default();
    for l in &lines[..lines.len() - 1] {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 1 + lanes, "line {l:?}");
        run.out_clock.push(f[0].parse::<usize>().expect("clock"));
        run.beats.push(
            f[1..]
                .iter()
                .map(|x| u16::from_str_radix(x, 16).expect("hex"))
                .collect(),
        );
    }
    run
}

#[test]
fn verilog_sketch_row_matches_model() {
    use attention::engine::{sketch_levels, sketch_pack, summarize};
    use hdl::sketch_row::{self, SYNTH_LANES, SketchPage};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0009);
    // Pages of both widths: the engine's sketch of random keys (special
    // values among them), or raw code bytes and a table of any fp16
    // pattern (±0, NaN, ±Inf among them).
    let mut pages: Vec<SketchPage> = (0..60 * scale())
        .map(|_| {
            let d = match rng.next_u64() % 4 {
                0 => 256,
                1 => (rng.next_u64() % 20) as usize,
                _ => (rng.next_u64() % 257) as usize,
            };
            let bits = 1 + (rng.next_u64() % 2) as u32;
            let rows = 1 + (rng.next_u64() % 5) as usize;
            if d > 0 && rng.next_u64().is_multiple_of(2) {
                let keys: Vec<u16> = (0..rows * d)
                    .map(|_| {
                        let class = 1 + u64::from(rng.next_u64().is_multiple_of(8));
                        fp16(&mut rng, class)
                    })
                    .collect();
                let (mut summary, mut codes, mut levels) = (Vec::new(), Vec::new(), Vec::new());
                summarize(&keys, d, &mut summary);
                sketch_pack(&keys, &summary, d, bits, &mut codes);
                sketch_levels(&summary, d, bits, &mut levels);
                SketchPage {
                    d,
                    bits,
                    rows,
                    codes,
                    levels,
                }
            } else {
                let class = rng.next_u64() % 3;
                SketchPage {
                    d,
                    bits,
                    rows,
                    codes: (0..(rows * d * bits as usize).div_ceil(8))
                        .map(|_| rng.next_u64() as u8)
                        .collect(),
                    levels: (0..(1 << bits) * d)
                        .map(|_| fp16(&mut rng, class))
                        .collect(),
                }
            }
        })
        .collect();
    // Edge case: codes 0, 1, 2, 3, 3, 2, 1, 0 each pick their own level,
    // special values passed untouched.
    pages.push(SketchPage {
        d: 8,
        bits: 2,
        rows: 1,
        codes: vec![0b1110_0100, 0b0001_1011],
        levels: [
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
        .concat(),
    });
    let stim = sketch_row::stimulus(&pages, SYNTH_LANES, 0x7E00, 7);
    let lines = simulate(
        "sketch_row",
        stim.iter().map(|c| c.vector_line(SYNTH_LANES)),
    );
    let run = row_run(&lines, SYNTH_LANES);
    let dims = sketch_row::row_dims(&pages);
    let got = run.rows(&dims, SYNTH_LANES);
    assert_eq!(got.len(), dims.len());
    let mut rows = got.iter();
    for page in &pages {
        for r in 0..page.rows {
            let mut want = vec![0u16; page.d];
            attention::engine::sketch_row(&page.codes, &page.levels, r, page.bits, &mut want);
            assert_eq!(
                rows.next(),
                Some(&want),
                "row {r}: d = {}, bits = {}, codes = {:02x?}, levels = {:04x?}",
                page.d,
                page.bits,
                page.codes,
                page.levels
            );
        }
    }
    assert_eq!(
        got.last().map(Vec::as_slice),
        Some(
            &[
                0x0000u16, 0x0000, 0x7E00, 0x8001, 0x3C00, 0x0000, 0xFBFF, 0xFBFF
            ][..]
        )
    );
    let rust = sketch_row::run::<SYNTH_LANES>(&stim);
    assert_eq!(rust.beats, run.beats, "Verilog lanes differ from rust-hdl");
    assert_eq!(
        run.out_clock, rust.out_clock,
        "Verilog clocks differ from rust-hdl"
    );
    eprintln!(
        "verilog sketch_row: {} pages, {} rows, {} elements, {} clocks, bit-exact",
        pages.len(),
        dims.len(),
        dims.iter().sum::<usize>(),
        stim.len()
    );
}

#[test]
fn verilog_softmax_matches_model() {
    use hdl::softmax::{self, SYNTH_ADDR_BITS, SYNTH_N_MAX};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0003);
    let mut cases: Vec<Vec<i32>> = (0..300 * scale())
        .map(|_| {
            let n = 1 + (rng.next_u64() % 64) as usize;
            let kind = rng.next_u64() % 3;
            (0..n)
                .map(|_| match kind {
                    // Realistic Q16 logits, ±(0..40)·2^16.
                    0 => (rng.next_u64() % (80 << 16)) as i32 - (40 << 16),
                    // Full i32 range.
                    1 => rng.next_u64() as i32,
                    // Near ties.
                    _ => (rng.next_u64() % 4) as i32 * (1 << 15),
                })
                .collect()
        })
        .collect();
    // Edge cases: all equal, one element, max first / last, huge spreads,
    // i32::MIN/MAX mixes, n = 0, n = max.
    cases.push(vec![3 << 16; 50]);
    cases.push(vec![-7]);
    cases.push((0..40).map(|j| -(j << 15)).collect());
    cases.push((0..40).map(|j| j << 15).collect());
    cases.push(vec![i32::MAX, i32::MIN, 0, -(40 << 16), i32::MIN + 1]);
    cases.push(vec![i32::MIN, i32::MIN, i32::MAX, i32::MAX]);
    cases.push(vec![]);
    cases.push(
        (0..SYNTH_N_MAX)
            .map(|_| (rng.next_u64() % (80 << 16)) as i32 - (40 << 16))
            .collect(),
    );
    let stim: Vec<softmax::SoftmaxCycle> =
        cases.iter().flat_map(|l| softmax::stimulus(l)).collect();
    let lines = simulate("softmax", stim.iter().map(|c| c.vector_line()));
    let mut probs = vec![Vec::new()];
    let mut done_at = Vec::new();
    for l in &lines[..lines.len() - 1] {
        let mut f = l.split(' ');
        match f.next() {
            Some("o") => {
                let _clock = f.next();
                let p = u32::from_str_radix(f.next().expect("prob"), 16).expect("hex");
                probs.last_mut().expect("open").push(p);
            }
            Some("d") => {
                done_at.push(f.next().expect("clock").parse::<usize>().expect("clock"));
                probs.push(Vec::new());
            }
            other => panic!("bad line {other:?}"),
        }
    }
    assert!(probs.pop().is_some_and(|s| s.is_empty()));
    assert_eq!(probs.len(), cases.len());
    for (logits, got) in cases.iter().zip(&probs) {
        let mut want = vec![0u32; logits.len()];
        attention::engine::softmax(logits, &mut want);
        assert!(*got == want, "n = {}, logits = {logits:?}", logits.len());
    }
    // Clocks from each `start` to its `done`, as rust-hdl and `cycles`.
    let starts: Vec<usize> = (0..stim.len()).filter(|&t| stim[t].start).collect();
    let clocks: Vec<usize> = starts
        .iter()
        .zip(&done_at)
        .map(|(s, d)| d + 1 - s)
        .collect();
    let want: Vec<usize> = cases.iter().map(|l| softmax::cycles(l.len())).collect();
    assert_eq!(clocks, want, "Verilog clocks differ from cycles()");
    let rust = softmax::run::<SYNTH_ADDR_BITS>(&stim);
    assert_eq!(rust.probs, probs, "Verilog differs from rust-hdl");
    assert_eq!(rust.clocks, clocks, "Verilog clocks differ from rust-hdl");
    eprintln!(
        "verilog softmax: {} vectors ({} logits), {} clocks, bit-exact",
        cases.len(),
        cases.iter().map(Vec::len).sum::<usize>(),
        stim.len()
    );
}

#[test]
fn verilog_weighted_sum_matches_model() {
    use attention::engine::{P_ONE, accumulate, finish, softmax};
    use hdl::weighted_sum::{self, SYNTH_LANES, WsQuery};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0005);
    let mut queries: Vec<WsQuery> = (0..60 * scale())
        .map(|_| {
            let d = match rng.next_u64() % 4 {
                0 => 256,
                1 => 1 + (rng.next_u64() % 20) as usize,
                _ => 1 + (rng.next_u64() % 256) as usize,
            };
            let s = 1 + (rng.next_u64() % 10) as usize;
            let logits: Vec<i32> = (0..s)
                .map(|_| (rng.next_u64() % (20 << 16)) as i32 - (10 << 16))
                .collect();
            let mut probs = vec![0u32; s];
            softmax(&logits, &mut probs);
            let class = rng.next_u64() % 3;
            let rows = probs
                .into_iter()
                .map(|p| (p, (0..d).map(|_| fp16(&mut rng, class)).collect()))
                .collect();
            let alpha = match rng.next_u64() % 3 {
                0 => P_ONE,
                1 => 0,
                _ => (rng.next_u64() % u64::from(P_ONE)) as u32,
            };
            let vmean = (0..d).map(|_| rng.next_u64() as i32).collect();
            WsQuery {
                d,
                rows,
                alpha,
                vmean,
            }
        })
        .collect();
    // Edge cases: the largest sums (Σp = 1 on ±Inf), p = u32::MAX (clamped
    // outputs), a single row, no rows.
    for h in [0x7C00u16, 0xFC00] {
        queries.push(WsQuery {
            d: 256,
            rows: (0..4).map(|_| (P_ONE / 4, vec![h; 256])).collect(),
            alpha: P_ONE,
            vmean: vec![],
        });
        queries.push(WsQuery {
            d: 9,
            rows: vec![(u32::MAX, vec![h; 9]), (u32::MAX, vec![h; 9])],
            alpha: P_ONE / 3,
            vmean: vec![i32::MIN; 9],
        });
    }
    queries.push(WsQuery {
        d: SPECIAL_FP16.len(),
        rows: vec![(P_ONE, SPECIAL_FP16.to_vec())],
        alpha: P_ONE,
        vmean: vec![],
    });
    queries.push(WsQuery {
        d: 3,
        rows: vec![],
        alpha: 0,
        vmean: vec![5, i32::MIN, i32::MAX],
    });
    let stim = weighted_sum::stimulus(&queries, SYNTH_LANES, 0x7C00);
    let lines = simulate(
        "weighted_sum",
        stim.iter().map(|c| c.vector_line(SYNTH_LANES)),
    );
    let mut clocks = Vec::new();
    let mut beats = Vec::new();
    for l in &lines[..lines.len() - 1] {
        let mut f = l.split(' ');
        clocks.push(f.next().expect("clock").parse::<usize>().expect("clock"));
        beats.push(
            f.map(|x| u32::from_str_radix(x, 16).expect("hex") as i32)
                .collect::<Vec<i32>>(),
        );
    }
    let rust = weighted_sum::run::<SYNTH_LANES>(&stim);
    assert_eq!(beats, rust.beats, "Verilog differs from rust-hdl");
    assert_eq!(
        clocks, rust.out_clock,
        "Verilog clocks differ from rust-hdl"
    );
    let got = rust.outputs(&queries, SYNTH_LANES);
    for (q, g) in queries.iter().zip(&got) {
        let mut acc = vec![0i64; q.d];
        for (p, row) in &q.rows {
            accumulate(&mut acc, *p, row);
        }
        let mut want = vec![0i32; q.d];
        finish(&acc, q.alpha, &q.vmean, &mut want);
        assert_eq!(*g, want, "d = {}, alpha = {}", q.d, q.alpha);
    }
    eprintln!(
        "verilog weighted_sum: {} heads, {} rows, {} outputs, {} clocks, bit-exact",
        queries.len(),
        queries.iter().map(|q| q.rows.len()).sum::<usize>(),
        queries.iter().map(|q| q.d).sum::<usize>(),
        stim.len()
    );
}

#[test]
fn verilog_kernel_matches_model() {
    use attention::GroupShape;
    use attention::engine::{dense_group, dense_scale, f32_to_f16_bits, fx};
    use attention::testdata::{structured_kv, structured_query};
    use hdl::kernel::{self, KernelQuery, SYNTH_LANES};
    if !have_iverilog() {
        return;
    }
    let mut rng = SplitMix64::new(0x5EED_0006);
    let h = |x: Vec<f32>| x.into_iter().map(f32_to_f16_bits).collect::<Vec<u16>>();
    // (S, d, fp16 q, K, V): structured problems, random bits, extremes.
    type Head = (usize, usize, Vec<u16>, Vec<u16>, Vec<u16>);
    let mut heads: Vec<Head> = Vec::new();
    for (n, (s, d)) in [(1, 8), (17, 64), (40, 100), (3, 256)]
        .into_iter()
        .enumerate()
    {
        for m in 0..scale() {
            let seed = 0x5EED_6000 + (100 * m + n) as u64;
            let (k, v) = structured_kv(seed, 1, s, d);
            heads.push((s, d, h(structured_query(seed, 1, d, 1)), h(k), h(v)));
        }
    }
    let (s, d) = (6, 13);
    let bits = |rng: &mut SplitMix64, n: usize| (0..n).map(|_| rng.next_u64() as u16).collect();
    heads.push((
        s,
        d,
        bits(&mut rng, d),
        bits(&mut rng, s * d),
        bits(&mut rng, s * d),
    ));
    heads.push((4, 9, vec![0x7BFF; 9], vec![0x7C00; 36], vec![0xFBFF; 36]));
    let mut stim = Vec::new();
    let mut wants = Vec::new();
    let mut clocks = Vec::new();
    for (s, d, q, k, v) in &heads {
        let kq = KernelQuery {
            d: *d,
            c: dense_scale(*d),
            q: q.iter().map(|&x| fx(x)).collect(),
            k: k.chunks_exact(*d).map(<[u16]>::to_vec).collect(),
            v: v.chunks_exact(*d).map(<[u16]>::to_vec).collect(),
        };
        let head = kernel::stimulus(&kq, SYNTH_LANES, 0x7E00);
        clocks.push(stim.len() + head.len() - 1);
        assert_eq!(head.len() - d, kernel::cycles(*s, *d, SYNTH_LANES));
        stim.extend(head);
        let shape = GroupShape {
            group: 1,
            head_dim: *d,
        };
        wants.push(dense_group(q, k, v, shape).expect("valid shape"));
    }
    let lines = simulate("kernel", stim.iter().map(|c| c.vector_line(SYNTH_LANES)));
    let mut beats = Vec::new();
    let mut out_clock = Vec::new();
    let mut done = Vec::new();
    for l in &lines[..lines.len() - 1] {
        let mut f = l.split(' ');
        let first = f.next().expect("field");
        if first == "done" {
            done.push(f.next().expect("clock").parse::<usize>().expect("clock"));
            continue;
        }
        out_clock.push(first.parse::<usize>().expect("clock"));
        beats.push(
            f.map(|x| u32::from_str_radix(x, 16).expect("hex") as i32)
                .collect::<Vec<i32>>(),
        );
    }
    let rust = kernel::run::<SYNTH_LANES>(&stim);
    assert_eq!(beats, rust.beats, "Verilog differs from rust-hdl");
    assert_eq!(done, rust.done_clock, "Verilog clocks differ from rust-hdl");
    assert_eq!(done, clocks, "done clocks");
    let mut it = beats.iter();
    for ((s, d, ..), want) in heads.iter().zip(&wants) {
        let mut got: Vec<i32> = Vec::new();
        for _ in 0..d.div_ceil(SYNTH_LANES) {
            got.extend(it.next().expect("beat"));
        }
        got.truncate(*d);
        assert_eq!(&got, want, "S = {s}, d = {d}");
    }
    assert!(out_clock.windows(2).all(|w| w[0] < w[1]));
    eprintln!(
        "verilog kernel: {} heads, {} tokens, {} clocks, bit-exact",
        heads.len(),
        heads.iter().map(|x| x.0).sum::<usize>(),
        stim.len()
    );
}

/// One job through the whole engine (AXI programming, ID/VERSION readback,
/// query load, K and V pages through a channel filter, STATUS polling):
/// the Verilog's outputs equal rust-hdl's clock for clock, and the output
/// equals `dense_group` on the kept tokens. (This test found a STATUS bug
/// in the generated Verilog: see `Engine::idle`.)
#[test]
fn verilog_engine_matches_rust_hdl() {
    use attention::GroupShape;
    use attention::engine::{dense_group, dense_scale, f32_to_f16_bits, fx};
    use attention::testdata::{structured_kv, structured_query};
    use hdl::engine::cosim::{self, Job, Page};
    use hdl::engine::{ID, VERSION, reg};
    if !have_iverilog() {
        return;
    }
    // The third job of engine_job_matches_dense_group: 9 tokens of d = 24
    // in pages of 4 rows of 32 elements, kernel 0, channel 1.
    let (seed, tokens, d, row_len, rpp) = (0xE0_0003u64, 9usize, 24usize, 32usize, 4usize);
    let h = |x: &[f32]| x.iter().map(|&y| f32_to_f16_bits(y)).collect::<Vec<u16>>();
    let (k, v) = structured_kv(seed, 1, tokens, d);
    let q = h(&structured_query(seed, 1, d, 1));
    let k: Vec<Vec<u16>> = k.chunks_exact(d).map(h).collect();
    let v: Vec<Vec<u16>> = v.chunks_exact(d).map(h).collect();
    let mut rng = SplitMix64::new(seed ^ 0x55);
    let mut mask: Vec<bool> = (0..tokens)
        .map(|_| !rng.next_u64().is_multiple_of(3))
        .collect();
    mask[0] = true;
    let pages = |rows: &[Vec<u16>]| -> Vec<Page> {
        rows.chunks(rpp)
            .enumerate()
            .map(|(p, chunk)| {
                let mut m = [0u64; 4];
                let mut data = Vec::new();
                for (i, row) in chunk.iter().enumerate() {
                    if mask[p * rpp + i] {
                        m[i / 64] |= 1 << (i % 64);
                    }
                    data.extend((0..row_len).map(|e| row.get(e).copied().unwrap_or(0x7C00)));
                }
                Page { mask: m, data }
            })
            .collect()
    };
    let kept = |rows: &[Vec<u16>]| -> Vec<u16> {
        rows.iter()
            .zip(&mask)
            .filter(|(_, m)| **m)
            .flat_map(|(r, _)| r.clone())
            .collect()
    };
    let s = mask.iter().filter(|&&m| m).count();
    let job = Job {
        kernel: 0,
        channel: 1,
        d: d as u32,
        s: s as u32,
        scale: dense_scale(d),
        q: q.iter().map(|&x| fx(x)).collect(),
        rows_per_page: rpp as u32,
        row_len: row_len as u32,
        k_pages: pages(&k),
        v_pages: pages(&v),
    };
    let rust = cosim::run_job(&job);
    let t0 = std::time::Instant::now();
    let lines = simulate("engine", rust.inputs.iter().map(|c| c.vector_line()));
    let verilog_s = t0.elapsed().as_secs_f64();
    assert_eq!(lines.last(), Some(&format!("end {}", rust.inputs.len())));
    let lines = &lines[..lines.len() - 1];
    // The rust-hdl lines next to the Verilog's out.txt, for diffing.
    std::fs::write(
        work_dir("engine").join("rust.txt"),
        rust.outputs.join("\n") + "\n",
    )
    .expect("write rust.txt");
    assert_eq!(lines.len(), rust.outputs.len());
    for (t, (got, want)) in lines.iter().zip(&rust.outputs).enumerate() {
        assert_eq!(got, want, "clock {t}: Verilog differs from rust-hdl");
    }
    // The run itself: ID/VERSION read back, the output equals the model.
    assert_eq!(rust.reads[0], (reg::ID, ID, 0));
    assert_eq!(rust.reads[1], (reg::VERSION, VERSION, 0));
    let want = dense_group(
        &q,
        &kept(&k),
        &kept(&v),
        GroupShape {
            group: 1,
            head_dim: d,
        },
    )
    .expect("valid shape");
    assert_eq!(rust.out0.len(), d.div_ceil(8), "output beats");
    let mut got: Vec<i32> = rust.out0.concat();
    got.truncate(d);
    assert_eq!(got, want, "engine output differs from dense_group");
    let status = rust.reads.last().expect("STATUS read");
    assert_eq!(status.0, reg::STATUS);
    assert_ne!(status.1 & hdl::engine::bit::k_done(0), 0, "K0_DONE");
    assert!(rust.irq_clocks > 0, "irq raised");
    eprintln!(
        "verilog engine: S = {s} kept of {tokens}, d = {d}, {} clocks, {} AXI reads, \
         bit-exact (iverilog + vvp {verilog_s:.1} s)",
        rust.inputs.len(),
        rust.reads.len()
    );
}
