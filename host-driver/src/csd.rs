//! [`Csd`]: one InstCSD behind a [`Transport`], spoken to in its own terms:
//! identify, open / close sequences, append KV, submit and fetch decodes,
//! read statistics.
//!
//! The handle remembers the shape of every sequence it opened, so each
//! buffer is checked before it goes out and each reply is checked when it
//! comes back: a device answer of the wrong size or with an impossible
//! report is a [`CsdError::BadReply`], never a panic.
//!
//! Decodes are split-phase because Linux passthrough cannot move data both
//! ways in one command: [`Csd::submit_decode`] queues DECODE_SUBMIT and
//! returns a [`Ticket`]; [`Csd::fetch_begin`] waits for the submits and
//! queues one DECODE_FETCH each; [`Csd::fetch_end`] collects the results.
//! Callers submit everything (all layers, sequences, devices) before they
//! fetch anything.

mod error;
mod identify;
pub mod payload;
mod probe;
mod reply;
mod retry;

pub use error::CsdError;
pub use identify::DeviceInfo;
pub use probe::{Drive, PlainDrive, probe};
pub use retry::{RetryPolicy, RetryReport};

use identify::identify;
use reply::{bad_reply, check_status, parse_fetch};

use std::collections::HashMap;

use attention::shape::{BasisKind, Method};
use proto::{
    DecodeFetch, DecodeFlags, DecodeReport, DecodeSubmit, KvAppend, SeqClose, SeqOpen, SeqShape,
    StatsLog,
};

use crate::transport::{DeviceTime, IoData, IoRequest, IoResult, Transport};

/// A decode in flight on one device.
#[derive(Debug)]
#[must_use = "a submitted decode must be fetched"]
pub struct Ticket {
    seq: u32,
    layer: u16,
    cid: u16,
    shape: SeqShape,
    /// Tokens the layer holds for this decode (position + 1).
    tokens: u64,
}

impl Ticket {
    /// The sequence.
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// The layer.
    pub fn layer(&self) -> u16 {
        self.layer
    }
}

/// Decodes whose DECODE_FETCH commands are in flight.
#[derive(Debug)]
#[must_use = "fetches in flight must be collected with fetch_end"]
pub struct FetchBatch {
    /// Per ticket: its DECODE_FETCH in flight, or why there is none.
    items: Vec<Result<(u16, Ticket), CsdError>>,
}

/// One decode's result.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeOutput {
    /// Attention output `[q_heads][d]`.
    pub out: Vec<f32>,
    /// The same in the device's Q14 fixed point.
    pub raw: Vec<i32>,
    /// The device's per-decode statistics.
    pub report: DecodeReport,
}

/// One InstCSD.
#[derive(Debug)]
pub struct Csd<T: Transport> {
    transport: T,
    info: DeviceInfo,
    seqs: HashMap<u32, SeqShape>,
    /// Completions reaped while waiting for another command.
    done: HashMap<u16, IoResult>,
}

const GET_LOG_PAGE: &str = "Get Log Page";

/// `info` with its transfer limit lowered to the transport's own.
fn within<T: Transport>(mut info: DeviceInfo, transport: &T) -> DeviceInfo {
    if let Some(m) = transport.max_transfer() {
        info.max_transfer = info.max_transfer.min(m);
    }
    info
}

impl<T: Transport> Csd<T> {
    /// Identifies the device behind `transport`; fails with
    /// [`CsdError::NotInstCsd`] for a plain NVMe drive.
    pub fn new(mut transport: T) -> Result<Self, CsdError> {
        let info = identify(&mut transport)?;
        Ok(Self::with_info(transport, info))
    }

    /// A device whose Identify data was read already. Transfers are split
    /// to the tighter of the device's and the transport's limits.
    pub(crate) fn with_info(transport: T, info: DeviceInfo) -> Self {
        Self {
            info: within(info, &transport),
            transport,
            seqs: HashMap::new(),
            done: HashMap::new(),
        }
    }

