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

fn have_iverilog() -> bool {
    let ok = Command::new("iverilog")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: iverilog not found; skipping the Verilog co-simulation");
    }
    ok
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
    let verilog = hdl::blocks()
        .into_iter()
        .find(|(name, _)| *name == block)
        .expect("block exists")
        .1;
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
    let row_len = 1 + (rng.next_u64() % (512 / u64::from(rows)).max(1)) as u16;
    let keep = (rng.next_u64() % (u64::from(row_len) + 1)) as u16;
    let density = rng.next_u64() % 65;
    let mut mask = [0u64; 4];
    for r in 0..256 {
        if rng.next_u64() % 64 < density {
            mask[r / 64] |= 1 << (r % 64);
        }
    }
    let n = usize::from(rows) * usize::from(row_len) + (rng.next_u64() % 5) as usize;
    NfcPage {
        rows,
        row_len,
        keep,
        mask,
        data: (0..n).map(|_| rng.next_u64() as u16).collect(),
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
        rows: 8,
        row_len: 4,
        keep: 4,
        mask: [0; 4],
        data: vec![1; 32],
    });
    pages.push(NfcPage {
        rows: 8,
        row_len: 4,
        keep: 0,
        mask: [u64::MAX; 4],
        data: vec![2; 32],
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
    let mut clocks = Vec::new();
    let mut data = Vec::new();
    for l in &lines[..lines.len() - 1] {
        let (t, x) = l.split_once(' ').expect("clock data");
        clocks.push(t.parse::<usize>().expect("clock"));
        data.push(u16::from_str_radix(x, 16).expect("hex"));
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
            let ties = rng.next_u64() % 2 == 0;
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
    let mut selections = vec![Vec::new()];
    for l in &lines[..lines.len() - 1] {
        let mut f = l.split(' ');
        match f.next() {
            Some("o") => {
                let _clock = f.next();
                let idx = u32::from_str_radix(f.next().expect("index"), 16).expect("hex");
                selections.last_mut().expect("open").push(idx);
            }
            Some("d") => selections.push(Vec::new()),
            other => panic!("bad line {other:?}"),
        }
    }
    assert!(selections.pop().is_some_and(|s| s.is_empty()));
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
