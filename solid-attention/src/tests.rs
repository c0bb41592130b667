//! Tests of the SSD KV store and its backend: exact read-back across
//! flushes, reopen and block boundaries; bad files; the scheduler giving
//! bit for bit what the in-DRAM path gives, with and without prefetch.

use std::path::PathBuf;

use attention::reference;
use attention::shape::{BlockParams, GroupShape, Method};
use attention::testdata::SplitMix64;

use super::*;
use host_driver::backend::{AttentionBackend, BackendError, DecodeStep, ModelShape, round_f16};

const SHAPE: ModelShape = ModelShape {
    layers: 2,
    q_heads: 6,
    kv_heads: 2,
    head_dim: 32,
};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("instinfer-solid-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn draw(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.normal()).collect()
}

/// `n` tokens `[kv_heads][n][d]` of K and V.
fn tokens(rng: &mut SplitMix64, n: usize) -> (Vec<f32>, Vec<f32>) {
    let e = SHAPE.kv_heads * n * SHAPE.head_dim;
    (draw(rng, e), draw(rng, e))
}

/// Every token of (slot, layer, head) read back from the store: `[s][2d]`
/// f32 (K then V), full blocks from the medium, the tail from DRAM.
fn read_all(st: &mut KvStore, slot: usize, layer: usize, head: usize) -> Vec<f32> {
    let (s, block, d) = (st.len(slot, layer), st.layout().block, SHAPE.head_dim);
    let mut out = Vec::new();
    for b in 0..st.full_blocks(slot, layer) {
        let bytes = st.read_block_sync((slot, layer, head, b)).unwrap();
        out.extend((0..block * 2 * d).map(|i| store::f16_at(&bytes, i)));
    }
    if let Some((tb, t)) = st.tail(slot, layer, head)
        && tb == st.full_blocks(slot, layer)
    {
        out.extend((0..t.len() / 2).map(|i| store::f16_at(t, i)));
    }
    assert_eq!(out.len(), s * 2 * d);
    out
}

/// What the store must return: the appended tokens, fp16, interleaved.
fn expected(hist: &[(Vec<f32>, Vec<f32>)], head: usize) -> Vec<f32> {
    let d = SHAPE.head_dim;
    let mut out = Vec::new();
    for (k, v) in hist {
        let n = k.len() / (SHAPE.kv_heads * d);
        for t in 0..n {
            let at = (head * n + t) * d;
            out.extend(k[at..at + d].iter().map(|&x| round_f16(x)));
            out.extend(v[at..at + d].iter().map(|&x| round_f16(x)));
        }
    }
    out
}

