//! The recorded workload: the host driver's [`Csd`] on the simulated board
//! (through the [`Recorder`]) — identify, three sequences of different
//! shapes, prompts appended to every layer, dense and SparF decodes with
//! and without APPEND_KV, several decodes in flight, a close and re-open —
//! and then malformed commands that must get error statuses (bad fields,
//! bad positions, unsupported method, misaligned PRP, DMA to unmapped host
//! memory, including a fetch that fails half-way and is retried).

use attention::engine::f32_to_f16_bits;
use attention::shape::{Method, SparseParams};
use attention::testdata::{structured_kv, structured_query};
use host_driver::csd::{Csd, CsdError, Ticket};
use host_driver::transport::{IoData, IoRequest, Transport};
use proto::prp::PrpPair;
use proto::{
    DecodeFetch, DecodeFlags, DecodeSubmit, KvAppend, Method as WireMethod, Opcode, SeqClose,
    SeqOpen, SeqShape, Sqe, StatsLog, Status,
};

use super::recorder::{Prps, Recorder};
use super::vectors::Section;

/// What one device's workload left behind.
#[derive(Debug)]
pub struct Recorded {
    pub section: Section,
    /// The board's statistics log after the last command.
    pub stats: StatsLog,
}

struct Seq {
    id: u32,
    shape: SeqShape,
    method: Method,
}

impl Seq {
    fn q_heads(&self) -> usize {
        self.shape.query_heads() as usize
    }

    fn d(&self) -> usize {
        usize::from(self.shape.head_dim)
    }

    fn kv(&self) -> usize {
        usize::from(self.shape.kv_heads)
    }
}

fn bits(x: &[f32]) -> Vec<u16> {
    x.iter().map(|&f| f32_to_f16_bits(f)).collect()
}

fn shape(layers: u16, kv_heads: u8, group: u8, head_dim: u16, dim_group: u8) -> SeqShape {
    SeqShape {
        layers,
        kv_heads,
        group,
        head_dim,
        dim_group,
        rotated: false,
        placement: proto::Placement::TIME,
    }
}

fn sparf(r: usize, k: usize, local: usize) -> Method {
    Method::SparF(SparseParams { r, k, local })
}

/// K and V `[kv_heads][n][d]` for (seq, layer, salt).
fn kv(s: &Seq, layer: u16, salt: u64, n: usize) -> (Vec<u16>, Vec<u16>) {
    let seed = u64::from(s.id) * 1000 + u64::from(layer) * 10 + salt;
    let (k, v) = structured_kv(seed, s.kv(), n, s.d());
    (bits(&k), bits(&v))
}

fn query(s: &Seq, layer: u16, salt: u64) -> Vec<u16> {
    let seed = u64::from(s.id) * 1000 + u64::from(layer) * 10;
    bits(&structured_query(seed + salt, s.q_heads(), s.d(), s.kv()))
}

fn open_and_prompt(csd: &mut Csd<Recorder>, s: &Seq, prompt: usize) -> Result<(), CsdError> {
    csd.open(s.id, s.shape)?;
    for layer in 0..s.shape.layers {
        let (k, v) = kv(s, layer, 0, prompt);
        csd.append(s.id, layer, 0, &k, &v)?;
    }
    Ok(())
}

/// One decode step of every layer of `seqs` (appending a token each), all
/// in flight before any is fetched.
fn step(
    csd: &mut Csd<Recorder>,
    seqs: &[&Seq],
    len: &mut [u32],
    salt: u64,
) -> Result<(), CsdError> {
    let mut tickets: Vec<Ticket> = Vec::new();
    for (s, len) in seqs.iter().zip(len.iter()) {
        for layer in 0..s.shape.layers {
            let (k, v) = kv(s, layer, 100 + salt, 1);
            let q = query(s, layer, salt);
            tickets.push(csd.submit_decode(s.id, layer, *len, &q, Some((&k, &v)), s.method)?);
        }
    }
    let outs = csd.fetch_many(tickets)?;
    let mut i = 0;
    for (s, len) in seqs.iter().zip(len.iter_mut()) {
        *len += 1;
        for _ in 0..s.shape.layers {
            let o = &outs[i];
            assert_eq!(o.out.len(), s.q_heads() * s.d());
            assert_eq!(o.report.tokens_attended, *len, "seq {}", s.id);
            i += 1;
        }
    }
    Ok(())
}

