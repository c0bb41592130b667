use attention::shape::SparseParams;
use attention::testdata::SplitMix64;
use host_driver::array::{ArrayDecode, CsdArray};
use host_driver::csd::Csd;
use host_driver::transport::SimTransport;

use super::*;

const SHAPE: ModelShape = ModelShape {
    layers: 2,
    q_heads: 4,
    kv_heads: 2,
    head_dim: 32,
};

fn rand(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
}

fn bits(x: &[f32]) -> Vec<u16> {
    host_driver::backend::to_f16_bits(x)
}

/// The same prefill and decode through `Drives` and through a `CsdArray`
/// driven by hand: equal outputs, bit for bit, for dense and SparF, on
/// one drive and on two.
#[test]
fn decode_equals_the_array_bit_for_bit() {
    for n_dev in [1, 2] {
        let mut rng = SplitMix64::new(7 + n_dev as u64);
        let s = 300;
        let row = SHAPE.kv_heads * SHAPE.head_dim;
        let (k, v) = (rand(&mut rng, row * s), rand(&mut rng, row * s));
        let q = rand(&mut rng, SHAPE.q_heads * SHAPE.head_dim);
        let (kn, vn) = (rand(&mut rng, row), rand(&mut rng, row));
        let p = SparseParams {
            r: 4,
            k: 40,
            local: 10,
        };
        let mut drives = Drives::open(&vec!["sim"; n_dev], 4096).unwrap();
        drives
            .open_sequence(3, SHAPE, SeqOptions::default())
            .unwrap();
        let mut array = CsdArray::new(
            (0..n_dev)
                .map(|_| Csd::new(SimTransport::new(4096).unwrap()).unwrap())
                .collect(),
        )
        .unwrap();
        let dev_shape = SeqShape {
            layers: 2,
            kv_heads: 2,
            group: 2,
            head_dim: 32,
            dim_group: 1,
            rotated: false,
            placement: proto::Placement::TIME,
        };
        array.open(3, dev_shape).unwrap();
        for layer in 0..2 {
            assert_eq!(
                drives
                    .append(3, layer, Values::F32(&k), Values::F32(&v))
                    .unwrap(),
                s
            );
            array
                .append(3, layer as u16, 0, &bits(&k), &bits(&v))
                .unwrap();
        }
        for (layer, method) in [(0, MethodSpec::DENSE), (1, MethodSpec::sparf(p).unwrap())] {
            let got = drives
                .decode(&[Step {
                    seq: 3,
                    layer,
                    q: Values::F32(&q),
                    kv_new: Some((Values::F32(&kn), Values::F32(&vn))),
                    method,
                }])
                .unwrap();
            let (qb, knb, vnb) = (bits(&q), bits(&kn), bits(&vn));
            let want = array
                .decode_batch(&[ArrayDecode {
                    seq: 3,
                    layer: layer as u16,
                    position: s as u32,
                    q: &qb,
                    kv_new: Some((&knb, &vnb)),
                    approx: None,
                    method: method.resolve(s + 1, 32).unwrap(),
                }])
                .unwrap();
            let o = &got.steps[0];
            let same = o
                .out
                .iter()
                .zip(&want[0].out)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same && o.out.len() == 4 * 32,
                "{n_dev} drives, layer {layer}"
            );
            assert_eq!(o.report.tokens, s as u32 + 1);
            assert_eq!(o.report.pages_read, want[0].report.pages_read);
            assert!(got.virtual_ns.unwrap() > 0);
            assert_eq!(drives.len(3, layer).unwrap(), s + 1);
        }
        // SparF read fewer pages than there are.
        assert!(drives.stats().unwrap().iter().all(|s| s.decodes == 2));
    }
}

