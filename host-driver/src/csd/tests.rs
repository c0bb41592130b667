use std::collections::VecDeque;

use attention::shape::SparseParams;
use attention::testdata::{structured_kv, structured_query};
use proto::{CapabilityBlock, Cqe, IdentifyController, Opcode, Status};

use super::*;
use crate::backend::to_f16_bits;
use crate::transport::{SimTransport, TransportError};

fn sim() -> Csd<SimTransport> {
    Csd::new(SimTransport::new(4096).unwrap()).unwrap()
}

fn shape(kv: u8, group: u8, d: u16, layers: u16) -> SeqShape {
    SeqShape {
        layers,
        kv_heads: kv,
        group,
        head_dim: d,
        dim_group: 2,
        rotated: false,
        placement: proto::Placement::TIME,
    }
}

/// Structured fp16 K, V `[kv][s][d]` and q `[kv·group][d]`.
fn data(seed: u64, kv: usize, group: usize, s: usize, d: usize) -> (Vec<u16>, Vec<u16>, Vec<u16>) {
    let (k, v) = structured_kv(seed, kv, s, d);
    let q = structured_query(seed, kv * group, d, kv);
    (to_f16_bits(&k), to_f16_bits(&v), to_f16_bits(&q))
}

/// The engine model on the same bytes; `dims` = (kv heads, group, S, d).
fn engine(
    method: Method,
    q: &[u16],
    k: &[u16],
    v: &[u16],
    dims: (usize, usize, usize, usize),
) -> Vec<i32> {
    let (kv, group, s, d) = dims;
    attention::engine::attend_heads(method, q, k, v, kv * group, kv, s, d).unwrap()
}

#[test]
fn identify_moves_4096_bytes() {
    let csd = sim();
    let info = csd.info();
    assert_eq!(info.caps.page_size, 4096);
    assert!(info.max_transfer >= 4096);
    assert!(!info.model.is_empty());
}

#[test]
fn one_byte_transfer_lands() {
    let mut csd = sim();
    let full = csd.stats().unwrap().to_bytes();
    let req = IoRequest {
        sqe: proto::get_log_page(proto::log::LID_STATS, 1),
        data: IoData::FromDevice(1),
    };
    let res = csd.transport_mut().admin(req).unwrap();
    assert!(res.cqe.status().is_success());
    assert_eq!(res.data.len(), 1);
    // Byte 0 is the low byte of the command counter, which only grows.
    let after = csd.stats().unwrap().commands;
    let got = u64::from(res.data[0]);
    assert!(
        u64::from(full[0]) < got && got < after,
        "{} < {got} < {after}",
        full[0]
    );
}

/// Appends of 32 B, 4096 B, 4128 B (crosses a page), 1 MiB (PRP list) and
/// one above the transfer limit (split, re-laid out) each decode exactly
/// like the engine model on the same bytes.
#[test]
fn transfer_sizes_round_trip_through_append_and_decode() {
    let max = sim().info().max_transfer;
    let cases: [(u8, u16, usize); 5] = [
        (1, 8, 1),
        (1, 8, 128),
        (1, 8, 129),
        (4, 64, (1 << 20) / (4 * 4 * 64)),
        (4, 64, max / (4 * 4 * 64) + 7),
    ];
    for (i, &(kv, d, s)) in cases.iter().enumerate() {
        let mut csd = sim();
        let (kvu, du) = (usize::from(kv), usize::from(d));
        let (k, v, q) = data(i as u64, kvu, 2, s, du);
        csd.open(9, shape(kv, 2, d, 1)).unwrap();
        csd.append(9, 0, 0, &k, &v).unwrap();
        let t = csd
            .submit_decode(9, 0, (s - 1) as u32, &q, None, Method::Dense)
            .unwrap();
        let out = csd.fetch(t).unwrap();
        assert_eq!(
            out.raw,
            engine(Method::Dense, &q, &k, &v, (kvu, 2, s, du)),
            "case {i}: {kv} heads, d {d}, {s} tokens"
        );
        assert_eq!(out.report.tokens_attended as usize, s);
        assert_eq!(out.out[0], attention::engine::fx_to_f32(out.raw[0]));
        csd.close(9).unwrap();
    }
}

