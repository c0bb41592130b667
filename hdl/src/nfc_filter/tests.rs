//! NfcFilter against `firmware`'s `RowFilter::apply` (the NFC filter the
//! device core drives), bit for bit, on seeded random pages and edge cases.

use super::*;
use attention::testdata::SplitMix64;
use firmware::hal::RowFilter;

/// The model: `RowFilter::apply` on the page's little-endian bytes, with
/// `row_bytes = 2·row_len`, `keep_bytes = 2·keep`.
fn model(page: &NfcPage) -> Vec<u16> {
    let filter = RowFilter {
        rows: page.rows,
        row_bytes: 2 * page.row_len,
        keep_bytes: 2 * page.keep,
        mask: page.mask,
    };
    let bytes: Vec<u8> = page.data.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = vec![0u8; bytes.len()];
    let n = filter
        .apply(&bytes, &mut out)
        .expect("test page fits its filter");
    out[..n]
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect()
}

fn random_mask(rng: &mut SplitMix64, rows: u16) -> [u64; 4] {
    // Densities from none to all, so empty and full pages both occur.
    let density = [0u64, 1, 8, 16, 32, 48, 63, 64][(rng.next_u64() % 8) as usize];
    let mut mask = [0u64; 4];
    for r in 0..256usize {
        if rng.next_u64() % 64 < density {
            mask[r / 64] |= 1 << (r % 64);
        }
    }
    // Bits past `rows` are set at random too: the filter must ignore them.
    let _ = rows;
    mask
}

/// A random page of at most `max_elems` elements (rows of whole beats).
fn random_page(rng: &mut SplitMix64, max_elems: usize) -> NfcPage {
    let rows = match rng.next_u64() % 8 {
        0 => 256,
        1 => 1,
        _ => 1 + (rng.next_u64() % 256) as u16,
    };
    let max_beats = (max_elems / (LANES * usize::from(rows))).max(1) as u64;
    let row_len = LANES as u16 * (1 + (rng.next_u64() % max_beats) as u16);
    let keep = match rng.next_u64() % 4 {
        0 => row_len,
        1 => 0,
        _ => (rng.next_u64() % (u64::from(row_len) + 1)) as u16,
    };
    let tail = LANES * (rng.next_u64() % 4) as usize * (rng.next_u64() % 3) as usize;
    let n = usize::from(rows) * usize::from(row_len) + tail;
    NfcPage {
        rows,
        row_len,
        keep,
        mask: random_mask(rng, rows),
        data: (0..n).map(|_| rng.next_u64() as u16).collect(),
    }
}

/// Runs pages back to back and checks the output stream against the model.
/// Returns the clocks from the first page's first element to its last kept
/// element's output, per the whole run.
fn check(pages: &[NfcPage]) -> NfcRun {
    let stim = stimulus(pages);
    let run = run(&stim);
    let want: Vec<u16> = pages.iter().flat_map(model).collect();
    assert_eq!(run.out.len(), want.len(), "kept element count");
    assert_eq!(run.out, want, "kept elements");
    assert_eq!(run.dirty_lanes, 0, "lanes past out_count read 0");
    run
}

#[test]
fn nfc_filter_random_pages_match_row_filter() {
    let mut rng = SplitMix64::new(0x4E46_4331);
    let mut pages_done = 0;
    let mut elems = 0;
    // 40 runs of 75 back-to-back pages, up to 512 elements each.
    for _ in 0..40 {
        let pages: Vec<NfcPage> = (0..75).map(|_| random_page(&mut rng, 512)).collect();
        elems += pages.iter().map(|p| p.data.len()).sum::<usize>();
        pages_done += pages.len();
        check(&pages);
    }
    assert_eq!(pages_done, 3000);
    eprintln!("nfc_filter: {pages_done} random pages, {elems} elements, bit-exact");
}

