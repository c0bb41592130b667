//! In-storage dense attention equals the host: bit for bit with the engine
//! model, and within the engine's error bound of the f32 reference, over
//! head sizes, lengths around page boundaries, MHA and GQA 9:3, both page
//! sizes.

use super::{Problem, attend, device, max_abs_diff};
use attention::engine::{DENSE_EPS, error_bound};
use attention::shape::Method;

const LENGTHS: [usize; 6] = [1, 15, 16, 17, 1000, 4096];

fn check(page_size: u32, d: usize, kv_heads: usize, group: usize) {
    let mut dev = device(page_size);
    for (i, &s) in LENGTHS.iter().enumerate() {
        let seed = (page_size as u64) << 20 | (d as u64) << 12 | (group as u64) << 8 | i as u64;
        let p = Problem::structured(seed, kv_heads, group, s, d);
        let got = attend(&mut dev, i as u32, &p, Method::Dense, 4);
        assert_eq!(
            got.raw,
            p.engine(Method::Dense),
            "page {page_size} d {d} S {s} {kv_heads}x{group}: device differs from the engine model"
        );
        let reference = p.reference(Method::Dense);
        let err = max_abs_diff(&got.out, &reference);
        let bound = error_bound(DENSE_EPS, f64::from(p.max_abs_v())) as f32;
        assert!(
            err <= bound,
            "page {page_size} d {d} S {s}: error {err} above bound {bound}"
        );
        assert_eq!(got.report.tokens_attended as usize, s);
    }
}

#[test]
fn mha_4k_pages() {
    for d in [64, 128] {
        check(4096, d, 2, 1);
    }
}

#[test]
fn mha_16k_pages() {
    for d in [64, 128] {
        check(16384, d, 2, 1);
    }
}

#[test]
fn gqa_9_on_3_4k_pages() {
    for d in [64, 128] {
        check(4096, d, 3, 3);
    }
}

#[test]
fn gqa_9_on_3_16k_pages() {
    for d in [64, 128] {
        check(16384, d, 3, 3);
    }
}
