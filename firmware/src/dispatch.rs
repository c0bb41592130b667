//! Command dispatch: admin and vendor I/O commands, each to its handler,
//! every failure to an NVMe status.

use crate::decode::Admitted;
use crate::dma;
use crate::error::{DeviceError, Fail, ftl_status, proto_status};
use crate::flash::run_ftl_ops;
use crate::hal::{Clock, Engine, HostInterface, Nand, Submission};
use crate::scheduler::MethodParams;
use crate::sequence::Sequence;
use crate::state::State;
use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;
use attention::shape::{Guard, PageScore, PagesParams, SparseParams};
use ftl::StreamShape;
use proto::{
    DecodeFetch, DecodeReport, DecodeSubmit, KvAppend, Method, Opcode, SeqClose, SeqOpen, Status,
    VendorCommand,
};

/// What one [`Device::poll`](crate::Device::poll) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// No command was waiting.
    Idle,
    /// One command, or a batch of decode commands that arrived together,
    /// was served and completed (successfully or with an error status).
    Served,
}

pub(crate) type Handled = Result<u32, Fail>;

/// Serves one command, or one batch of DECODE_SUBMITs that came one after
/// another ([`crate::decode`]).
pub(crate) fn poll<B>(st: &mut State, board: &mut B) -> Result<Progress, DeviceError>
where
    B: HostInterface + Nand + Engine + Clock,
{
    if !flush(st, board)? {
        return Ok(Progress::Idle);
    }
    let sub = match st.next.take() {
        Some(sub) => sub,
        None => match board.fetch() {
            Ok(sub) => sub,
            Err(nb::Error::WouldBlock) => return Ok(Progress::Idle),
            Err(nb::Error::Other(_)) => return Err(DeviceError::HostLink),
        },
    };
    st.counters.commands += 1;
    if let Some(c) = crate::decode::submit_of(st, &sub) {
        for (sub, result) in crate::decode::serve(st, board, sub, c) {
            conclude(st, sub, result);
        }
    } else {
        let result = if sub.queue == 0 {
            admin(st, board, &sub.sqe)
        } else {
            io(st, board, &sub.sqe)
        };
        conclude(st, sub, result);
    }
    flush(st, board)?;
    // Background garbage collection, once the command has completed.
    crate::gc::background(board, st);
    Ok(Progress::Served)
}

/// Queues a command's completion behind those not yet posted.
fn conclude(st: &mut State, sub: Submission, result: Handled) {
    let (status, dw0) = match result {
        Ok(dw0) => (Status::SUCCESS, dw0),
        Err(fail) => {
            st.counters.errors += 1;
            (fail.status, fail.dw0)
        }
    };
    log_debug!(
        "sq {=u16} cid {=u16} opcode {=u8:#x}: status {=u16:#x} dw0 {=u32}",
        sub.queue,
        sub.sqe.cid(),
        sub.sqe.opcode().0,
        status.to_field(),
        dw0
    );
    st.pending.push_back((sub, status, dw0));
}

/// Posts the completions not yet posted, in order; `false` if the host's
/// CQ is full and some wait.
fn flush<B: HostInterface>(st: &mut State, board: &mut B) -> Result<bool, DeviceError> {
    while let Some((sub, status, dw0)) = st.pending.front() {
        match board.complete(sub, *status, *dw0) {
            Ok(()) => {
                st.pending.pop_front();
            }
            Err(nb::Error::WouldBlock) => return Ok(false),
            Err(nb::Error::Other(_)) => return Err(DeviceError::HostLink),
        }
    }
    Ok(true)
}