#[test]
fn nfc_filter_full_16k_pages() {
    // 16 KiB pages (8192 elements) in the layouts the firmware uses:
    // 256 tokens × d = 32, 128 × 64, 64 × 128, 32 × 256, and dim pages.
    let mut rng = SplitMix64::new(0x16_4B);
    let geometries = [
        (256u16, 32u16),
        (128, 64),
        (64, 128),
        (32, 256),
        (256, 32),
        (8, 1024),
    ];
    let pages: Vec<NfcPage> = geometries
        .iter()
        .map(|&(rows, row_len)| NfcPage {
            rows,
            row_len,
            keep: row_len - (rng.next_u64() % 3) as u16,
            mask: random_mask(&mut rng, rows),
            data: (0..8192).map(|_| rng.next_u64() as u16).collect(),
        })
        .collect();
    let run = check(&pages);
    // 8 elements per clock: the first page starts at clock 4 (after its
    // mask writes) and the pages follow back to back.
    let total: usize = pages.iter().map(|p| p.data.len()).sum::<usize>() / LANES;
    let last = *run.out_clock.last().expect("something kept");
    assert!(last < 4 + total, "{last} ≥ {}", 4 + total);
}

/// Clocks per page, measured: a page whose last row is kept emits its last
/// beat on the clock of its last input, so P pages of E elements take
/// exactly P·E/8 clocks back to back.
#[test]
fn nfc_filter_eight_elements_per_clock() {
    let page = |seed: u64| NfcPage {
        rows: 256,
        row_len: 32,
        keep: 32,
        mask: [u64::MAX; 4],
        data: (0..8192).map(|j| (j as u16) ^ (seed as u16)).collect(),
    };
    let pages: Vec<NfcPage> = (0..4).map(page).collect();
    let run = check(&pages);
    let first = run.out_clock[0];
    let last = *run.out_clock.last().expect("kept");
    assert_eq!(first, 4, "first beat leaves on the clock it entered");
    let clocks = last + 1 - first;
    assert_eq!(clocks, 4 * 1024, "cycles for 4 back-to-back pages");
    eprintln!("nfc_filter: {} clocks per 8192-element page", clocks / 4);
    // Every clock in between carries a full beat.
    assert!(run.out_clock.windows(2).all(|w| w[1] == w[0] + 1));
    assert!(run.out_count.iter().all(|&n| n == 8));
}

/// A keep prefix that ends inside a beat leaves as a shorter beat.
#[test]
fn nfc_filter_keep_prefix_ends_mid_beat() {
    let page = NfcPage {
        rows: 2,
        row_len: 24,
        keep: 11,
        mask: [0b11, 0, 0, 0],
        data: (0..48).collect(),
    };
    let run = check(&[page]);
    assert_eq!(run.out_count, [8, 3, 8, 3]);
    assert_eq!(
        run.out,
        (0..11).chain(24..35).collect::<Vec<u16>>(),
        "row prefixes"
    );
}

