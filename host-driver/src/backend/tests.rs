use attention::shape::SparseParams;
use attention::testdata::{structured_kv, structured_query};

use super::*;
use crate::array::CsdArray;
use crate::csd::Csd;
use crate::transport::SimTransport;

fn in_storage(devices: usize) -> InStorage<SimTransport> {
    let devs = (0..devices)
        .map(|_| Csd::new(SimTransport::new(4096).unwrap()).unwrap())
        .collect();
    InStorage::new(CsdArray::new(devs).unwrap(), 4)
}

const SHAPE: ModelShape = ModelShape {
    layers: 2,
    q_heads: 6,
    kv_heads: 2,
    head_dim: 32,
};

/// Prefill 120 tokens on both layers, then 3 steps with APPEND_KV.
fn drive(b: &mut dyn AttentionBackend, method: Method) -> Vec<Vec<f32>> {
    let (kv, d, s) = (SHAPE.kv_heads, SHAPE.head_dim, 120);
    let (k, v) = structured_kv(4, kv, s + 3, d);
    let rows = |x: &[f32], t0: usize, t1: usize| -> Vec<f32> {
        (0..kv)
            .flat_map(|h| x[(h * (s + 3) + t0) * d..(h * (s + 3) + t1) * d].to_vec())
            .collect()
    };
    b.open(3, SHAPE).unwrap();
    for layer in 0..2 {
        // Two appends: the second continues at the right position.
        b.append(3, layer, &rows(&k, 0, 50), &rows(&v, 0, 50))
            .unwrap();
        b.append(3, layer, &rows(&k, 50, s), &rows(&v, 50, s))
            .unwrap();
    }
    let q = structured_query(4, SHAPE.q_heads, d, kv);
    let mut outs = Vec::new();
    for step in 0..3 {
        let (kn, vn) = (
            rows(&k, s + step, s + step + 1),
            rows(&v, s + step, s + step + 1),
        );
        let batch: Vec<DecodeStep<'_>> = (0..2)
            .map(|layer| DecodeStep {
                seq: 3,
                layer,
                q: &q,
                kv_new: Some((&kn, &vn)),
                method,
            })
            .collect();
        outs.extend(b.decode(&batch).unwrap());
    }
    // And once more without a new token.
    outs.extend(
        b.decode(&[DecodeStep {
            seq: 3,
            layer: 0,
            q: &q,
            kv_new: None,
            method,
        }])
        .unwrap(),
    );
    b.close(3).unwrap();
    outs
}