    /// Identify data read at construction.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Reads Identify Controller again.
    pub fn identify(&mut self) -> Result<DeviceInfo, CsdError> {
        self.info = within(identify(&mut self.transport)?, &self.transport);
        Ok(self.info.clone())
    }

    /// The transport (counters, device access in tests).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutable.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The transport, giving up the device (to stop a QEMU board cleanly).
    pub fn into_transport(self) -> T {
        self.transport
    }

    /// Virtual time of a simulated device.
    pub fn device_time(&self) -> Option<DeviceTime> {
        self.transport.device_time()
    }

    /// The shape of an open sequence.
    pub fn shape(&self, seq: u32) -> Option<SeqShape> {
        self.seqs.get(&seq).copied()
    }

    /// Reads the statistics log page.
    pub fn stats(&mut self) -> Result<StatsLog, CsdError> {
        let req = IoRequest {
            sqe: proto::get_log_page(proto::log::LID_STATS, StatsLog::SIZE as u32),
            data: IoData::FromDevice(StatsLog::SIZE),
        };
        let res = self.transport.admin(req)?;
        check_status(&res, GET_LOG_PAGE)?;
        StatsLog::from_bytes(&res.data).map_err(|e| bad_reply(GET_LOG_PAGE, e.to_string()))
    }

    /// Opens sequence `seq` with `shape` on the device.
    pub fn open(&mut self, seq: u32, shape: SeqShape) -> Result<(), CsdError> {
        if self.seqs.contains_key(&seq) {
            return Err(CsdError::SequenceExists(seq));
        }
        shape.validate()?;
        let bits = shape.placement.sketch_bits;
        if bits != 0 && self.info.caps.sketch_widths & (1 << bits) == 0 {
            return Err(arg(format!(
                "the drive keeps no {bits}-bit key sketch (Identify sketch_widths = {:#04x})",
                self.info.caps.sketch_widths
            )));
        }
        if shape.placement.shortlist_bound
            && self.info.caps.pages_features & proto::identify::CapabilityBlock::SHORTLIST_BOUND
                == 0
        {
            return Err(arg(format!(
                "the drive does not take half of a sketch shortlist by the bound (Identify pages_features = {:#04x})",
                self.info.caps.pages_features
            )));
        }
        self.run_io(SeqOpen::new(seq, shape).to_sqe(), IoData::None, "SEQ_OPEN")?;
        self.seqs.insert(seq, shape);
        Ok(())
    }

    /// Closes sequence `seq` and frees its flash space.
    pub fn close(&mut self, seq: u32) -> Result<(), CsdError> {
        if !self.seqs.contains_key(&seq) {
            return Err(CsdError::UnknownSequence(seq));
        }
        self.run_io(SeqClose { seq }.to_sqe(), IoData::None, "SEQ_CLOSE")?;
        self.seqs.remove(&seq);
        Ok(())
    }

    /// Acknowledges `seq` lost by the drive (after a power failure it
    /// answers Sequence Lost to every command naming it but this one):
    /// SEQ_CLOSE whether or not this handle knows the id, which it then
    /// forgets. The id can be opened again afterwards.
    pub fn close_lost(&mut self, seq: u32) -> Result<(), CsdError> {
        self.run_io(SeqClose { seq }.to_sqe(), IoData::None, "SEQ_CLOSE")?;
        self.seqs.remove(&seq);
        Ok(())
    }

    /// Appends `n` tokens at `first_pos` to one layer: `k` and `v` are fp16
    /// bits `[kv_heads][n][d]`. Split into KV_APPEND commands under the
    /// device's transfer limit, each with its own head-major payload, sent
    /// in order (each waits for the previous: positions must not race).
    pub fn append(
        &mut self,
        seq: u32,
        layer: u16,
        first_pos: u32,
        k: &[u16],
        v: &[u16],
    ) -> Result<(), CsdError> {
        self.append_with_dim_copy(seq, layer, first_pos, k, v, None)
    }