#[test]
fn the_store_returns_what_was_written_across_flushes_and_reopen() {
    let path = dir("store").join("model.kv");
    let layout = Layout::new(SHAPE, 32, 256, 2).unwrap();
    let mut st = KvStore::create(&path, layout, 4).unwrap();
    let slot = st.open_seq(5, SHAPE).unwrap();
    let mut rng = SplitMix64::new(11);
    let mut hist: Vec<Vec<(Vec<f32>, Vec<f32>)>> = vec![Vec::new(); 2];
    // 45 tokens (a block and a bit), then single tokens across a boundary.
    for (layer, h) in hist.iter_mut().enumerate() {
        let kv = tokens(&mut rng, 45);
        st.append(slot, layer, &kv.0, &kv.1).unwrap();
        h.push(kv);
        for _ in 0..30 {
            let kv = tokens(&mut rng, 1);
            st.append(slot, layer, &kv.0, &kv.1).unwrap();
            h.push(kv);
        }
    }
    let check = |st: &mut KvStore, slot: usize, hist: &[Vec<(Vec<f32>, Vec<f32>)>]| {
        for (layer, h) in hist.iter().enumerate() {
            for head in 0..SHAPE.kv_heads {
                assert_eq!(
                    read_all(st, slot, layer, head),
                    expected(h, head),
                    "layer {layer} head {head}"
                );
            }
        }
    };
    check(&mut st, slot, &hist);
    st.flush().unwrap();
    check(&mut st, slot, &hist);
    assert!(st.stats.bytes_written > 0);
    drop(st);
    // A new process: reopen, read back, keep appending.
    let mut st = KvStore::open(&path, 4).unwrap();
    assert_eq!(st.sequences(), vec![5]);
    let slot = st.slot_of(5).unwrap();
    assert_eq!(st.len(slot, 0), 75);
    check(&mut st, slot, &hist);
    for (layer, h) in hist.iter_mut().enumerate() {
        let kv = tokens(&mut rng, 40);
        st.append(slot, layer, &kv.0, &kv.1).unwrap();
        h.push(kv);
    }
    check(&mut st, slot, &hist);
    st.flush().unwrap();
    drop(st);
    let mut st = KvStore::open(&path, 4).unwrap();
    check(&mut st, slot, &hist);
    // Beyond the capacity: refused, nothing stored.
    let kv = tokens(&mut rng, 200);
    assert!(matches!(
        st.append(slot, 0, &kv.0, &kv.1),
        Err(BackendError::Storage(_))
    ));
    assert_eq!(st.len(slot, 0), 115);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn wrong_or_truncated_files_are_clear_errors() {
    let d = dir("bad");
    let junk = d.join("junk.kv");
    std::fs::write(&junk, vec![7u8; 8192]).unwrap();
    let e = KvStore::open(&junk, 4).unwrap_err().to_string();
    assert!(e.contains("not a valid KV store"), "{e}");
    let empty = d.join("empty.kv");
    std::fs::write(&empty, b"").unwrap();
    assert!(KvStore::open(&empty, 4).is_err());
    assert!(KvStore::open(&d.join("missing.kv"), 4).is_err());

    let path = d.join("cut.kv");
    let mut st = KvStore::create(&path, Layout::new(SHAPE, 32, 128, 1).unwrap(), 4).unwrap();
    st.open_seq(1, SHAPE).unwrap();
    st.flush().unwrap();
    drop(st);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(20_000).unwrap();
    let e = KvStore::open(&path, 4).unwrap_err().to_string();
    assert!(e.contains("truncated"), "{e}");
    // A damaged header.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[60] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let e = KvStore::open(&path, 4).unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
    // A store of another model.
    let mut st = KvStore::create(&path, Layout::new(SHAPE, 32, 128, 1).unwrap(), 4).unwrap();
    let other = ModelShape {
        head_dim: 64,
        ..SHAPE
    };
    assert!(matches!(st.open_seq(1, other), Err(BackendError::Shape(_))));
    st.open_seq(1, SHAPE).unwrap();
    assert!(st.open_seq(2, SHAPE).is_err(), "one slot only");
    std::fs::remove_dir_all(&d).unwrap();
}

fn opts(prefetch: Prefetch, budget: Budget, max_blocks: usize) -> SolidOptions {
    SolidOptions {
        prefetch,
        budget,
        max_blocks,
        merge_gap: 0,
    }
}

fn ssd(name: &str, o: SolidOptions) -> SolidBackend {
    let layout = Layout::new(SHAPE, 32, 1024, 2).unwrap();
    let slots = SolidBackend::read_slots_for(o, SHAPE.kv_heads);
    let st = KvStore::create(&dir(name).join("kv"), layout, slots).unwrap();
    SolidBackend::new(st, o).unwrap()
}

fn dram(o: SolidOptions) -> SolidBackend {
    SolidBackend::new(KvStore::dram(Layout::new(SHAPE, 32, 1024, 2).unwrap()), o).unwrap()
}

/// Prefill 300 tokens per layer, then `steps` decode steps over both
/// layers; the outputs in order.
fn drive(b: &mut dyn AttentionBackend, method: Method, steps: usize) -> Vec<Vec<f32>> {
    let mut rng = SplitMix64::new(3);
    b.open(9, SHAPE).unwrap();
    for layer in 0..SHAPE.layers {
        let (k, v) = tokens(&mut rng, 300);
        b.append(9, layer, &k, &v).unwrap();
    }
    let mut outs = Vec::new();
    for _ in 0..steps {
        for layer in 0..SHAPE.layers {
            let q = draw(&mut rng, SHAPE.q_heads * SHAPE.head_dim);
            let (k, v) = tokens(&mut rng, 1);
            let step = DecodeStep {
                seq: 9,
                layer,
                q: &q,
                kv_new: Some((&k, &v)),
                method,
            };
            outs.push(b.decode(&[step]).unwrap().remove(0));
        }
    }
    outs
}

#[test]
fn ssd_with_and_without_prefetch_equals_dram_bit_for_bit() {
    let m = Method::Block(BlockParams {
        block: 32,
        budget: 128,
    });
    let steps = 70; // crosses two block boundaries
    let want = drive(&mut dram(opts(Prefetch::Off, Budget::Method, 8)), m, steps);
    for (name, p, gap) in [
        ("off", Prefetch::Off, 0),
        ("ahead1", Prefetch::Ahead(1), 0),
        ("ahead2", Prefetch::Ahead(2), 0),
        ("off-gap2", Prefetch::Off, 2),
        ("ahead1-gap2", Prefetch::Ahead(1), 2),
    ] {
        let o = SolidOptions {
            merge_gap: gap,
            ..opts(p, Budget::Method, if gap > 0 { 12 } else { 8 })
        };
        let mut b = ssd(name, o);
        let got = drive(&mut b, m, steps);
        assert!(got == want, "{name}: outputs differ from DRAM");
        let t = b.stats.total();
        assert_eq!(t.steps, (steps * SHAPE.layers) as u64);
        assert_eq!(t.hits + t.misses, t.needed);
        if p == Prefetch::Off {
            assert_eq!((t.prefetched, t.hits), (0, 0), "{name}");
        } else {
            // Random queries: the sinks and local blocks hit, the scored
            // blocks only by chance.
            assert!(t.hit_rate() > 0.3, "{name}: hit rate {}", t.hit_rate());
            assert!(t.hits_dynamic <= t.needed_dynamic && t.needed_dynamic < t.needed);
            assert!(t.prefetched > 0);
        }
        assert!(b.store().stats.bytes_read > 0);
        assert!(b.last_read_fraction().unwrap() < 0.5);
        b.close(9).unwrap();
    }
}

#[test]
fn a_budget_covering_the_context_is_dense() {
    let big = opts(Prefetch::Ahead(1), Budget::Tokens(4096), 16);
    let m = Method::Block(BlockParams::default_for(100));
    let sparse = drive(&mut ssd("big", big), m, 3);
    let dense = drive(&mut ssd("dense", big), Method::Dense, 3);
    assert!(sparse == dense);
    // And dense is the f64 reference on the fp16 values, within f32 error.
    let mut rng = SplitMix64::new(3);
    let mut k: Vec<Vec<f32>> = vec![Vec::new(); SHAPE.kv_heads];
    let mut v = k.clone();
    let d = SHAPE.head_dim;
    let push = |k: &mut Vec<Vec<f32>>, v: &mut Vec<Vec<f32>>, kk: &[f32], vv: &[f32], n: usize| {
        for h in 0..SHAPE.kv_heads {
            k[h].extend(kk[h * n * d..(h + 1) * n * d].iter().map(|&x| round_f16(x)));
            v[h].extend(vv[h * n * d..(h + 1) * n * d].iter().map(|&x| round_f16(x)));
        }
    };
    let (k0, v0) = tokens(&mut rng, 300);
    let (_k1, _v1) = tokens(&mut rng, 300); // layer 1's prefill
    push(&mut k, &mut v, &k0, &v0, 300);
    let q = draw(&mut rng, SHAPE.q_heads * d);
    let (kn, vn) = tokens(&mut rng, 1);
    push(&mut k, &mut v, &kn, &vn, 1);
    let g = SHAPE.group();
    for h in 0..SHAPE.kv_heads {
        let want = reference::dense(
            &q[h * g * d..(h + 1) * g * d],
            &k[h],
            &v[h],
            GroupShape {
                group: g,
                head_dim: d,
            },
        )
        .unwrap();
        let got = &dense[0][h * g * d..(h + 1) * g * d];
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-4, "head {h}: {err}");
    }
}