fn admin<B>(st: &mut State, board: &mut B, sqe: &proto::Sqe) -> Handled
where
    B: HostInterface + Nand + Engine + Clock,
{
    let max = st.config.mdts_bytes as usize;
    match sqe.opcode() {
        Opcode::IDENTIFY => {
            let cmd = proto::IdentifyCmd::parse(sqe).map_err(proto_status)?;
            let page = crate::identify::controller(st, &cmd)?;
            dma::to_host(board, sqe, &page, max)?;
            st.counters.pcie_out += page.len() as u64;
            Ok(0)
        }
        Opcode::GET_LOG_PAGE => {
            let cmd = proto::GetLogPage::parse(sqe).map_err(proto_status)?;
            if cmd.lid != proto::log::LID_STATS {
                return Err(Status::INVALID_LOG_PAGE.into());
            }
            let log = crate::stats::snapshot(st, board).to_bytes();
            let len = cmd.bytes() as usize;
            if len == 0 || len > log.len() {
                return Err(Status::INVALID_FIELD.into());
            }
            dma::to_host(board, sqe, &log[..len], max)?;
            st.counters.pcie_out += len as u64;
            Ok(0)
        }
        _ => Err(Status::INVALID_OPCODE.into()),
    }
}

fn io<B>(st: &mut State, board: &mut B, sqe: &proto::Sqe) -> Handled
where
    B: HostInterface + Nand + Engine + Clock,
{
    let cmd = VendorCommand::parse(sqe).map_err(proto_status)?;
    if st.lost.contains(&cmd.seq()) {
        // Lost to a power failure: only a close (the host's acknowledgement)
        // is served.
        return match cmd {
            VendorCommand::SeqClose(c) => {
                st.lost.remove(&c.seq);
                record_open(st, board).map(|()| 0)
            }
            _ => Err(Status::SEQ_LOST.into()),
        };
    }
    match cmd {
        VendorCommand::SeqOpen(c) => {
            seq_open(st, &c)?;
            if let Err(e) = record_open(st, board) {
                // Not recorded: not open either.
                let _ = seq_close(st, board, &SeqClose { seq: c.seq });
                return Err(e);
            }
            Ok(0)
        }
        VendorCommand::SeqClose(c) => {
            let r = seq_close(st, board, &c);
            if r.is_ok() {
                record_open(st, board)?;
            }
            r
        }
        VendorCommand::KvAppend(c) => kv_append(st, board, sqe, &c),
        // `poll` hands every DECODE_SUBMIT of a live sequence to
        // `crate::decode`, in batches; none reaches here.
        VendorCommand::DecodeSubmit(_) => Err(Status::INTERNAL_ERROR.into()),
        VendorCommand::DecodeFetch(c) => decode_fetch(st, board, sqe, &c),
    }
}

/// Writes the open and lost sequences to the journal, when there is one.
fn record_open<B>(st: &mut State, board: &mut B) -> Result<(), Fail>
where
    B: HostInterface + Nand + Engine + Clock,
{
    let Some(j) = st.journal.as_mut() else {
        return Ok(());
    };
    let mut ids: Vec<u32> = st.sequences.ids();
    ids.extend(st.lost.iter().copied());
    j.write(board, &mut st.ftl, &ids).map_err(Fail::from)
}

fn seq_open(st: &mut State, c: &SeqOpen) -> Handled {
    let shape = c.shape();
    shape.validate().map_err(proto_status)?;
    let cfg = &st.config;
    if shape.layers > cfg.max_layers
        || shape.kv_heads > cfg.max_kv_heads
        || shape.group > cfg.max_group
        || shape.head_dim > cfg.max_head_dim
    {
        return Err(Status::INVALID_FIELD.into());
    }
    // The NFC filter moves 16-byte beats (rows of whole beats: d a multiple
    // of 8) and addresses at most MAX_FILTER_ROWS tokens per page: a head
    // dim so small that a page holds more tokens is refused.
    if !shape.head_dim.is_multiple_of(8) {
        return Err(Status::INVALID_FIELD.into());
    }
    let tokens_per_page = st.ftl.geometry().page_size / (2 * u32::from(shape.head_dim));
    if tokens_per_page as usize > crate::hal::MAX_FILTER_ROWS {
        return Err(Status::INVALID_FIELD.into());
    }
    if st.sequences.find(c.seq).is_some() {
        return Err(Status::SEQ_EXISTS.into());
    }
    let slot = st.sequences.free_slot()?;
    let n = usize::from(shape.layers) * usize::from(shape.kv_heads);
    let stream_shape = StreamShape {
        head_dim: shape.head_dim,
        dim_group: shape.dim_group,
    };
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        match st.ftl.open_stream(stream_shape) {
            Ok(id) => streams.push(id),
            Err(e) => {
                for id in streams {
                    let _ = st.ftl.close_stream(id);
                }
                return Err(ftl_status(e).into());
            }
        }
    }
    st.sequences.insert(
        slot,
        Sequence::new(c.seq, shape, streams, tokens_per_page as usize),
    );
    Ok(0)
}

