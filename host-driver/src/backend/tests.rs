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