#[test]
fn block_selection_matches_the_reference() {
    // Same history as `drive`, first step of layer 0, block-sparse with a
    // small budget: the store's representatives (from fp16 keys) choose
    // what the reference chooses on the same fp16 keys.
    let p = BlockParams {
        block: 32,
        budget: 96,
    };
    let got = drive(
        &mut dram(opts(Prefetch::Off, Budget::Method, 8)),
        Method::Block(p),
        1,
    );
    let mut rng = SplitMix64::new(3);
    let d = SHAPE.head_dim;
    let (k0, v0) = tokens(&mut rng, 300);
    let _ = tokens(&mut rng, 300);
    let q = draw(&mut rng, SHAPE.q_heads * d);
    let (kn, vn) = tokens(&mut rng, 1);
    let g = SHAPE.group();
    for h in 0..SHAPE.kv_heads {
        let mut k: Vec<f32> = k0[h * 300 * d..(h + 1) * 300 * d].to_vec();
        k.extend_from_slice(&kn[h * d..(h + 1) * d]);
        let mut v: Vec<f32> = v0[h * 300 * d..(h + 1) * 300 * d].to_vec();
        v.extend_from_slice(&vn[h * d..(h + 1) * d]);
        let (k, v): (Vec<f32>, Vec<f32>) = (
            k.iter().map(|&x| round_f16(x)).collect(),
            v.iter().map(|&x| round_f16(x)).collect(),
        );
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let want =
            reference::block_sparse(&q[h * g * d..(h + 1) * g * d], &k, &v, shape, p).unwrap();
        let out = &got[0][h * g * d..(h + 1) * g * d];
        let err = out
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-4, "head {h}: {err}");
    }
}