#[test]
fn fp16_and_f32_inputs_give_the_same_bits() {
    let mut rng = SplitMix64::new(11);
    let row = SHAPE.kv_heads * SHAPE.head_dim;
    let (k, v) = (rand(&mut rng, row * 40), rand(&mut rng, row * 40));
    let q = rand(&mut rng, SHAPE.q_heads * SHAPE.head_dim);
    let run = |f16: bool| {
        let mut d = Drives::open(&["sim"], 4096).unwrap();
        d.open_sequence(1, SHAPE, SeqOptions::default()).unwrap();
        let (kb, vb, qb) = (bits(&k), bits(&v), bits(&q));
        if f16 {
            d.append(1, 0, Values::F16(&kb), Values::F16(&vb)).unwrap();
        } else {
            d.append(1, 0, Values::F32(&k), Values::F32(&v)).unwrap();
        }
        let q = if f16 {
            Values::F16(&qb)
        } else {
            Values::F32(&q)
        };
        let step = Step {
            seq: 1,
            layer: 0,
            q,
            kv_new: None,
            method: MethodSpec::DENSE,
        };
        d.decode(&[step]).unwrap().steps[0].out.clone()
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn bad_calls_are_refused_and_change_nothing() {
    let mut d = Drives::open(&["sim"], 4096).unwrap();
    assert!(matches!(
        Drives::open(&["nope"], 4096),
        Err(OffloadError::Invalid(_))
    ));
    assert!(Drives::open::<&str>(&[], 4096).is_err());
    assert!(Drives::open(&["sim"], 1000).is_err());
    d.open_sequence(1, SHAPE, SeqOptions::default()).unwrap();
    assert!(matches!(
        d.open_sequence(1, SHAPE, SeqOptions::default()),
        Err(OffloadError::SequenceExists(1))
    ));
    let bad_shape = ModelShape {
        q_heads: 3,
        ..SHAPE
    };
    assert!(
        d.open_sequence(2, bad_shape, SeqOptions::default())
            .is_err()
    );
    let row = SHAPE.kv_heads * SHAPE.head_dim;
    let k = vec![0.5f32; row * 3];
    assert!(
        d.append(1, 0, Values::F32(&k), Values::F32(&k[..row]))
            .is_err()
    );
    assert!(
        d.append(1, 0, Values::F32(&k[1..]), Values::F32(&k[1..]))
            .is_err()
    );
    assert!(d.append(1, 5, Values::F32(&k), Values::F32(&k)).is_err());
    assert!(matches!(
        d.append(9, 0, Values::F32(&k), Values::F32(&k)),
        Err(OffloadError::UnknownSequence(9))
    ));
    let mut nan = k.clone();
    nan[4] = f32::NAN;
    assert!(d.append(1, 0, Values::F32(&nan), Values::F32(&k)).is_err());
    assert_eq!(d.len(1, 0).unwrap(), 0);
    let q = vec![0.1f32; SHAPE.q_heads * SHAPE.head_dim];
    let step = |layer, method| Step {
        seq: 1,
        layer,
        q: Values::F32(&q),
        kv_new: None,
        method,
    };
    // Nothing stored yet.
    assert!(d.decode(&[step(0, MethodSpec::DENSE)]).is_err());
    d.append(1, 0, Values::F32(&k), Values::F32(&k)).unwrap();
    // A host-only method, and a short q.
    let h2o = MethodSpec::parse("h2o", 0.5).unwrap();
    assert!(d.decode(&[step(0, h2o)]).is_err());
    let short = Step {
        q: Values::F32(&q[1..]),
        ..step(0, MethodSpec::DENSE)
    };
    assert!(d.decode(&[short]).is_err());
    assert!(
        d.decode(&[step(0, MethodSpec::DENSE), step(0, MethodSpec::DENSE)])
            .is_err()
    );
    // A pending batch blocks appends and decodes of its layer until fetched.
    let id = d.submit(&[step(0, MethodSpec::DENSE)]).unwrap();
    assert!(d.append(1, 0, Values::F32(&k), Values::F32(&k)).is_err());
    assert!(d.submit(&[step(0, MethodSpec::DENSE)]).is_err());
    assert_eq!(d.pending(), vec![id]);
    assert_eq!(d.fetch(id).unwrap().steps.len(), 1);
    assert!(matches!(d.fetch(id), Err(OffloadError::UnknownBatch(_))));
    // Closing collects a pending batch of the sequence.
    let id = d.submit(&[step(0, MethodSpec::DENSE)]).unwrap();
    d.close_sequence(1).unwrap();
    assert!(d.fetch(id).is_err());
    assert!(d.pending().is_empty());
    assert!(matches!(
        d.close_sequence(1),
        Err(OffloadError::UnknownSequence(1))
    ));
}

/// A drive's refusal keeps its NVMe status: more sequences than the drive
/// holds.
#[test]
fn a_drive_refusal_carries_its_status() {
    let mut d = Drives::open(&["sim"], 4096).unwrap();
    let max = d.identify()[0].caps.max_sequences;
    let mut err = None;
    for seq in 0..=max {
        if let Err(e) = d.open_sequence(seq, SHAPE, SeqOptions::default()) {
            err = Some(e);
            break;
        }
    }
    let e = err.expect("the drive refuses a sequence past its limit");
    assert_eq!(e.code(), 5, "{e}");
    assert!(e.nvme_status().is_some_and(|s| s != 0));
    assert_eq!(e.command(), Some("SEQ_OPEN"));
}

/// SparF+ in a PCA basis and the flash-aware pages method on the sequences
/// opened for them, refused on the others.
#[test]
fn rotated_and_placed_sequences_run_their_methods() {
    let mut rng = SplitMix64::new(5);
    let row = SHAPE.kv_heads * SHAPE.head_dim;
    let s = 400;
    let (k, v) = (rand(&mut rng, row * s), rand(&mut rng, row * s));
    let q = rand(&mut rng, SHAPE.q_heads * SHAPE.head_dim);
    let mut d = Drives::open(&["sim"], 4096).unwrap();
    let pca = SeqOptions {
        basis: BasisKind::Pca,
        ..SeqOptions::default()
    };
    let pages = SeqOptions {
        layout: Layout::Pages,
        ..SeqOptions::default()
    };
    d.open_sequence(1, SHAPE, pca).unwrap();
    d.open_sequence(2, SHAPE, pages).unwrap();
    for seq in [1, 2] {
        d.append(seq, 0, Values::F32(&k), Values::F32(&v)).unwrap();
    }
    let step = |seq, name| Step {
        seq,
        layer: 0,
        q: Values::F32(&q),
        kv_new: None,
        method: MethodSpec::parse(name, 0.125).unwrap(),
    };
    let out = d.decode(&[step(1, "sparf-pca"), step(2, "pages")]).unwrap();
    assert!(
        out.steps
            .iter()
            .all(|s| s.out.iter().all(|x| x.is_finite()))
    );
    assert!(out.steps[1].report.pages_skipped > 0);
    assert!(d.decode(&[step(1, "sparf")]).is_err());
    assert!(d.decode(&[step(2, "sparf-pca")]).is_err());
}
