//! A 256-step decode loop over 8 interleaved sequences: every step appends
//! the new token (APPEND_KV) and attends, alternating dense and SparF; each
//! output equals the engine model on the host's copy of the KV.

use super::device;
use attention::engine;
use attention::shape::{Method, SparseParams};
use attention::testdata::SplitMix64;
use host_driver::csd::Ticket;
use proto::SeqShape;

const SEQS: usize = 8;
const STEPS: usize = 256;
const KV_HEADS: usize = 3;
const GROUP: usize = 3;
const D: usize = 64;
const LAYERS: usize = 2;

struct Host {
    /// `[layer][kv_head]` → token rows.
    k: Vec<Vec<Vec<u16>>>,
    v: Vec<Vec<Vec<u16>>>,
}

fn sample(rng: &mut SplitMix64, n: usize, scale: f32) -> Vec<u16> {
    (0..n)
        .map(|_| engine::f32_to_f16_bits(rng.normal() * scale))
        .collect()
}

impl Host {
    fn new() -> Self {
        Self {
            k: vec![vec![Vec::new(); KV_HEADS]; LAYERS],
            v: vec![vec![Vec::new(); KV_HEADS]; LAYERS],
        }
    }

    fn push(&mut self, layer: usize, k: &[u16], v: &[u16]) {
        let n = k.len() / (KV_HEADS * D);
        for h in 0..KV_HEADS {
            self.k[layer][h].extend_from_slice(&k[h * n * D..(h + 1) * n * D]);
            self.v[layer][h].extend_from_slice(&v[h * n * D..(h + 1) * n * D]);
        }
    }

    fn expected(&self, layer: usize, q: &[u16], method: Method) -> Vec<i32> {
        let k: Vec<u16> = self.k[layer].concat();
        let v: Vec<u16> = self.v[layer].concat();
        let s = self.k[layer][0].len() / D;
        engine::attend_heads(method, q, &k, &v, KV_HEADS * GROUP, KV_HEADS, s, D).unwrap()
    }
}

#[test]
fn interleaved_sequences_match_the_engine_every_step() {
    let mut dev = device(4096);
    let mut rng = SplitMix64::new(2024);
    let shape = SeqShape {
        layers: LAYERS as u16,
        kv_heads: KV_HEADS as u8,
        group: GROUP as u8,
        head_dim: D as u16,
        dim_group: 2,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let mut hosts: Vec<Host> = (0..SEQS).map(|_| Host::new()).collect();
    // Different prompt lengths so the sequences cross page boundaries at
    // different steps (32 tokens per 4 KiB page at d = 64).
    for (i, host) in hosts.iter_mut().enumerate() {
        let seq = i as u32;
        dev.open(seq, shape).unwrap();
        let prompt = 5 + 13 * i;
        for layer in 0..LAYERS {
            let k = sample(&mut rng, KV_HEADS * prompt * D, 1.0);
            let v = sample(&mut rng, KV_HEADS * prompt * D, 1.0);
            dev.append(seq, layer as u16, 0, &k, &v).unwrap();
            host.push(layer, &k, &v);
        }
    }
    let mut checked = 0;
    for step in 0..STEPS {
        let method = if step % 2 == 0 {
            Method::Dense
        } else {
            Method::SparF(SparseParams {
                r: D / 8,
                k: 24,
                local: 4,
            })
        };
        // Submit every (sequence, layer) first, then fetch: the pipelined
        // submit/fetch pattern of a real decode step.
        let mut inflight: Vec<(Ticket, usize, usize, Vec<u16>)> = Vec::new();
        for (i, host) in hosts.iter_mut().enumerate() {
            for layer in 0..LAYERS {
                let q = sample(&mut rng, KV_HEADS * GROUP * D, 1.0);
                let k = sample(&mut rng, KV_HEADS * D, 1.0);
                let v = sample(&mut rng, KV_HEADS * D, 1.0);
                let pos = host.k[layer][0].len() / D;
                let t = dev
                    .submit_decode(
                        i as u32,
                        layer as u16,
                        pos as u32,
                        &q,
                        Some((&k, &v)),
                        method,
                    )
                    .unwrap();
                host.push(layer, &k, &v);
                inflight.push((t, i, layer, q));
            }
        }
        for (t, i, layer, q) in inflight {
            let out = dev.fetch(t).unwrap();
            assert_eq!(
                out.raw,
                hosts[i].expected(layer, &q, method),
                "step {step} seq {i} layer {layer}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, STEPS * SEQS * LAYERS);
    let stats = dev.stats().unwrap();
    assert_eq!(stats.decodes, (STEPS * SEQS * LAYERS) as u64);
    for i in 0..SEQS {
        dev.close(i as u32).unwrap();
    }
    assert_eq!(dev.stats().unwrap().open_sequences, 0);
}
