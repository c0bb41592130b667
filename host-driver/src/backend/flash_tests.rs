//! The flash accounting of the backends: the drive's measured page reads
//! and bus bytes equal what the host's layout model counts for the same
//! choices, and the host counts every method.

use attention::shape::{BasisKind, BlockParams, Guard, H2oParams, SparfPlus, SparseParams};

use crate::policy::PagesSetting;
use attention::testdata::{structured_kv, structured_query};

use super::*;
use crate::array::CsdArray;
use crate::csd::Csd;
use crate::transport::SimTransport;

const SHAPE: ModelShape = ModelShape {
    layers: 2,
    q_heads: 6,
    kv_heads: 2,
    head_dim: 32,
};

/// d = 32, m = 4 on 4 KiB pages: T = 64 tokens per token page, N = 512
/// per dim page.
const LAYOUT: FlashLayout = FlashLayout {
    page_bytes: 4096,
    dim_group: 4,
};

/// Prefill tokens: 17 full token pages and 2 full dim runs, and a tail.
const PREFILL: usize = 1150;

fn sparf() -> SparseParams {
    SparseParams {
        r: 4,
        k: 8,
        local: 2,
    }
}

/// Prefills both layers, then 3 steps with a new token (the second fills
/// page 18); the flash count of every step of layer 1.
fn counts(b: &mut dyn AttentionBackend, method: Method) -> Vec<FlashCount> {
    let (kv, d, s) = (SHAPE.kv_heads, SHAPE.head_dim, PREFILL);
    let (k, v) = structured_kv(9, kv, s + 3, d);
    let rows = |x: &[f32], t0: usize, t1: usize| -> Vec<f32> {
        (0..kv)
            .flat_map(|h| x[(h * (s + 3) + t0) * d..(h * (s + 3) + t1) * d].to_vec())
            .collect()
    };
    b.open(5, SHAPE).unwrap();
    for layer in 0..2 {
        b.append(5, layer, &rows(&k, 0, s), &rows(&v, 0, s))
            .unwrap();
    }
    let q = structured_query(9, SHAPE.q_heads, d, kv);
    let mut out = Vec::new();
    for step in 0..3 {
        let (kn, vn) = (
            rows(&k, s + step, s + step + 1),
            rows(&v, s + step, s + step + 1),
        );
        let batch: Vec<DecodeStep<'_>> = (0..2)
            .map(|layer| DecodeStep {
                seq: 5,
                layer,
                q: &q,
                kv_new: Some((&kn, &vn)),
                method,
            })
            .collect();
        b.decode(&batch).unwrap();
        out.push(b.last_flash().expect("a flash count"));
    }
    b.close(5).unwrap();
    out
}

fn drive(devices: usize, method: Method) -> InStorage<SimTransport> {
    let devs = (0..devices)
        .map(|_| Csd::new(SimTransport::new(LAYOUT.page_bytes).unwrap()).unwrap())
        .collect();
    let mut b = InStorage::new(CsdArray::new(devs).unwrap(), LAYOUT.dim_group);
    match method {
        Method::SparFPlus(o) => b.set_basis(o.basis),
        Method::Pages(_) => b.set_placement(PagesSetting::DEFAULT.placement()),
        _ => {}
    }
    b
}

/// The page selection at a quarter of the pages, 4 sinks pinned.
fn pages() -> Method {
    Method::Pages(PagesSetting::DEFAULT.params(0.25, PREFILL, SHAPE.head_dim))
}

fn engine() -> HostDense {
    let mut b = HostDense::engine();
    b.set_flash_layout(LAYOUT);
    b
}