#[test]
fn a_reopened_store_resumes_the_sequence() {
    let m = Method::Block(BlockParams {
        block: 32,
        budget: 96,
    });
    let o = opts(Prefetch::Ahead(1), Budget::Method, 8);
    let path = dir("resume").join("kv");
    let layout = Layout::new(SHAPE, 32, 1024, 1).unwrap();
    let mut rng = SplitMix64::new(21);
    let prefill: Vec<(Vec<f32>, Vec<f32>)> =
        (0..SHAPE.layers).map(|_| tokens(&mut rng, 250)).collect();
    let q = draw(&mut rng, SHAPE.q_heads * SHAPE.head_dim);
    let (kn, vn) = tokens(&mut rng, 1);
    let step = DecodeStep {
        seq: 4,
        layer: 1,
        q: &q,
        kv_new: Some((&kn, &vn)),
        method: m,
    };
    let mut mem = dram(o);
    mem.open(4, SHAPE).unwrap();
    for (l, (k, v)) in prefill.iter().enumerate() {
        mem.append(4, l, k, v).unwrap();
    }
    let want = mem.decode(&[step]).unwrap();
    {
        let slots = SolidBackend::read_slots_for(o, SHAPE.kv_heads);
        let mut b = SolidBackend::new(KvStore::create(&path, layout, slots).unwrap(), o).unwrap();
        b.open(4, SHAPE).unwrap();
        for (l, (k, v)) in prefill.iter().enumerate() {
            b.append(4, l, k, v).unwrap();
        }
        b.store_mut().flush().unwrap();
    }
    let slots = SolidBackend::read_slots_for(o, SHAPE.kv_heads);
    let mut b = SolidBackend::new(KvStore::open(&path, slots).unwrap(), o).unwrap();
    b.resume(4, SHAPE).unwrap();
    assert_eq!(b.decode(&[step]).unwrap(), want);
    assert!(b.resume(5, SHAPE).is_err());
}

#[test]
fn other_methods_and_short_buffers_are_refused() {
    let mut b = dram(opts(Prefetch::Off, Budget::Method, 8));
    b.open(1, SHAPE).unwrap();
    let mut rng = SplitMix64::new(1);
    let (k, v) = tokens(&mut rng, 40);
    b.append(1, 0, &k, &v).unwrap();
    let q = draw(&mut rng, SHAPE.q_heads * SHAPE.head_dim);
    let step = |method| DecodeStep {
        seq: 1,
        layer: 0,
        q: &q,
        kv_new: None,
        method,
    };
    assert!(b.decode(&[step(Method::Local { window: 8 })]).is_err());
    assert!(b.decode(&[step(Method::Dense)]).is_ok());
    // Dense over 10 blocks with room for 8 per head.
    let mut s = ssd("short", opts(Prefetch::Off, Budget::Method, 8));
    s.open(1, SHAPE).unwrap();
    let (k, v) = tokens(&mut rng, 320);
    s.append(1, 0, &k, &v).unwrap();
    let e = s.decode(&[step(Method::Dense)]).unwrap_err().to_string();
    assert!(e.contains("read buffer"), "{e}");
}
