use attention::shape::SparseParams;
use attention::testdata::{structured_kv, structured_query};

use super::*;
use crate::backend::to_f16_bits;
use crate::transport::SimTransport;

fn array(n: usize) -> CsdArray<SimTransport> {
    let devs = (0..n)
        .map(|_| Csd::new(SimTransport::new(4096).unwrap()).unwrap())
        .collect();
    CsdArray::new(devs).unwrap()
}

/// Prefill, then two decode steps with APPEND_KV (dense and SparF on two
/// layers), all raw outputs.
fn run(n: usize, kv: usize, group: usize) -> Vec<Vec<i32>> {
    let (s, d) = (200, 16);
    let (k, v) = structured_kv(21, kv, s + 2, d);
    let q = to_f16_bits(&structured_query(21, kv * group, d, kv));
    let (k, v) = (to_f16_bits(&k), to_f16_bits(&v));
    let rows = |x: &[u16], t0: usize, t1: usize| -> Vec<u16> {
        (0..kv)
            .flat_map(|h| x[(h * (s + 2) + t0) * d..(h * (s + 2) + t1) * d].to_vec())
            .collect()
    };
    let shape = SeqShape {
        layers: 2,
        kv_heads: kv as u8,
        group: group as u8,
        head_dim: d as u16,
        dim_group: 4,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let mut a = array(n);
    a.open(5, shape).unwrap();
    for layer in 0..2 {
        a.append(5, layer, 0, &rows(&k, 0, s), &rows(&v, 0, s))
            .unwrap();
    }
    let sparf = Method::SparF(SparseParams {
        r: 3,
        k: 30,
        local: 5,
    });
    let mut outs = Vec::new();
    for step in 0..2 {
        let (kn, vn) = (
            rows(&k, s + step, s + step + 1),
            rows(&v, s + step, s + step + 1),
        );
        let reqs: Vec<ArrayDecode<'_>> = [(0, Method::Dense), (1, sparf)]
            .iter()
            .map(|&(layer, method)| ArrayDecode {
                seq: 5,
                layer,
                position: (s + step) as u32,
                q: &q,
                kv_new: Some((&kn, &vn)),
                approx: None,
                method,
            })
            .collect();
        outs.extend(a.decode_batch(&reqs).unwrap().into_iter().map(|o| o.raw));
    }
    a.close(5).unwrap();
    outs
}

#[test]
fn sharded_results_equal_one_device_bit_for_bit() {
    let one = run(1, 3, 3);
    assert_eq!(one[0].len(), 9 * 16);
    for n in [2, 3, 5] {
        assert_eq!(run(n, 3, 3), one, "{n} devices");
    }
}

#[test]
fn devices_without_heads_stay_idle() {
    let mut a = array(4);
    let shape = SeqShape {
        layers: 1,
        kv_heads: 2,
        group: 1,
        head_dim: 8,
        dim_group: 2,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    a.open(1, shape).unwrap();
    assert_eq!(a.head_ranges(1).unwrap(), &[0..1, 1..2, 2..2, 2..2]);
    assert_eq!(a.devices()[0].shape(1).map(|s| s.kv_heads), Some(1));
    assert_eq!(a.devices()[3].shape(1), None);
    a.append(1, 0, 0, &[0x3c00; 16], &[0x3c00; 16]).unwrap();
    let q = [0x3c00u16; 16];
    let req = ArrayDecode {
        seq: 1,
        layer: 0,
        position: 0,
        q: &q,
        kv_new: None,
        approx: None,
        method: Method::Dense,
    };
    let out = a.decode_batch(&[req]).unwrap();
    assert_eq!(out[0].out, vec![1.0; 16]);
    a.close(1).unwrap();
    assert!(matches!(a.close(1), Err(CsdError::UnknownSequence(1))));
}

#[test]
fn argument_errors() {
    assert!(CsdArray::<SimTransport>::new(Vec::new()).is_err());
    let mut a = array(2);
    let shape = SeqShape {
        layers: 1,
        kv_heads: 2,
        group: 2,
        head_dim: 8,
        dim_group: 2,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    a.open(1, shape).unwrap();
    assert!(matches!(a.open(1, shape), Err(CsdError::SequenceExists(1))));
    let q = [0u16; 31];
    let req = ArrayDecode {
        seq: 1,
        layer: 0,
        position: 0,
        q: &q,
        kv_new: None,
        approx: None,
        method: Method::Dense,
    };
    assert!(matches!(
        a.decode_batch(&[req]),
        Err(CsdError::Length { what: "q", .. })
    ));
    assert!(a.append(1, 0, 0, &[0; 15], &[0; 15]).is_err());
}

/// A batch with a bad request: each request gets its own result; the good
/// ones equal the same requests run without the bad one, on every device.
#[test]
fn each_request_of_a_batch_has_its_own_result() {
    let (s, d, kv) = (64, 16, 4);
    let (k, v) = structured_kv(5, kv, s, d);
    let (k, v) = (to_f16_bits(&k), to_f16_bits(&v));
    let q = to_f16_bits(&structured_query(5, kv, d, kv));
    let shape = SeqShape {
        layers: 2,
        kv_heads: kv as u8,
        group: 1,
        head_dim: d as u16,
        dim_group: 4,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let req = |layer: u16, position: u32| ArrayDecode {
        seq: 9,
        layer,
        position,
        q: &q,
        kv_new: None,
        approx: None,
        method: Method::Dense,
    };
    let mut outs = Vec::new();
    for with_bad in [false, true] {
        let mut a = array(2);
        a.open(9, shape).unwrap();
        for layer in 0..2 {
            a.append(9, layer, 0, &k, &v).unwrap();
        }
        let mut reqs = vec![req(0, s as u32 - 1)];
        if with_bad {
            // Position beyond the stored tokens: Position Mismatch.
            reqs.push(req(1, s as u32 + 5));
        }
        reqs.push(req(1, s as u32 - 1));
        let r = a.decode_batch_each(&reqs);
        assert_eq!(r.len(), reqs.len());
        if with_bad {
            let e = r[1].as_ref().unwrap_err();
            assert!(
                matches!(e, CsdError::Status { status, .. } if status.same_code(&proto::Status::POSITION_MISMATCH)),
                "{e}"
            );
            assert!(a.decode_batch(&reqs).is_err());
        }
        outs.push(
            r.into_iter()
                .filter_map(Result::ok)
                .map(|o| o.raw)
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(outs[0].len(), 2);
    assert_eq!(outs[0], outs[1]);
}