fn max_err(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn in_storage_tracks_the_host_reference() {
    let sparf = Method::SparF(SparseParams {
        r: 4,
        k: 16,
        local: 4,
    });
    for method in [Method::Dense, sparf] {
        let dev = drive(&mut in_storage(1), method);
        let host = drive(&mut HostDense::new(), method);
        assert_eq!(dev.len(), 7);
        assert!(dev.iter().all(|o| o.len() == 6 * 32));
        let e = max_err(&dev, &host);
        assert!(e < 2e-3, "{}: max error {e}", method.name());
    }
}

#[test]
fn device_count_does_not_change_results() {
    let sparf = Method::SparF(SparseParams {
        r: 4,
        k: 16,
        local: 4,
    });
    let one = drive(&mut in_storage(1), sparf);
    assert_eq!(drive(&mut in_storage(2), sparf), one);
    assert_eq!(drive(&mut in_storage(3), sparf), one);
}

#[test]
fn host_dense_runs_sparq() {
    let sparq = Method::SparQ(SparseParams {
        r: 8,
        k: 200,
        local: 0,
    });
    let dense = drive(&mut HostDense::new(), Method::Dense);
    // k above S: SparQ keeps every token, so it equals dense up to rounding.
    assert!(max_err(&drive(&mut HostDense::new(), sparq), &dense) < 1e-4);
}

#[test]
fn batch_and_shape_errors() {
    for b in [
        &mut HostDense::new() as &mut dyn AttentionBackend,
        &mut in_storage(1),
    ] {
        let q = vec![0.0; 6 * 32];
        let step = DecodeStep {
            seq: 1,
            layer: 0,
            q: &q,
            kv_new: None,
            method: Method::Dense,
        };
        assert!(matches!(
            b.decode(&[step]),
            Err(BackendError::UnknownSequence(1))
        ));
        assert!(matches!(
            b.open(
                1,
                ModelShape {
                    q_heads: 5,
                    ..SHAPE
                }
            ),
            Err(BackendError::Shape(_))
        ));
        b.open(1, SHAPE).unwrap();
        assert!(matches!(
            b.open(1, SHAPE),
            Err(BackendError::SequenceExists(1))
        ));
        assert!(matches!(
            b.decode(&[step]),
            Err(BackendError::Empty { seq: 1, layer: 0 })
        ));
        assert!(matches!(
            b.decode(&[DecodeStep { layer: 2, ..step }]),
            Err(BackendError::Layer {
                layer: 2,
                layers: 2
            })
        ));
        assert!(matches!(
            b.append(1, 0, &[0.0; 63], &[0.0; 63]),
            Err(BackendError::Length { what: "k", .. })
        ));
        b.append(1, 0, &[0.5; 64], &[0.5; 64]).unwrap();
        assert!(matches!(
            b.decode(&[step, step]),
            Err(BackendError::DuplicateStep { seq: 1, layer: 0 })
        ));
        assert!(matches!(
            b.decode(&[DecodeStep { q: &q[1..], ..step }]),
            Err(BackendError::Length { what: "q", .. })
        ));
        let out = b.decode(&[step]).unwrap();
        assert!(
            out[0].iter().all(|&x| (x - 0.5).abs() < 1e-3),
            "{}",
            b.name()
        );
        b.close(1).unwrap();
        assert!(matches!(b.close(1), Err(BackendError::UnknownSequence(1))));
    }
}

fn plus(basis: attention::shape::BasisKind, guard: Option<attention::shape::Guard>) -> Method {
    Method::SparFPlus(attention::shape::SparfPlus {
        p: SparseParams {
            r: 4,
            k: 16,
            local: 4,
        },
        basis,
        guard,
    })
}

fn rotated(devices: usize, basis: attention::shape::BasisKind) -> InStorage<SimTransport> {
    let mut b = in_storage(devices);
    b.set_basis(basis);
    b
}

#[test]
fn sparf_plus_on_the_device_is_the_engine_model_bit_for_bit() {
    use attention::shape::{BasisKind, Guard};
    // α ≥ 1 is never reached below S: the guard widens k to its cap.
    let guard = Some(Guard {
        alpha_min_milli: 1000,
        k_cap: 40,
    });
    let plain = drive(&mut in_storage(1), plus(BasisKind::Raw, None));
    for (basis, guard) in [
        (BasisKind::Raw, guard),
        (BasisKind::Pca, None),
        (BasisKind::Balanced, None),
        (BasisKind::Pca, guard),
    ] {
        let m = plus(basis, guard);
        let want = drive(&mut HostDense::engine(), m);
        for devices in [1, 2] {
            let got = drive(&mut rotated(devices, basis), m);
            assert!(got == want, "{basis:?} {guard:?} on {devices} devices");
        }
        // Each option changes the selection, so the output.
        assert!(want != plain, "{basis:?} {guard:?}");
        // The reference agrees up to fp16 rounding of the rotated copy
        // (which can move near-ties in the top-k): a loose bound.
        let host = drive(&mut HostDense::new(), m);
        assert!(max_err(&want, &host) < 0.1, "{basis:?} {guard:?}");
    }
    // SparF+ in the raw basis without a guard is SparF.
    let sparf = Method::SparF(SparseParams {
        r: 4,
        k: 16,
        local: 4,
    });
    assert!(drive(&mut in_storage(1), sparf) == plain);
}

#[test]
fn rotated_copy_leaves_the_exact_pass_alone() {
    use attention::shape::BasisKind;
    // k ≥ S: every token is chosen whatever the approximate copy says, so
    // a rotated sequence's SparF+ is the device's dense attention.
    let all = Method::SparFPlus(attention::shape::SparfPlus {
        p: SparseParams {
            r: 4,
            k: 1000,
            local: 0,
        },
        basis: BasisKind::Pca,
        guard: None,
    });
    let dense = drive(&mut in_storage(1), Method::Dense);
    assert!(drive(&mut rotated(1, BasisKind::Pca), all) == dense);
}

#[test]
fn basis_and_method_must_match() {
    use attention::shape::BasisKind;
    let q = vec![0.1f32; 6 * 32];
    let (k, v) = (vec![0.2f32; 2 * 32], vec![0.3f32; 2 * 32]);
    let step = |method| DecodeStep {
        seq: 1,
        layer: 0,
        q: &q,
        kv_new: Some((&k, &v)),
        method,
    };
    let sparf = Method::SparF(SparseParams {
        r: 4,
        k: 16,
        local: 4,
    });
    // Plain SparF, or SparF+ raw, on a rotated sequence; SparF+ PCA on a
    // plain one: refused on the host, nothing sent.
    let mut b = rotated(1, BasisKind::Pca);
    b.open(1, SHAPE).unwrap();
    for m in [sparf, plus(BasisKind::Raw, None)] {
        let e = b.decode(&[step(m)]).unwrap_err().to_string();
        assert!(e.contains("rotated") || e.contains("basis"), "{e}");
    }
    b.decode(&[step(plus(BasisKind::Pca, None))]).unwrap();
    let mut b = in_storage(1);
    b.open(1, SHAPE).unwrap();
    let e = b
        .decode(&[step(plus(BasisKind::Pca, None))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("plain"), "{e}");
    b.decode(&[step(Method::Dense)]).unwrap();
}

/// Prefill `s` tokens in one append per layer, then 3 steps with
/// APPEND_KV and one without.
fn drive_long(b: &mut dyn AttentionBackend, method: Method, s: usize) -> Vec<Vec<f32>> {
    let (kv, d) = (SHAPE.kv_heads, SHAPE.head_dim);
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
    let mut outs = Vec::new();
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
        outs.extend(b.decode(&batch).unwrap());
    }
    outs.extend(
        b.decode(&[DecodeStep {
            seq: 5,
            layer: 1,
            q: &q,
            kv_new: None,
            method,
        }])
        .unwrap(),
    );
    b.close(5).unwrap();
    outs
}

#[test]
fn pages_on_the_device_is_the_engine_model_bit_for_bit() {
    use crate::policy::{Compression, Policy, Selection};
    let s = 700;
    let dense = drive_long(&mut HostDense::engine(), Method::Dense, s);
    use attention::shape::PageScore::{Bound, Mean, Sketch};
    for (similar, sink, c, fill, score) in [
        (
            true,
            4,
            "1/4",
            true,
            Sketch {
                bits: 2,
                shortlist: 0,
                bound: false,
            },
        ),
        (
            true,
            4,
            "1/4",
            true,
            Sketch {
                bits: 2,
                shortlist: 2,
                bound: false,
            },
        ),
        (
            true,
            4,
            "1/8",
            true,
            Sketch {
                bits: 2,
                shortlist: 2,
                bound: true,
            },
        ),
        (
            true,
            4,
            "1/8",
            true,
            Sketch {
                bits: 2,
                shortlist: 3,
                bound: true,
            },
        ),
        (
            true,
            4,
            "1/4",
            false,
            Sketch {
                bits: 1,
                shortlist: 2,
                bound: false,
            },
        ),
        (
            false,
            0,
            "1/2",
            true,
            Sketch {
                bits: 4,
                shortlist: 0,
                bound: true,
            },
        ),
        (true, 4, "1/4", false, Bound),
        (false, 0, "1/4", false, Bound),
        (true, 0, "1/2", false, Bound),
        (true, 4, "1/4", true, Bound),
        (true, 4, "1/4", true, Mean),
        (true, 4, "1", false, Mean),
    ] {
        let mut policy = Policy::new(Selection::Pages, c.parse::<Compression>().unwrap());
        policy.pages.similar = similar;
        policy.pages.sink = sink;
        policy.pages.fill = fill;
        policy.pages.score = score;
        // d = 32 at 4 KiB: 64 tokens a page, 10 full pages.
        let m = policy.method(s, SHAPE.head_dim);
        let Method::Pages(p) = m else {
            panic!("pages");
        };
        assert_eq!(p.page_tokens, 64);
        let want = drive_long(&mut HostDense::engine(), m, s);
        for devices in [1, 2] {
            let mut b = in_storage(devices);
            b.set_placement(policy.pages.placement());
            let got = drive_long(&mut b, m, s);
            assert!(
                got == want,
                "similar {similar} sink {sink} {c} fill {fill} {score:?} on {devices} devices"
            );
        }
        // Every page read is dense, whatever the order the drive keeps
        // (integer sums do not depend on it); fewer pages are not.
        assert_eq!(want == dense, c == "1", "similar {similar} sink {sink} {c}");
    }
}

#[test]
fn pages_refuses_a_sink_the_sequence_was_not_opened_with() {
    use crate::policy::{Compression, Policy, Selection};
    let mut policy = Policy::new(Selection::Pages, "1/4".parse::<Compression>().unwrap());
    policy.pages.sink = 4;
    let m = policy.method(700, SHAPE.head_dim);
    let mut b = in_storage(1);
    // Opened in time order with no sinks.
    b.open(1, SHAPE).unwrap();
    let (kv, d) = (SHAPE.kv_heads, SHAPE.head_dim);
    let k = vec![0.5f32; kv * 10 * d];
    b.append(1, 0, &k, &k).unwrap();
    let q = vec![0.1f32; SHAPE.q_heads * d];
    let r = b.decode(&[DecodeStep {
        seq: 1,
        layer: 0,
        q: &q,
        kv_new: None,
        method: m,
    }]);
    assert!(r.is_err());
}

#[test]
fn pages_refuses_a_sketch_the_sequence_was_not_opened_with() {
    use crate::policy::{Compression, Policy, Selection};
    let mut policy = Policy::new(Selection::Pages, "1/4".parse::<Compression>().unwrap());
    policy.pages.score = attention::shape::PageScore::Mean;
    let placement = policy.pages.placement();
    assert_eq!(placement.sketch_bits, 0);
    policy.pages.score = attention::shape::PageScore::Sketch {
        bits: 2,
        shortlist: 2,
        bound: true,
    };
    let m = policy.method(700, SHAPE.head_dim);
    for (opened, ok) in [(placement, false), (policy.pages.placement(), true)] {
        let mut b = in_storage(1);
        b.set_placement(opened);
        b.open(1, SHAPE).unwrap();
        let (kv, d) = (SHAPE.kv_heads, SHAPE.head_dim);
        let k: Vec<f32> = (0..kv * 100 * d).map(|i| (i % 7) as f32 * 0.1).collect();
        b.append(1, 0, &k, &k).unwrap();
        let q = vec![0.1f32; SHAPE.q_heads * d];
        let r = b.decode(&[DecodeStep {
            seq: 1,
            layer: 0,
            q: &q,
            kv_new: None,
            method: m,
        }]);
        assert_eq!(r.is_ok(), ok, "sketch bits {}", opened.sketch_bits);
        if !ok {
            let e = r.err().unwrap().to_string();
            assert!(e.contains("2-bit sketch"), "{e}");
        }
    }
}