fn seq_close<B>(st: &mut State, board: &mut B, c: &SeqClose) -> Handled
where
    B: HostInterface + Nand + Engine + Clock,
{
    let seq = st.sequences.remove(c.seq).ok_or(Status::SEQ_NOT_OPEN)?;
    let mut first = Ok(());
    for id in seq.streams {
        if let Err(e) = st.ftl.close_stream(id) {
            first = first.and(Err(ftl_status(e)));
        }
    }
    run_ftl_ops(board, &mut st.ftl, &mut st.scratch.page, &mut st.counters)?;
    first.map(|()| 0).map_err(Fail::from)
}

/// Reads the command's whole host→device payload.
fn payload<B: HostInterface>(
    board: &mut B,
    st: &mut State,
    sqe: &proto::Sqe,
    bytes: usize,
) -> Result<Vec<u16>, Fail> {
    if bytes > st.config.mdts_bytes as usize {
        return Err(Status::INVALID_FIELD.into());
    }
    let mut raw = vec![0u8; bytes];
    dma::from_host(board, sqe, &mut raw, st.config.mdts_bytes as usize)?;
    st.counters.pcie_in += bytes as u64;
    Ok(raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect())
}

/// K, V and the dim-indexed copy's keys of an append, `[kv_heads][n][d]`
/// each (`k_dim` is `k` unless the sequence is rotated).
struct Rows<'a> {
    k: &'a [u16],
    v: &'a [u16],
    k_dim: &'a [u16],
}

impl<'a> Rows<'a> {
    /// Splits `blocks` (K, V, then K̃ in a rotated sequence) of equal size.
    fn split(data: &'a [u16], rotated: bool) -> Self {
        let n = if rotated { 3 } else { 2 };
        let len = data.len() / n;
        let (k, rest) = data.split_at(len);
        let (v, rest) = rest.split_at(len);
        let k_dim = if rotated { &rest[..len] } else { k };
        Rows { k, v, k_dim }
    }
}