#[test]
fn nfc_filter_edge_cases() {
    let data = |n: usize| (0..n).map(|j| 0x8000 ^ j as u16).collect::<Vec<_>>();
    let mut pages = vec![
        // No row kept.
        NfcPage {
            rows: 16,
            row_len: 8,
            keep: 8,
            mask: [0; 4],
            data: data(128),
        },
        // All kept, whole rows.
        NfcPage {
            rows: 16,
            row_len: 8,
            keep: 8,
            mask: [u64::MAX; 4],
            data: data(128),
        },
        // Prefix 0.
        NfcPage {
            rows: 16,
            row_len: 8,
            keep: 0,
            mask: [u64::MAX; 4],
            data: data(128),
        },
        // Prefix = row, one row.
        NfcPage {
            rows: 1,
            row_len: 8,
            keep: 8,
            mask: [1, 0, 0, 0],
            data: data(8),
        },
        // One-beat rows, all 256 rows, odd rows only.
        NfcPage {
            rows: 256,
            row_len: 8,
            keep: 8,
            mask: [0xAAAA_AAAA_AAAA_AAAA; 4],
            data: data(2048),
        },
        // Last row only (row 255 = bit 63 of word 3), one element of it,
        // with a page tail.
        NfcPage {
            rows: 256,
            row_len: 8,
            keep: 1,
            mask: [0, 0, 0, 1 << 63],
            data: data(2048 + 40),
        },
        // Mask bits past `rows` are ignored.
        NfcPage {
            rows: 3,
            row_len: 8,
            keep: 8,
            mask: [u64::MAX; 4],
            data: data(40),
        },
        // A one-beat page, then a page with no elements.
        NfcPage {
            rows: 1,
            row_len: 8,
            keep: 7,
            mask: [1, 0, 0, 0],
            data: data(8),
        },
        NfcPage {
            rows: 0,
            row_len: 8,
            keep: 8,
            mask: [u64::MAX; 4],
            data: vec![],
        },
        // rows = 0 keeps nothing.
        NfcPage {
            rows: 0,
            row_len: 8,
            keep: 8,
            mask: [u64::MAX; 4],
            data: data(16),
        },
    ];
    check(&pages);
    // Each alone too (page 0's mask path, no overlap with a previous page).
    for p in pages.drain(..) {
        check(&[p]);
    }
}

#[test]
fn nfc_filter_keep_past_row_keeps_whole_rows() {
    // `RowFilter` rejects keep > row (`fits`), but its `kept_bytes` clamps;
    // the hardware clamps the same way.
    let page = NfcPage {
        rows: 4,
        row_len: 8,
        keep: 20,
        mask: [0b1010, 0, 0, 0],
        data: (0..32).collect(),
    };
    let run = run(&stimulus(&[page]));
    assert_eq!(run.out, (8..16).chain(24..32).collect::<Vec<u16>>());
}

#[test]
fn nfc_filter_short_rows_keep_nothing() {
    for row_len in [0, 1, 7] {
        let page = NfcPage {
            rows: 4,
            row_len,
            keep: row_len,
            mask: [u64::MAX; 4],
            data: (0..48).collect(),
        };
        assert!(run(&stimulus(&[page])).out.is_empty(), "row_len {row_len}");
    }
}

/// Rows of partial beats are refused: such a page keeps nothing.
#[test]
fn nfc_filter_partial_beat_rows_keep_nothing() {
    for row_len in [9, 12, 15, 4097] {
        let page = NfcPage {
            rows: 3,
            row_len,
            keep: 8,
            mask: [0b101, 0, 0, 0],
            data: (0..48).collect(),
        };
        assert!(run(&stimulus(&[page])).out.is_empty(), "row_len {row_len}");
    }
}

/// rust-hdl's own threaded `Simulation` agrees with the stepper in
/// `crate::sim` on a run of random pages.
#[test]
fn nfc_filter_rust_hdl_simulation_agrees() {
    let mut rng = SplitMix64::new(7);
    let pages: Vec<NfcPage> = (0..6).map(|_| random_page(&mut rng, 200)).collect();
    let stim = stimulus(&pages);
    let want = run(&stim);
    let mut uut = NfcFilter::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<NfcFilter>| x.clock.next = !x.clock.val());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let n = stim.len();
    sim.add_testbench(move |mut sim: Sim<NfcFilter>| {
        let mut x = sim.init()?;
        wait_clock_false!(sim, clock, x);
        for c in &stim {
            x.drive(c);
            wait_clock_true!(sim, clock, x);
            wait_clock_false!(sim, clock, x);
            if x.out_valid.val() {
                let n = x.out_count.val().index();
                let mut out = sink.lock().expect("lock");
                let beat = x.out_data.val();
                out.extend((0..n).map(|j| beat.get_bits::<16>(16 * j).to_u16()));
            }
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 20 * (n as u64 + 10))
        .expect("simulation");
    assert_eq!(*got.lock().expect("lock"), want.out);
}
