//! A `CsdArray` of 4 devices returns exactly what one device returns:
//! heads are independent, so sharding them changes nothing but where they
//! run. Also with more devices than KV heads (one device sits idle).

use super::{Problem, device};
use attention::shape::Method;
use host_driver::array::{ArrayDecode, CsdArray};
use host_driver::transport::SimTransport;

fn array(n: usize) -> CsdArray<SimTransport> {
    CsdArray::new((0..n).map(|_| device(4096)).collect()).unwrap()
}

fn run(arr: &mut CsdArray<SimTransport>, p: &Problem, steps: usize) -> Vec<Vec<i32>> {
    let seq = 7;
    arr.open(seq, p.shape(2)).unwrap();
    // Prefill all but the last `steps` tokens, then decode the rest one by
    // one with APPEND_KV, alternating methods.
    let pre = p.s - steps;
    let cut = |x: &[u16], lo: usize, hi: usize| -> Vec<u16> {
        (0..p.kv_heads)
            .flat_map(|h| x[(h * p.s + lo) * p.d..(h * p.s + hi) * p.d].to_vec())
            .collect()
    };
    arr.append(seq, 0, 0, &cut(&p.k, 0, pre), &cut(&p.v, 0, pre))
        .unwrap();
    let mut outs = Vec::new();
    for i in 0..steps {
        let pos = pre + i;
        let (k, v) = (cut(&p.k, pos, pos + 1), cut(&p.v, pos, pos + 1));
        let method = if i % 2 == 1 {
            Method::Dense
        } else {
            p.sparf_eighth()
        };
        let req = ArrayDecode {
            seq,
            layer: 0,
            position: pos as u32,
            q: &p.q,
            kv_new: Some((&k, &v)),
            approx: None,
            method,
        };
        let out = arr.decode_batch(&[req]).unwrap();
        outs.push(out[0].raw.clone());
    }
    arr.close(seq).unwrap();
    outs
}

#[test]
fn four_devices_equal_one() {
    for (kv_heads, group) in [(6, 1), (3, 3)] {
        let p = Problem::structured(31, kv_heads, group, 700, 64);
        let one = run(&mut array(1), &p, 6);
        let four = run(&mut array(4), &p, 6);
        assert_eq!(one, four, "{kv_heads} KV heads × {group}");
        // The last step (dense, all 700 tokens) is the engine model's.
        assert_eq!(one.last().unwrap(), &p.engine(Method::Dense));
    }
}

#[test]
fn shards_cover_all_heads_once() {
    let mut arr = array(4);
    let p = Problem::structured(1, 3, 3, 10, 64);
    arr.open(1, p.shape(1)).unwrap();
    let ranges = arr.head_ranges(1).unwrap().to_vec();
    let mut covered: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
    covered.sort_unstable();
    assert_eq!(covered, vec![0, 1, 2]);
    assert!(ranges.iter().any(|r| r.is_empty()), "{ranges:?}");
}