/// Appends `n` tokens of every KV head of `layer`. In a sequence placed
/// by similarity each head's tokens are ordered first
/// (`attention::engine::layout_order`, per KV_APPEND); the PAGES index
/// follows in the same order. A failure after the first head leaves the
/// layer's heads at different lengths: the layer is marked broken.
fn append_tokens<B: Nand + crate::hal::Clock>(
    board: &mut B,
    st: &mut State,
    seq_id: u32,
    layer: usize,
    n: usize,
    rows: Rows<'_>,
) -> Result<(), Fail> {
    let Rows { k, v, k_dim } = rows;
    let State {
        ftl,
        sequences,
        counters,
        scratch,
        ..
    } = st;
    crate::gc::foreground(board, ftl, &mut scratch.page, counters)?;
    let seq = sequences.get_mut(seq_id)?;
    let d = seq.d();
    let per_head = n * d;
    let placement = seq.shape.placement;
    let first = seq.len[layer] as usize;
    for h in 0..seq.kv_heads() {
        let span = h * per_head..(h + 1) * per_head;
        let (ks, vs, kd) = (&k[span.clone()], &v[span.clone()], &k_dim[span]);
        let placed;
        let (ks, vs, kd) = if placement.similar && n > 1 {
            let t = seq.page_index(layer, h).page_tokens();
            let sink = usize::from(placement.sink).saturating_sub(first);
            let keep = usize::from(placement.recent_pages) * t;
            let order = model::layout_order(ks, d, t, sink, keep);
            placed = [ks, vs, kd].map(|m| permute(m, &order, d));
            (&placed[0][..], &placed[1][..], &placed[2][..])
        } else {
            (ks, vs, kd)
        };
        let mut res = ftl.append_with_dim_copy(seq.stream(layer, h), ks, vs, kd);
        // No room, nothing changed: collect, and try once more.
        if res == Err(ftl::FtlError::NoSpace)
            && crate::gc::make_room(board, ftl, &mut scratch.page, counters)?
        {
            res = ftl.append_with_dim_copy(seq.stream(layer, h), ks, vs, kd);
        }
        if let Err(e) = res {
            if h > 0 {
                seq.broken[layer] = true;
            }
            return Err(ftl_status(e).into());
        }
        seq.page_index_mut(layer, h).push(ks, vs);
        let vsum = seq.vsum_mut(layer, h);
        for row in vs.chunks_exact(d) {
            model::add_vsum(vsum, row);
        }
    }
    seq.len[layer] += n as u32;
    counters.tokens_appended += n as u64;
    if let Err(e) = run_ftl_ops(board, ftl, &mut scratch.page, counters) {
        seq.broken[layer] = true;
        return Err(e.into());
    }
    Ok(())
}

/// The rows of `m` (`n × d`) in `order` (slot → row).
fn permute(m: &[u16], order: &[u32], d: usize) -> Vec<u16> {
    let mut out = Vec::with_capacity(m.len());
    for &j in order {
        let j = j as usize;
        out.extend_from_slice(&m[j * d..(j + 1) * d]);
    }
    out
}

fn kv_append<B>(st: &mut State, board: &mut B, sqe: &proto::Sqe, c: &KvAppend) -> Handled
where
    B: HostInterface + Nand + Engine + Clock,
{
    let seq = st.sequences.get(c.seq)?;
    VendorCommand::KvAppend(*c)
        .check_shape(&seq.shape)
        .map_err(proto_status)?;
    let layer = seq.layer(c.layer)?;
    let len = seq.len[layer];
    if c.first_pos != len {
        return Err(Fail {
            status: Status::POSITION_MISMATCH,
            dw0: len,
        });
    }
    if u64::from(len) + u64::from(c.tokens) > u64::from(st.config.max_tokens_per_stream) {
        return Err(Status::CAPACITY_EXCEEDED.into());
    }
    let rotated = seq.shape.rotated;
    let data = payload(board, st, sqe, c.ndt as usize * 4)?;
    let rows = Rows::split(&data, rotated);
    append_tokens(board, st, c.seq, layer, c.tokens as usize, rows)?;
    Ok(len + c.tokens)
}