#[test]
fn the_drive_reads_what_the_model_counts() {
    let guarded = Method::SparFPlus(SparfPlus {
        p: sparf(),
        basis: BasisKind::Pca,
        guard: Some(Guard {
            alpha_min_milli: 900,
            k_cap: 32,
        }),
    });
    for method in [Method::Dense, Method::SparF(sparf()), guarded, pages()] {
        let want = counts(&mut engine(), method);
        for devices in [1, 2] {
            let got = counts(&mut drive(devices, method), method);
            assert_eq!(got, want, "{} on {devices} devices", method.name());
        }
        // Dense reads 2 heads × (K + V) × 17, then 18 full pages.
        let dense: Vec<u64> = want.iter().map(|c| c.dense_pages).collect();
        assert_eq!(dense, [68, 72, 72]);
        assert_eq!(want[1].dense_bus_bytes, 72 * 4096);
        if method == Method::Dense {
            assert!(want.iter().all(|c| c.page_fraction() == Some(1.0)));
            assert!(want.iter().all(|c| c.bus_fraction() == Some(1.0)));
        } else if method == pages() {
            for c in &want {
                // At most 4 of 17 pages per head, whole but for the sinks.
                assert!(c.pages <= 2 * 2 * 4 && c.pages >= 2 * 2, "{c:?}");
                assert!(c.bus_bytes > (c.pages - 2 * 2) * 4096, "{c:?}");
            }
        } else {
            for c in &want {
                // The 4 chosen dims of the 2 full dim runs, per head.
                assert!(c.bus_bytes >= 2 * 4 * 2 * 512 * 2, "{c:?}");
                assert!(c.pages >= 2 * 2, "{c:?}");
                assert!(c.page_fraction().unwrap() < 1.0, "{c:?}");
                assert!(c.bus_fraction().unwrap() < 0.3, "{c:?}");
            }
        }
    }
}

#[test]
fn the_host_counts_every_method() {
    let one = |method| {
        let mut b = HostDense::new();
        b.set_flash_layout(LAYOUT);
        counts(&mut b, method)[2]
    };
    // At 1153 tokens: 18 full pages per K and V of each of 2 heads.
    let dense = one(Method::Dense);
    assert_eq!(dense.pages, 72);
    assert_eq!(dense.dense_pages, 72);
    // The last 64 tokens: 63 on page 17, one in the DRAM tail.
    let local = one(Method::Local { window: 64 });
    assert_eq!(local.pages, 2 * 2);
    assert_eq!(local.bus_bytes, 2 * 2 * 63 * 64);
    // The oracle reads every K page to score.
    let oracle = one(Method::Oracle { k: 8 });
    assert!(
        oracle.pages > 36 && oracle.pages <= 36 + 2 * 8,
        "{oracle:?}"
    );
    assert!(oracle.bus_fraction().unwrap() > 0.5);
    // Block: budget 128 of 1153 tokens in blocks of 64 (page-aligned): at
    // most 2 blocks per head, each a K and a V page, one may be the tail.
    let block = one(Method::Block(BlockParams {
        block: 64,
        budget: 128,
    }));
    assert!(
        block.pages <= 2 * 2 * 2 && block.pages >= 2 * 2,
        "{block:?}"
    );
    // H2O's first step after the prompt attends every token; the third,
    // its cache of 96.
    let h2o = one(Method::H2o(H2oParams {
        heavy: 64,
        recent: 32,
    }));
    assert!(h2o.pages < 72 && h2o.pages >= 2 * 2 * 2, "{h2o:?}");
    // SparQ reads the union of its query heads' choices: more pages than
    // SparF's one choice per group, few bytes.
    let sparq = one(Method::SparQ(sparf()));
    let sparf = one(Method::SparF(sparf()));
    assert!(sparq.pages > sparf.pages, "{sparq:?} {sparf:?}");
    assert!(sparq.bus_fraction().unwrap() < 0.5, "{sparq:?}");
    // Pages: whole pages but for the 4 pinned sinks, at most 4 per head
    // (the engine model's selection, in both arithmetics).
    let pages = one(pages());
    assert!(
        pages.pages <= 2 * 2 * 4 && pages.pages >= 2 * 2,
        "{pages:?}"
    );
    assert!(pages.bus_bytes <= pages.pages * 4096, "{pages:?}");
    assert!(pages.bus_bytes > (pages.pages - 2 * 2) * 4096, "{pages:?}");
}
