//! What SparF saves: on structured data with r = d/8 and k = S/8, the NAND
//! controllers hand the engine at most a quarter of dense's bytes, and the
//! statistics show both loading steps (page skips and element filtering).

use super::{Problem, attend, device};
use attention::shape::{Method, SparseParams};

#[test]
fn sparf_moves_a_quarter_or_less_of_dense() {
    for page_size in [4096, 16384] {
        let mut dev = device(page_size);
        let (s, d) = (4096, 128);
        let p = Problem::structured(3, 2, 1, s, d);
        let dense = attend(&mut dev, 1, &p, Method::Dense, 4);
        let before = dev.stats().unwrap();
        let sparf = Method::SparF(SparseParams {
            r: d / 8,
            k: s / 8,
            local: s / 32,
        });
        let sparse = attend(&mut dev, 2, &p, sparf, 4);
        let after = dev.stats().unwrap();

        let (de, se) = (dense.report.engine_bytes, sparse.report.engine_bytes);
        assert!(
            se * 4 <= de,
            "page {page_size}: sparf engine bytes {se} vs dense {de}"
        );
        // Dense reads every K and V page: 2 · kv_heads · S · d · 2 bytes.
        assert_eq!(de, 2 * 2 * (s * d * 2) as u64);
        assert_eq!(dense.report.pages_skipped, 0);
        // Step one skips dim pages of unchosen dims, step two token pages
        // without a chosen token; the filter drops the rest.
        assert!(sparse.report.pages_skipped > 0);
        assert!(sparse.report.elements_filtered > 0);
        eprintln!(
            "page {page_size}: dense {:?}\n  sparf {:?}",
            dense.report, sparse.report
        );
        // The device-wide counters agree with the per-decode report.
        assert_eq!(
            after.flash_pages_skipped - before.flash_pages_skipped,
            u64::from(sparse.report.pages_skipped)
        );
        assert_eq!(after.engine_bytes - before.engine_bytes, se);
        assert!(after.channel_bus_bytes > before.channel_bus_bytes);
    }
}