    /// [`Self::append`] for either kind of sequence: a rotated one
    /// ([`SeqShape::rotated`]) needs `k_dim`, the keys in its basis for the
    /// dim-indexed copy (same layout as `k`); a plain one must not get it.
    pub fn append_with_dim_copy(
        &mut self,
        seq: u32,
        layer: u16,
        first_pos: u32,
        k: &[u16],
        v: &[u16],
        k_dim: Option<&[u16]>,
    ) -> Result<(), CsdError> {
        let shape = self.shape_of(seq)?;
        rotated_matches(&shape, k_dim.is_some(), "the keys of the dim-indexed copy")?;
        if let Some(kd) = k_dim {
            check_len("k_dim", k.len(), kd.len())?;
        }
        let (heads, d) = (usize::from(shape.kv_heads), usize::from(shape.head_dim));
        let row = heads * d;
        if !k.len().is_multiple_of(row) || k.is_empty() {
            return Err(CsdError::Length {
                what: "k",
                expected: (k.len() / row).max(1) * row,
                actual: k.len(),
            });
        }
        if v.len() != k.len() {
            return Err(CsdError::Length {
                what: "v",
                expected: k.len(),
                actual: v.len(),
            });
        }
        let n = k.len() / row;
        let mut blocks = vec![k, v];
        blocks.extend(k_dim);
        let per_token = 2 * blocks.len() * row;
        let chunk = self.info.max_transfer / per_token;
        if chunk == 0 {
            return Err(CsdError::InvalidArgument(format!(
                "one token of KV ({per_token} bytes) exceeds the device transfer limit of {} bytes",
                self.info.max_transfer
            )));
        }
        let mut t0 = 0;
        while t0 < n {
            let t1 = (t0 + chunk).min(n);
            let pos = u32::try_from(t0)
                .ok()
                .and_then(|t| first_pos.checked_add(t))
                .ok_or_else(|| CsdError::InvalidArgument("token position exceeds u32".into()))?;
            let tokens = (t1 - t0) as u32; // ≤ max_transfer / per_token, small.
            let cmd = KvAppend::new(seq, layer, pos, tokens, &shape)?;
            let data = payload::kv_chunk(&blocks, heads, n, d, t0, t1);
            self.run_io(cmd.to_sqe(), IoData::ToDevice(data), "KV_APPEND")?;
            t0 = t1;
        }
        Ok(())
    }

    /// Queues one DECODE_SUBMIT: `q` is fp16 `[q_heads][d]`; `kv_new`, if
    /// given, is the new token's K and V `[kv_heads][d]` each, appended at
    /// `position` before attending (APPEND_KV); without it `position` is the
    /// last stored token.
    pub fn submit_decode(
        &mut self,
        seq: u32,
        layer: u16,
        position: u32,
        q: &[u16],
        kv_new: Option<(&[u16], &[u16])>,
        method: Method,
    ) -> Result<Ticket, CsdError> {
        let input = DecodeInput {
            q,
            kv_new,
            approx: None,
        };
        self.submit_decode_with(seq, layer, position, input, method)
    }

