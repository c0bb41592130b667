//! In-storage SparF equals the engine model's SparF bit for bit: page and
//! element filtering change what is read, never the numbers. Covers dim
//! groups m = 1..8, MHA and GQA, both page sizes, lengths that end inside
//! pages, and a DRAM budget small enough to force partial pages that are
//! later superseded.

use super::{Problem, attend, device, device_with, max_abs_diff};
use attention::engine::{SPARF_EPS, error_bound};
use attention::shape::{Method, SparseParams};
use board_sim::SimConfig;

fn sparf(d: usize, s: usize) -> Method {
    Method::SparF(SparseParams {
        r: d / 8,
        k: (s / 8).max(1),
        local: (s / 32).max(1),
    })
}

#[test]
fn bit_exact_with_engine_model() {
    for page_size in [4096, 16384] {
        let mut dev = device(page_size);
        let mut seq = 0;
        for (d, kv_heads, group) in [(64, 3, 3), (128, 2, 1)] {
            for s in [1, 17, 1000, 4096] {
                for m in [1u8, 4, 8] {
                    let p = Problem::structured(seq as u64 + 77, kv_heads, group, s, d);
                    let method = sparf(d, s);
                    let got = attend(&mut dev, seq, &p, method, m);
                    assert_eq!(
                        got.raw,
                        p.engine(method),
                        "page {page_size} d {d} S {s} m {m} {kv_heads}x{group}"
                    );
                    seq += 1;
                }
            }
        }
    }
}

#[test]
fn full_selection_is_dense() {
    let mut dev = device(4096);
    let p = Problem::structured(5, 3, 3, 1000, 64);
    let all = Method::SparF(SparseParams {
        r: 64,
        k: 1000,
        local: 0,
    });
    let sparse = attend(&mut dev, 1, &p, all, 2);
    let dense = attend(&mut dev, 2, &p, Method::Dense, 2);
    assert_eq!(sparse.raw, dense.raw);
}

#[test]
fn close_to_reference_sparf() {
    // Same selection as the f32 reference on clearly structured data: the
    // outputs then agree within the engine's SparF bound.
    let mut dev = device(16384);
    let p = Problem::structured(11, 2, 3, 4096, 128);
    let method = Method::SparF(SparseParams {
        r: 32,
        k: 4 + 4096 / 64,
        local: 4,
    });
    let got = attend(&mut dev, 3, &p, method, 4);
    let err = max_abs_diff(&got.out, &p.reference(method));
    let bound = error_bound(SPARF_EPS, f64::from(p.max_abs_v())) as f32;
    assert!(err <= bound, "error {err} above bound {bound}");
}

#[test]
fn partial_pages_under_a_small_dram_budget() {
    // 16 KiB pages with m = 1 hold 8192 tokens per dim page: without budget
    // pressure a 3000-token head would keep all its dim data in DRAM. A
    // small budget forces partial dim pages, written and later superseded.
    let mut cfg = SimConfig::new(16384);
    cfg.dram_budget = 256 << 10;
    let mut dev = device_with(cfg);
    let p = Problem::structured(9, 2, 3, 3000, 64);
    let method = sparf(64, 3000);
    dev.open(1, p.shape(1)).unwrap();
    // Append in uneven slices so partial pages are superseded repeatedly.
    let d = p.d;
    let mut at = 0;
    for n in [1000usize, 700, 1, 299, 1000] {
        let slice = |x: &[u16]| -> Vec<u16> {
            (0..p.kv_heads)
                .flat_map(|h| x[(h * p.s + at) * d..(h * p.s + at + n) * d].to_vec())
                .collect()
        };
        dev.append(1, 0, at as u32, &slice(&p.k), &slice(&p.v))
            .unwrap();
        at += n;
    }
    let stats = dev.stats().unwrap();
    assert!(stats.partial_pages_written > 0, "{stats:?}");
    assert!(stats.pages_superseded > 0, "{stats:?}");
    let t = dev.submit_decode(1, 0, 2999, &p.q, None, method).unwrap();
    let got = dev.fetch(t).unwrap();
    assert_eq!(got.raw, p.engine(method));
    let t = dev
        .submit_decode(1, 0, 2999, &p.q, None, Method::Dense)
        .unwrap();
    assert_eq!(dev.fetch(t).unwrap().raw, p.engine(Method::Dense));
}