/// Checks a DECODE_SUBMIT, reads its payload and appends its new token:
/// everything but the decode itself, which runs in a batch
/// ([`crate::decode`]).
pub(crate) fn decode_prepare<B>(
    st: &mut State,
    board: &mut B,
    sqe: &proto::Sqe,
    c: &DecodeSubmit,
) -> Result<Admitted, Fail>
where
    B: HostInterface + Nand + Engine + Clock,
{
    let seq = st.sequences.get(c.seq)?;
    VendorCommand::DecodeSubmit(*c)
        .check_shape(&seq.shape)
        .map_err(proto_status)?;
    let layer = seq.layer(c.layer)?;
    let d = seq.d();
    let q_heads = seq.q_heads();
    let len = seq.len[layer];
    let append = c.flags.append_kv();
    let expected = if append {
        Some(len)
    } else {
        len.checked_sub(1)
    };
    if expected != Some(c.position) {
        return Err(Fail {
            status: Status::POSITION_MISMATCH,
            dw0: len,
        });
    }
    if append && len >= st.config.max_tokens_per_stream {
        return Err(Status::CAPACITY_EXCEEDED.into());
    }
    let method = match c.method {
        Method::DENSE => MethodParams::Dense,
        Method::SPARF => MethodParams::SparF(
            SparseParams {
                r: usize::from(c.r),
                k: c.k as usize,
                local: usize::from(c.local),
            },
            None,
        ),
        Method::PAGES => MethodParams::Pages(PagesParams {
            page_tokens: seq.page_index(layer, 0).page_tokens(),
            max_pages: c.k as usize,
            local_pages: usize::from(c.local),
            mass_milli: c.r,
            score: if c.flags.sketch() {
                match seq.shape.placement {
                    proto::Placement { sketch_bits: 0, .. } => {
                        return Err(Status::INVALID_FIELD.into());
                    }
                    p => PageScore::Sketch {
                        bits: p.sketch_bits,
                        shortlist: p.sketch_shortlist,
                        bound: p.shortlist_bound,
                    },
                }
            } else if c.flags.mean() {
                PageScore::Mean
            } else {
                PageScore::Bound
            },
            similar: seq.shape.placement.similar,
            fill: c.flags.fill(),
            sink: usize::from(seq.shape.placement.sink),
        }),
        _ => return Err(Status::UNSUPPORTED_METHOD.into()),
    };
    let rotated = seq.shape.rotated;
    let data = payload(board, st, sqe, c.ndt as usize * 4)?;
    // q, q̃ (rotated sparf), k/v/k̃ (APPEND_KV), the guard trailer (GUARD).
    let (body, trailer) = data.split_at(data.len() - if c.flags.guard() { 4 } else { 0 });
    let guard = if c.flags.guard() {
        let bytes: Vec<u8> = trailer.iter().flat_map(|x| x.to_le_bytes()).collect();
        let t = proto::GuardTrailer::parse(&bytes).map_err(proto_status)?;
        Some(Guard {
            alpha_min_milli: t.alpha_min_milli,
            k_cap: t.k_cap as usize,
        })
    } else {
        None
    };
    let (q, rest) = body.split_at(q_heads * d);
    let (q_approx, kv) = if rotated && matches!(method, MethodParams::SparF(..)) {
        let (qa, kv) = rest.split_at(q_heads * d);
        (Some(qa), kv)
    } else {
        (None, rest)
    };
    if append {
        append_tokens(board, st, c.seq, layer, 1, Rows::split(kv, rotated))?;
    }
    Ok(Admitted {
        seq: c.seq,
        layer,
        q: q.iter().map(|&x| model::fx(x)).collect(),
        q_approx: q_approx.map(|qa| qa.iter().map(|&x| model::fx(x)).collect()),
        method: match method {
            MethodParams::SparF(p, _) => MethodParams::SparF(p, guard),
            m => m,
        },
    })
}

fn decode_fetch<B>(st: &mut State, board: &mut B, sqe: &proto::Sqe, c: &DecodeFetch) -> Handled
where
    B: HostInterface + Nand + Engine + Clock,
{
    let seq = st.sequences.get(c.seq)?;
    VendorCommand::DecodeFetch(*c)
        .check_shape(&seq.shape)
        .map_err(proto_status)?;
    let layer = seq.layer(c.layer)?;
    let result = seq.results[layer]
        .as_ref()
        .ok_or(Status::RESULT_NOT_READY)?;
    let mut bytes = Vec::with_capacity(result.out.len() * 4 + DecodeReport::SIZE);
    for x in &result.out {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.extend_from_slice(&result.report.to_bytes());
    let max = st.config.mdts_bytes as usize;
    dma::to_host(board, sqe, &bytes, max)?;
    st.counters.pcie_out += bytes.len() as u64;
    // Only a delivered result is released: a failed transfer can be retried.
    st.sequences.get_mut(c.seq)?.results[layer] = None;
    Ok(0)
}