#[test]
fn append_kv_decode_matches_engine_and_sparf_runs() {
    let mut csd = sim();
    let (kv, g, d, s) = (3usize, 3usize, 16usize, 300usize);
    let (k, v, q) = data(5, kv, g, s + 1, d);
    csd.open(1, shape(kv as u8, g as u8, d as u16, 2)).unwrap();
    // Prefill s tokens, then decode with the (s+1)-th appended.
    let prefix = |x: &[u16]| -> Vec<u16> {
        (0..kv)
            .flat_map(|h| x[h * (s + 1) * d..(h * (s + 1) + s) * d].to_vec())
            .collect()
    };
    let last = |x: &[u16]| -> Vec<u16> {
        (0..kv)
            .flat_map(|h| x[(h * (s + 1) + s) * d..(h * (s + 1) + s + 1) * d].to_vec())
            .collect()
    };
    for layer in 0..2 {
        csd.append(1, layer, 0, &prefix(&k), &prefix(&v)).unwrap();
    }
    let sparf = Method::SparF(SparseParams {
        r: 4,
        k: 40,
        local: 10,
    });
    let (kn, vn) = (last(&k), last(&v));
    let t0 = csd
        .submit_decode(1, 0, s as u32, &q, Some((&kn, &vn)), Method::Dense)
        .unwrap();
    let t1 = csd
        .submit_decode(1, 1, s as u32, &q, Some((&kn, &vn)), sparf)
        .unwrap();
    let outs = csd.fetch_many(vec![t0, t1]).unwrap();
    assert_eq!(
        outs[0].raw,
        engine(Method::Dense, &q, &k, &v, (kv, g, s + 1, d))
    );
    assert_eq!(outs[1].raw, engine(sparf, &q, &k, &v, (kv, g, s + 1, d)));
    // A second decode without APPEND_KV at the new last position.
    let t = csd
        .submit_decode(1, 0, s as u32, &q, None, Method::Dense)
        .unwrap();
    assert_eq!(csd.fetch(t).unwrap().raw, outs[0].raw);
    // The guardrail: a threshold no selection below S reaches widens every
    // KV head's k to its cap, and the report counts them.
    let guarded = |alpha_min_milli| {
        Method::SparFPlus(attention::shape::SparfPlus {
            p: SparseParams {
                r: 4,
                k: 40,
                local: 10,
            },
            basis: attention::shape::BasisKind::Raw,
            guard: Some(attention::shape::Guard {
                alpha_min_milli,
                k_cap: 100,
            }),
        })
    };
    let t = csd
        .submit_decode(1, 1, s as u32, &q, None, guarded(1000))
        .unwrap();
    let wide = csd.fetch(t).unwrap();
    assert_eq!(wide.report.guard_widened, kv as u32);
    assert_ne!(wide.raw, outs[1].raw);
    let t = csd
        .submit_decode(1, 1, s as u32, &q, None, guarded(0))
        .unwrap();
    let calm = csd.fetch(t).unwrap();
    assert_eq!(calm.report.guard_widened, 0);
    assert_eq!(calm.raw, outs[1].raw);
    assert!(wide.report.pages_read >= calm.report.pages_read);
}

#[test]
fn more_decodes_in_flight_than_queue_entries() {
    let mut csd = sim();
    let (layers, s, d) = (150u16, 5usize, 8usize);
    let (k, v, q) = data(3, 1, 1, s, d);
    csd.open(2, shape(1, 1, d as u16, layers)).unwrap();
    for l in 0..layers {
        csd.append(2, l, 0, &k, &v).unwrap();
    }
    let tickets: Vec<Ticket> = (0..layers)
        .map(|l| {
            csd.submit_decode(2, l, (s - 1) as u32, &q, None, Method::Dense)
                .unwrap()
        })
        .collect();
    let want = engine(Method::Dense, &q, &k, &v, (1, 1, s, d));
    let outs = csd.fetch_many(tickets).unwrap();
    assert_eq!(outs.len(), usize::from(layers));
    assert!(outs.iter().all(|o| o.raw == want));
    assert_eq!(csd.transport().in_flight(), 0);
}