    /// [`Self::submit_decode`] for every method the device runs: dense,
    /// SparF, and SparF+ ([`Method::SparFPlus`]: its guardrail, and on a
    /// rotated sequence — whose SparF+ basis must not be raw — the query
    /// and new key in the sequence's basis, `input.approx`).
    pub fn submit_decode_with(
        &mut self,
        seq: u32,
        layer: u16,
        position: u32,
        input: DecodeInput<'_>,
        method: Method,
    ) -> Result<Ticket, CsdError> {
        let DecodeInput { q, kv_new, approx } = input;
        let shape = self.shape_of(seq)?;
        let d = usize::from(shape.head_dim);
        let q_len = shape.query_heads() as usize * d;
        check_len("q", q_len, q.len())?;
        let mut flags = if kv_new.is_some() {
            DecodeFlags::APPEND_KV
        } else {
            DecodeFlags::NONE
        };
        let mut pages_cmd = None;
        if let Method::Pages(pp) = method {
            pp.validate()
                .map_err(|e| CsdError::InvalidArgument(e.to_string()))?;
            if pp.sink != usize::from(shape.placement.sink) {
                return Err(arg(format!(
                    "pages with {} sink tokens on a sequence opened with {}",
                    pp.sink, shape.placement.sink
                )));
            }
            if let attention::shape::PageScore::Sketch {
                bits,
                shortlist,
                bound,
            } = pp.score
                && (bits, shortlist, bound)
                    != (
                        shape.placement.sketch_bits,
                        shape.placement.sketch_shortlist,
                        shape.placement.shortlist_bound,
                    )
            {
                return Err(arg(format!(
                    "pages with a {bits}-bit sketch over a shortlist of {shortlist} (half by the bound: {bound}) on a sequence opened with {} bits and {} ({})",
                    shape.placement.sketch_bits,
                    shape.placement.sketch_shortlist,
                    shape.placement.shortlist_bound
                )));
            }
            let local = u16::try_from(pp.local_pages)
                .map_err(|_| arg(format!("local pages = {} exceed u16", pp.local_pages)))?;
            let k = u32::try_from(pp.max_pages)
                .map_err(|_| arg(format!("pages = {} exceed u32", pp.max_pages)))?;
            let mut flags = flags;
            if pp.fill {
                flags.0 |= DecodeFlags::FILL.0;
            }
            match pp.score {
                attention::shape::PageScore::Bound => {}
                attention::shape::PageScore::Mean => flags.0 |= DecodeFlags::MEAN.0,
                attention::shape::PageScore::Sketch { .. } => flags.0 |= DecodeFlags::SKETCH.0,
                other => {
                    return Err(arg(format!(
                        "the drive scores pages by bound, mean or sketch, not {other:?}"
                    )));
                }
            }
            pages_cmd = Some(DecodeSubmit::pages(
                seq,
                layer,
                position,
                flags,
                pp.mass_milli.min(1000),
                local,
                k,
                &shape,
            ));
        }
        let (p, guard) = match method {
            Method::Dense => (None, None),
            Method::SparF(p) => (Some(p), None),
            Method::SparFPlus(o) => {
                let rotated = o.basis != BasisKind::Raw;
                if rotated != shape.rotated {
                    return Err(arg(format!(
                        "SparF+ in the {:?} basis on a sequence opened {}",
                        o.basis,
                        if shape.rotated { "rotated" } else { "plain" }
                    )));
                }
                (Some(o.p), o.guard)
            }
            Method::Pages(_) => (None, None),
            Method::SparQ(_)
            | Method::Local { .. }
            | Method::H2o(_)
            | Method::Block(_)
            | Method::Oracle { .. } => {
                return Err(arg(format!(
                    "the device runs dense, SparF, SparF+ and pages only, not {}",
                    method.name()
                )));
            }
        };
        if matches!(method, Method::SparF(_)) && shape.rotated {
            return Err(arg(
                "plain SparF on a rotated sequence: use SparF+ in its basis".into(),
            ));
        }
        let trailer = match guard {
            Some(g) => {
                flags.0 |= DecodeFlags::GUARD.0;
                Some(proto::GuardTrailer {
                    alpha_min_milli: g.alpha_min_milli.min(1000),
                    k_cap: u32::try_from(g.k_cap.max(1)).unwrap_or(u32::MAX),
                })
            }
            None => None,
        };
        let cmd = match (pages_cmd, p) {
            (Some(cmd), _) => cmd,
            (None, None) => DecodeSubmit::dense(seq, layer, position, flags, &shape),
            (None, Some(p)) => {
                p.validate(d)
                    .map_err(|e| CsdError::InvalidArgument(e.to_string()))?;
                let r = u16::try_from(p.r).map_err(|_| arg(format!("r = {} too large", p.r)))?;
                let local = u16::try_from(p.local)
                    .map_err(|_| arg(format!("local = {} exceeds {}", p.local, u16::MAX)))?;
                let k = u32::try_from(p.k).map_err(|_| arg(format!("k = {} exceeds u32", p.k)))?;
                DecodeSubmit::sparf(seq, layer, position, flags, r, local, k, &shape)
            }
        };
        let sparse = p.is_some();
        if approx.is_some() && !shape.rotated {
            return Err(arg(
                "a plain sequence takes no query or key in another basis".into(),
            ));
        }
        let mut data = Vec::with_capacity(cmd.payload_bytes(&shape) as usize);
        payload::put_f16(&mut data, q);
        if shape.rotated && sparse {
            let qa = approx
                .and_then(|a| a.q)
                .ok_or_else(|| arg("a rotated sequence's SparF+ needs q in its basis".into()))?;
            check_len("q_approx", q_len, qa.len())?;
            payload::put_f16(&mut data, qa);
        }
        if let Some((k, v)) = kv_new {
            let kv_len = usize::from(shape.kv_heads) * d;
            check_len("k_new", kv_len, k.len())?;
            check_len("v_new", kv_len, v.len())?;
            payload::put_f16(&mut data, k);
            payload::put_f16(&mut data, v);
            if shape.rotated {
                let ka = approx.and_then(|a| a.k_new).ok_or_else(|| {
                    arg("a rotated sequence's new token needs its key in the basis".into())
                })?;
                check_len("k_new_approx", kv_len, ka.len())?;
                payload::put_f16(&mut data, ka);
            }
        }
        if let Some(t) = trailer {
            data.extend_from_slice(&t.to_bytes());
        }
        let cid = self.transport.submit(IoRequest {
            sqe: cmd.to_sqe(),
            data: IoData::ToDevice(data),
        })?;
        Ok(Ticket {
            seq,
            layer,
            cid,
            shape,
            tokens: u64::from(position) + 1,
        })
    }

