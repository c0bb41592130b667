//! Isolation between hosts of one NVMe/TCP target: several hosts (host
//! NQNs) run random scripts of sequence commands on the same sequence
//! ids, interleaved at random. Each host must see exactly what it would
//! see alone on a fresh board — the same status for every command and the
//! same bits from every decode — so no command reaches another host's
//! sequences, and nothing of a closed sequence is ever read again.

use std::time::Duration;

use host_driver::transport::{IoData, IoRequest, SimTransport, Transport};
use nvme_tcp::initiator::TcpOptions;
use nvme_tcp::{NvmeTcp, Target, TargetConfig, TcpUrl};
use proptest::prelude::*;
use proto::{DecodeFetch, DecodeFlags, DecodeSubmit, KvAppend, SeqClose, SeqOpen, SeqShape};

const SHAPE: SeqShape = SeqShape {
    layers: 1,
    kv_heads: 1,
    group: 2,
    head_dim: 64,
    dim_group: 1,
    rotated: false,
    placement: proto::Placement::TIME,
};

/// One step of a host's script, on sequence id `seq` (1 or 2).
#[derive(Clone, Copy, Debug)]
enum Op {
    Open(u32),
    /// Appends `n` tokens (data seeded by host, sequence and length).
    Append(u32, u32),
    /// Dense decode of the stored tokens (submit, then fetch).
    Decode(u32),
    Close(u32),
}

fn op() -> impl Strategy<Value = Op> {
    (0u8..4, 1u32..3, 1u32..40).prop_map(|(k, seq, n)| match k {
        0 => Op::Open(seq),
        1 => Op::Append(seq, n),
        2 => Op::Decode(seq),
        _ => Op::Close(seq),
    })
}

/// What a host saw: per command, its status field and any data read.
type Seen = Vec<(u16, Vec<u8>)>;

/// Replays one host's script step by step; `len` tracks its own idea of
/// each sequence's length (positions come from it, as a real host's do).
struct Host<T> {
    t: T,
    id: u64,
    len: [u32; 3],
    seen: Seen,
}

fn run<T: Transport>(t: &mut T, sqe: proto::Sqe, data: IoData) -> (u16, Vec<u8>) {
    t.submit(IoRequest { sqe, data }).expect("submit");
    let (_, r) = t.reap().expect("reap");
    // Data counts only when the command succeeded (a transport may hand
    // back the untouched buffer of a failed read).
    let ok = r.cqe.status().is_success();
    (r.cqe.status >> 1, if ok { r.data } else { Vec::new() })
}

impl<T: Transport> Host<T> {
    fn step(&mut self, op: Op) {
        let data = |seed: u64, n: usize| -> Vec<u8> {
            let mut r = attention::testdata::SplitMix64::new(seed);
            (0..n)
                .flat_map(|_| half::f16::from_f32(r.normal()).to_bits().to_le_bytes())
                .collect()
        };
        let d = usize::from(SHAPE.head_dim);
        match op {
            Op::Open(seq) => {
                let r = run(&mut self.t, SeqOpen::new(seq, SHAPE).to_sqe(), IoData::None);
                if r.0 == 0 {
                    self.len[seq as usize] = 0;
                }
                self.seen.push(r);
            }
            Op::Append(seq, n) => {
                let pos = self.len[seq as usize];
                let c = KvAppend::new(seq, 0, pos, n, &SHAPE).expect("append");
                let seed = self.id * 1000 + u64::from(seq) * 100 + u64::from(pos);
                let r = run(
                    &mut self.t,
                    c.to_sqe(),
                    IoData::ToDevice(data(seed, 2 * n as usize * d)),
                );
                if r.0 == 0 {
                    self.len[seq as usize] += n;
                }
                self.seen.push(r);
            }
            Op::Decode(seq) => {
                // The query of the last stored token.
                let pos = self.len[seq as usize].saturating_sub(1);
                let c = DecodeSubmit::dense(seq, 0, pos, DecodeFlags::default(), &SHAPE);
                let q = data(self.id * 7 + u64::from(pos), usize::from(SHAPE.group) * d);
                let r = run(&mut self.t, c.to_sqe(), IoData::ToDevice(q));
                self.seen.push(r);
                let f = DecodeFetch::new(seq, 0, &SHAPE);
                let n = DecodeFetch::payload_bytes(&SHAPE) as usize;
                let r = run(&mut self.t, f.to_sqe(), IoData::FromDevice(n));
                self.seen.push(r);
            }
            Op::Close(seq) => {
                let r = run(&mut self.t, SeqClose { seq }.to_sqe(), IoData::None);
                self.seen.push(r);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn hosts_never_see_each_others_sequences(
        scripts in proptest::collection::vec(proptest::collection::vec(op(), 1..14), 3),
        order in proptest::collection::vec(0usize..3, 60),
    ) {
        let target = Target::bind(TargetConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            page_size: 4096,
            namespace_bytes: 1 << 20,
            log: false,
            ..TargetConfig::default()
        })
        .unwrap()
        .spawn()
        .unwrap();
        let url = TcpUrl::parse(&target.url()).unwrap();
        let mut hosts: Vec<Host<NvmeTcp>> = (0..3)
            .map(|i| {
                let o = TcpOptions {
                    hostnqn: format!("nqn.2026-11.io.instinfer:host-{i}"),
                    timeout: Duration::from_secs(20),
                    ..TcpOptions::default()
                };
                Host { t: NvmeTcp::connect_with(&url, &o).unwrap(), id: i, len: [0; 3], seen: Vec::new() }
            })
            .collect();
        // Interleave: each entry of `order` runs that host's next step.
        let mut next = [0usize; 3];
        for &h in order.iter().chain([0, 1, 2].iter().cycle().take(45)) {
            if let Some(&op) = scripts[h].get(next[h]) {
                hosts[h].step(op);
                next[h] += 1;
            }
        }
        for (i, script) in scripts.iter().enumerate() {
            prop_assert_eq!(next[i], script.len());
            let mut alone = Host {
                t: SimTransport::new(4096).unwrap(),
                id: i as u64,
                len: [0; 3],
                seen: Vec::new(),
            };
            for &op in script {
                alone.step(op);
            }
            prop_assert_eq!(&hosts[i].seen, &alone.seen, "host {} script {:?}", i, script);
        }
    }
}

/// A closed sequence's tokens never come back: after a close and a reopen
/// of the same id (on the same board, where the pages are reused), a
/// decode sees only what was appended since, bit for bit what a board that
/// never held the old sequence returns.
#[test]
fn closed_sequences_are_never_read_again() {
    let mut used = Host {
        t: SimTransport::new(4096).unwrap(),
        id: 1,
        len: [0; 3],
        seen: Vec::new(),
    };
    for op in [
        Op::Open(1),
        Op::Append(1, 39),
        Op::Append(1, 39),
        Op::Append(1, 39),
        Op::Close(1),
    ] {
        used.step(op);
    }
    used.seen.clear();
    let mut fresh = Host {
        t: SimTransport::new(4096).unwrap(),
        id: 1,
        len: [0; 3],
        seen: Vec::new(),
    };
    let after = [
        Op::Decode(1),
        Op::Open(1),
        Op::Decode(1),
        Op::Append(1, 5),
        Op::Decode(1),
    ];
    for op in after {
        used.step(op);
        fresh.step(op);
    }
    assert_eq!(used.seen, fresh.seen);
    // The decode before the reopen found no sequence; the last one ran.
    assert_ne!(used.seen[0].0, 0);
    let last = used.seen.last().unwrap();
    assert_eq!(last.0, 0);
    assert!(last.1.iter().any(|&b| b != 0));
}