#[test]
fn device_status_becomes_typed_error() {
    let mut csd = sim();
    let (k, v, _) = data(1, 1, 1, 4, 8);
    csd.open(3, shape(1, 1, 8, 1)).unwrap();
    // Gap: position 2 on an empty layer.
    let e = csd.append(3, 0, 2, &k, &v).unwrap_err();
    match &e {
        CsdError::Status { status, command } => {
            assert!(status.same_code(&Status::POSITION_MISMATCH));
            assert_eq!(*command, "KV_APPEND");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("position mismatch"), "{e}");
    // Decode past the end: the device refuses at submit, reported at fetch.
    csd.append(3, 0, 0, &k, &v).unwrap();
    let q = vec![0u16; 8];
    let t = csd.submit_decode(3, 0, 9, &q, None, Method::Dense).unwrap();
    let e = csd.fetch(t).unwrap_err();
    assert!(
        matches!(
            e,
            CsdError::Status {
                command: "DECODE_SUBMIT",
                ..
            }
        ),
        "{e}"
    );
    // The handle is still usable.
    let t = csd.submit_decode(3, 0, 3, &q, None, Method::Dense).unwrap();
    csd.fetch(t).unwrap();
}

#[test]
fn host_side_checks() {
    let mut csd = sim();
    assert!(matches!(csd.close(7), Err(CsdError::UnknownSequence(7))));
    csd.open(7, shape(2, 1, 8, 1)).unwrap();
    assert!(matches!(
        csd.open(7, shape(2, 1, 8, 1)),
        Err(CsdError::SequenceExists(7))
    ));
    assert!(matches!(
        csd.append(7, 0, 0, &[0; 15], &[0; 15]),
        Err(CsdError::Length { what: "k", .. })
    ));
    assert!(matches!(
        csd.append(7, 0, 0, &[0; 16], &[0; 8]),
        Err(CsdError::Length { what: "v", .. })
    ));
    assert!(matches!(
        csd.submit_decode(7, 0, 0, &[0; 8], None, Method::Dense),
        Err(CsdError::Length { what: "q", .. })
    ));
    let sparq = Method::SparQ(SparseParams {
        r: 1,
        k: 1,
        local: 0,
    });
    assert!(matches!(
        csd.submit_decode(7, 0, 0, &[0; 16], None, sparq),
        Err(CsdError::InvalidArgument(_))
    ));
    let bad = Method::SparF(SparseParams {
        r: 9,
        k: 1,
        local: 0,
    });
    assert!(matches!(
        csd.submit_decode(7, 0, 0, &[0; 16], None, bad),
        Err(CsdError::InvalidArgument(_))
    ));
    assert!(matches!(
        csd.submit_decode(7, 0, 0, &[0; 16], Some((&[0; 16], &[0; 15])), Method::Dense),
        Err(CsdError::Length { what: "v_new", .. })
    ));
}

/// A scripted device: answers Identify with `identify` and every I/O
/// command with success and `io_data` bytes.
struct Scripted {
    identify: Vec<u8>,
    io_data: Vec<u8>,
    queue: VecDeque<(u16, IoResult)>,
    next: u16,
}

impl Scripted {
    fn new(caps: Option<CapabilityBlock>, io_data: Vec<u8>) -> Self {
        let id = IdentifyController::new(1, 1, "S", "fake", "1", 0, caps).unwrap();
        Self {
            identify: id.to_bytes().to_vec(),
            io_data,
            queue: VecDeque::new(),
            next: 0,
        }
    }
}

impl Transport for Scripted {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        assert_eq!(req.sqe.opcode(), Opcode::IDENTIFY);
        Ok(IoResult {
            cqe: Cqe::new(0, 0, 0, Status::SUCCESS, 0, true),
            data: self.identify.clone(),
        })
    }
    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        let cid = self.next;
        self.next += 1;
        let data = match req.data {
            IoData::FromDevice(_) => self.io_data.clone(),
            _ => Vec::new(),
        };
        self.queue.push_back((
            cid,
            IoResult {
                cqe: Cqe::new(cid, 1, 0, Status::SUCCESS, 0, true),
                data,
            },
        ));
        Ok(cid)
    }
    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.queue
            .pop_front()
            .ok_or(TransportError::NothingInFlight)
    }
    fn in_flight(&self) -> usize {
        self.queue.len()
    }
    fn device_time(&self) -> Option<DeviceTime> {
        None
    }
}