    /// Waits for the submits of `tickets` and queues a DECODE_FETCH for
    /// each that succeeded; a ticket whose submit failed keeps its error in
    /// its place.
    pub fn fetch_begin_each(&mut self, tickets: Vec<Ticket>) -> FetchBatch {
        let mut items = Vec::with_capacity(tickets.len());
        for t in tickets {
            let submitted = self
                .wait(t.cid)
                .and_then(|res| check_status(&res, "DECODE_SUBMIT"));
            items.push(submitted.and_then(|()| {
                let cmd = DecodeFetch::new(t.seq, t.layer, &t.shape);
                let len = DecodeFetch::payload_bytes(&t.shape) as usize;
                let cid = self.transport.submit(IoRequest {
                    sqe: cmd.to_sqe(),
                    data: IoData::FromDevice(len),
                })?;
                Ok((cid, t))
            }));
        }
        FetchBatch { items }
    }

    /// Waits for the submits of `tickets` and queues their DECODE_FETCH
    /// commands. On error, every command of the batch is reaped and dropped.
    pub fn fetch_begin(&mut self, tickets: Vec<Ticket>) -> Result<FetchBatch, CsdError> {
        let mut batch = self.fetch_begin_each(tickets);
        if let Some(i) = batch.items.iter().position(Result::is_err) {
            let Err(e) = batch.items.swap_remove(i) else {
                unreachable!("position found an error");
            };
            let queued: Vec<u16> = batch
                .items
                .iter()
                .filter_map(|x| x.as_ref().ok().map(|(c, _)| *c))
                .collect();
            self.abandon(queued.into_iter());
            return Err(e);
        }
        Ok(batch)
    }

    /// Collects the results of a [`FetchBatch`], in ticket order, each
    /// ticket's own.
    pub fn fetch_end_each(&mut self, batch: FetchBatch) -> Vec<Result<DecodeOutput, CsdError>> {
        let mut outs = Vec::with_capacity(batch.items.len());
        for item in batch.items {
            outs.push(
                item.and_then(|(cid, t)| self.wait(cid).and_then(|res| parse_fetch(&res, &t))),
            );
        }
        outs
    }