fn raw(csd: &mut Csd<Recorder>, qid: u16, sqe: Sqe, data: IoData) -> (Status, u32) {
    let t = csd.transport_mut();
    let res = if qid == 0 {
        t.admin(IoRequest { sqe, data })
    } else {
        t.raw(qid, sqe, &data, Prps::Auto)
    }
    .expect("the board answers");
    (res.cqe.status(), res.cqe.dw0)
}

fn given(csd: &mut Csd<Recorder>, qid: u16, sqe: Sqe, pair: PrpPair, pages: Vec<u64>) -> Status {
    let res = csd
        .transport_mut()
        .raw(qid, sqe, &IoData::None, Prps::Given { pair, pages })
        .expect("the board answers");
    res.cqe.status()
}

/// Runs the workload on a board with `page_size` pages.
pub fn record(page_size: u32) -> Result<Recorded, CsdError> {
    let mut csd = Csd::new(Recorder::new(page_size)?)?;
    assert_eq!(csd.info().caps.page_size, page_size);
    let a = Seq {
        id: 1,
        shape: shape(2, 2, 2, 64, 4),
        method: Method::Dense,
    };
    let b = Seq {
        id: 2,
        shape: shape(1, 1, 4, 128, 8),
        method: sparf(32, 12, 4),
    };
    let c = Seq {
        id: 7,
        shape: shape(2, 3, 1, 32, 2),
        method: sparf(8, 6, 2),
    };
    let prompts = [40, 70, 33];
    for (s, n) in [&a, &b, &c].into_iter().zip(prompts) {
        open_and_prompt(&mut csd, s, n)?;
    }
    let mut len = prompts.map(|n| n as u32);
    for salt in 0..3 {
        step(&mut csd, &[&a, &b, &c], &mut len, salt)?;
    }

    // SparF without APPEND_KV: the query of the last stored token.
    let q = query(&b, 0, 9);
    let t = csd.submit_decode(b.id, 0, len[1] - 1, &q, None, b.method)?;
    assert_eq!(csd.fetch(t)?.report.tokens_attended, len[1]);

    // Close a sequence and open its id again with another shape.
    csd.close(c.id)?;
    let c2 = Seq {
        id: c.id,
        shape: shape(1, 1, 2, 64, 4),
        method: Method::Dense,
    };
    open_and_prompt(&mut csd, &c2, 5)?;
    let mut len_c2 = [5];
    step(&mut csd, &[&c2], &mut len_c2, 7)?;

    malformed(&mut csd, &a, &b, len[0], len[1])?;

    // The device keeps serving after all of them.
    step(&mut csd, &[&a], &mut [len[0]], 11)?;

    let stats = csd.transport().device().device().stats();
    let section = csd.transport().section().clone();
    Ok(Recorded { section, stats })
}