#[test]
fn plain_nvme_drive_is_not_instcsd() {
    assert!(matches!(
        Csd::new(Scripted::new(None, Vec::new())),
        Err(CsdError::NotInstCsd)
    ));
}

#[test]
fn malformed_fetch_replies_are_errors() {
    let caps = CapabilityBlock {
        mdts_bytes: 1 << 20,
        ..CapabilityBlock::default()
    };
    let report = |tokens: u32, guard_widened: u32| {
        DecodeReport {
            tokens_attended: tokens,
            guard_widened,
            ..DecodeReport::default()
        }
        .to_bytes()
        .to_vec()
    };
    let body = |x: i32| x.to_le_bytes().repeat(8);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "bytes"),
        (body(1)[..30].to_vec(), "bytes"),
        ([body(1), report(1, 0), vec![0]].concat(), "bytes"),
        ([body(1), report(0, 0)].concat(), "tokens"),
        ([body(1), report(5, 0)].concat(), "tokens"),
        ([body(1), report(1, 7)].concat(), "guardrail"),
        ([body(i32::MAX), report(1, 0)].concat(), "range"),
    ];
    for (reply, needle) in cases {
        let mut csd = Csd::new(Scripted::new(Some(caps), reply)).unwrap();
        csd.open(1, shape(1, 1, 8, 1)).unwrap();
        csd.append(1, 0, 0, &[0; 8], &[0; 8]).unwrap();
        let t = csd
            .submit_decode(1, 0, 0, &[0; 8], None, Method::Dense)
            .unwrap();
        let e = csd.fetch(t).unwrap_err();
        assert!(
            matches!(
                e,
                CsdError::BadReply {
                    command: "DECODE_FETCH",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains(needle), "{e} lacks {needle}");
    }
    // A well-formed reply passes.
    let mut csd = Csd::new(Scripted::new(
        Some(caps),
        [body(16384), report(1, 0)].concat(),
    ))
    .unwrap();
    csd.open(1, shape(1, 1, 8, 1)).unwrap();
    let t = csd
        .submit_decode(1, 0, 0, &[0; 8], None, Method::Dense)
        .unwrap();
    assert_eq!(csd.fetch(t).unwrap().out, vec![1.0; 8]);
}

#[test]
fn a_placement_the_drive_does_not_advertise_is_refused_before_seq_open() {
    let placement = |sketch_bits, shortlist_bound| SeqShape {
        placement: proto::Placement {
            similar: true,
            sketch_bits,
            sketch_shortlist: 2,
            shortlist_bound,
            ..proto::Placement::TIME
        },
        ..shape(1, 1, 8, 1)
    };
    let caps = |sketch_widths, pages_features| CapabilityBlock {
        mdts_bytes: 1 << 20,
        sketch_widths,
        pages_features,
        ..CapabilityBlock::default()
    };
    for (c, p, needle) in [
        (caps(0, 0xff), placement(2, false), "sketch_widths"),
        (caps(1 << 1, 0xff), placement(2, false), "sketch_widths"),
        (caps(1 << 2, 0), placement(2, true), "pages_features"),
    ] {
        let mut csd = Csd::new(Scripted::new(Some(c), Vec::new())).unwrap();
        let e = csd.open(1, p).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
        // Nothing was opened: the same id opens once the shape fits.
        csd.open(1, shape(1, 1, 8, 1)).unwrap();
    }
    // Advertised: opened.
    let mut csd = Csd::new(Scripted::new(
        Some(caps(1 << 2, CapabilityBlock::SHORTLIST_BOUND)),
        Vec::new(),
    ))
    .unwrap();
    csd.open(1, placement(2, true)).unwrap();
}