    /// Collects the results of a [`FetchBatch`], in ticket order; the first
    /// error if any failed (every fetch is collected either way).
    pub fn fetch_end(&mut self, batch: FetchBatch) -> Result<Vec<DecodeOutput>, CsdError> {
        self.fetch_end_each(batch).into_iter().collect()
    }

    /// Fetches many decodes: [`Csd::fetch_begin`] then [`Csd::fetch_end`].
    pub fn fetch_many(&mut self, tickets: Vec<Ticket>) -> Result<Vec<DecodeOutput>, CsdError> {
        let batch = self.fetch_begin(tickets)?;
        self.fetch_end(batch)
    }

    /// Fetches one decode.
    pub fn fetch(&mut self, ticket: Ticket) -> Result<DecodeOutput, CsdError> {
        let mut v = self.fetch_many(vec![ticket])?;
        v.pop()
            .ok_or_else(|| bad_reply("DECODE_FETCH", "no result".into()))
    }

    fn shape_of(&self, seq: u32) -> Result<SeqShape, CsdError> {
        self.seqs
            .get(&seq)
            .copied()
            .ok_or(CsdError::UnknownSequence(seq))
    }

    /// Submits one I/O command and waits for it; a non-success status is an error.
    fn run_io(
        &mut self,
        sqe: proto::Sqe,
        data: IoData,
        command: &'static str,
    ) -> Result<IoResult, CsdError> {
        let cid = self.transport.submit(IoRequest { sqe, data })?;
        let res = self.wait(cid)?;
        check_status(&res, command)?;
        Ok(res)
    }

    /// Reaps until the completion of `cid` arrives; keeps the others.
    fn wait(&mut self, cid: u16) -> Result<IoResult, CsdError> {
        loop {
            if let Some(r) = self.done.remove(&cid) {
                return Ok(r);
            }
            let (c, r) = self.transport.reap()?;
            self.done.insert(c, r);
        }
    }

    /// Reaps and drops the completions of `cids` (error clean-up).
    fn abandon(&mut self, cids: impl Iterator<Item = u16>) {
        for cid in cids {
            // Best effort: the first error is the one reported.
            let _ = self.wait(cid);
        }
    }
}

/// What a decode sends besides its method: fp16 bits.
#[derive(Clone, Copy, Debug)]
pub struct DecodeInput<'a> {
    /// Query `[q_heads][d]`.
    pub q: &'a [u16],
    /// The new token's K and V `[kv_heads][d]` each (APPEND_KV).
    pub kv_new: Option<(&'a [u16], &'a [u16])>,
    /// Rotated sequences only: the same in the sequence's basis.
    pub approx: Option<Approx<'a>>,
}

/// A rotated sequence's query and new key in its basis.
#[derive(Clone, Copy, Debug, Default)]
pub struct Approx<'a> {
    /// q̃ `[q_heads][d]` (SparF+ decodes).
    pub q: Option<&'a [u16]>,
    /// k̃_new `[kv_heads][d]` (with a new token).
    pub k_new: Option<&'a [u16]>,
}

/// A rotated-only input given to a plain sequence, or the reverse.
fn rotated_matches(shape: &SeqShape, given: bool, what: &str) -> Result<(), CsdError> {
    if shape.rotated == given {
        Ok(())
    } else if shape.rotated {
        Err(arg(format!("a rotated sequence needs {what}")))
    } else {
        Err(arg(format!("a plain sequence takes no {what}")))
    }
}

fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<(), CsdError> {
    if expected == actual {
        Ok(())
    } else {
        Err(CsdError::Length {
            what,
            expected,
            actual,
        })
    }
}

fn arg(msg: String) -> CsdError {
    CsdError::InvalidArgument(msg)
}

#[cfg(test)]
mod tests;