/// Commands that must fail, each with its status.
fn malformed(
    csd: &mut Csd<Recorder>,
    a: &Seq,
    b: &Seq,
    len_a: u32,
    len_b: u32,
) -> Result<(), CsdError> {
    let io = 1;
    let mut s = Sqe::new(Opcode(0x99));
    s.nsid = proto::vendor::VENDOR_NSID;
    assert!(
        !raw(csd, io, s, IoData::None).0.is_success(),
        "unknown I/O opcode"
    );

    let mut s = SeqOpen::new(9, a.shape).to_sqe();
    s.cdw13 |= 1 << 30;
    assert_eq!(raw(csd, io, s, IoData::None).0, Status::INVALID_FIELD);
    let s = SeqOpen::new(a.id, a.shape).to_sqe();
    assert_eq!(raw(csd, io, s, IoData::None).0, Status::SEQ_EXISTS);
    let s = SeqClose { seq: 77 }.to_sqe();
    assert_eq!(raw(csd, io, s, IoData::None).0, Status::SEQ_NOT_OPEN);

    // A gap in positions: the status and, in DW0, the layer's length.
    let cmd = KvAppend::new(a.id, 0, 0, 2, &a.shape)?;
    let (k, v) = kv(a, 0, 50, 2);
    let data: Vec<u8> = k.iter().chain(&v).flat_map(|x| x.to_le_bytes()).collect();
    let got = raw(csd, io, cmd.to_sqe(), IoData::ToDevice(data.clone()));
    assert_eq!(got, (Status::POSITION_MISMATCH, len_a));

    // Nothing to fetch: the last result of this layer was fetched.
    let fetch = DecodeFetch::new(a.id, 1, &a.shape);
    let n = DecodeFetch::payload_bytes(&a.shape) as usize;
    assert_eq!(
        raw(csd, io, fetch.to_sqe(), IoData::FromDevice(n)).0,
        Status::RESULT_NOT_READY
    );

    let mut s = DecodeSubmit::dense(a.id, 0, len_a - 1, DecodeFlags::NONE, &a.shape).to_sqe();
    s.cdw12 |= u32::from(WireMethod(5).0) << 16;
    let q: Vec<u8> = query(a, 0, 0)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert!(
        !raw(csd, io, s, IoData::ToDevice(q)).0.is_success(),
        "unknown method"
    );

    let mut s = proto::identify_controller();
    s.cdw10 = 0;
    assert_eq!(
        raw(csd, 0, s, IoData::FromDevice(4096)).0,
        Status::INVALID_FIELD
    );
    let s = Sqe::new(Opcode(0x7E));
    assert_eq!(raw(csd, 0, s, IoData::None).0, Status::INVALID_OPCODE);

    // PRP1 not dword aligned.
    let p = csd.transport_mut().alloc_pages(1)[0];
    csd.transport_mut().write(p, &data)?;
    let cmd = KvAppend::new(a.id, 0, len_a, 2, &a.shape)?;
    let pair = PrpPair {
        prp1: p + 2,
        prp2: 0,
    };
    assert_eq!(
        given(csd, io, cmd.to_sqe(), pair, vec![p]),
        Status::PRP_OFFSET_INVALID
    );

    // Identify into unmapped memory.
    let pair = PrpPair {
        prp1: 0x40_0000_0000,
        prp2: 0,
    };
    let st = given(csd, 0, proto::identify_controller(), pair, vec![]);
    assert_eq!(st, Status::DATA_TRANSFER_ERROR);

    // A PRP list pointer to unmapped memory (the page after `p` is a gap).
    let cmd = KvAppend::new(a.id, 0, len_a, 20, &a.shape)?;
    let pair = PrpPair {
        prp1: p,
        prp2: p + 4096,
    };
    let st = given(csd, io, cmd.to_sqe(), pair, vec![p, p + 4096]);
    assert_eq!(st, Status::DATA_TRANSFER_ERROR);

    // A fetch whose second page is unmapped: the first part is written, the
    // command fails, the result stays and a retry gets it.
    let q = query(b, 0, 21);
    let t = csd.submit_decode(b.id, 0, len_b - 1, &q, None, b.method)?;
    let fetch = DecodeFetch::new(b.id, 0, &b.shape);
    let p = csd.transport_mut().alloc_pages(1)[0];
    let pair = PrpPair {
        prp1: p + 3072,
        prp2: p + 4096,
    };
    let st = given(csd, io, fetch.to_sqe(), pair, vec![p, p + 4096]);
    assert_eq!(st, Status::DATA_TRANSFER_ERROR);
    assert_eq!(csd.fetch(t)?.report.tokens_attended, len_b);
    Ok(())
}
