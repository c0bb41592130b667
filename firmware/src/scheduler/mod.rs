//! The engine scheduler: which pages to read, with which filters, and what
//! the engine does with them, for every KV head of one layer's decode step.
//!
//! Dense: every K and V token page (K rows → GeMV logits as they arrive,
//! V rows held in device DRAM) → softmax → weighted value sum. SparF
//! (InstInfer Algorithm 1): argtopk over |q| (summed over the query group)
//! picks r dims; only dim pages holding a chosen dim are read (page skip)
//! and their NFC filter keeps only the chosen dim rows (element filter);
//! approximate scores → softmax → top-k tokens (the last `local` always);
//! only token pages holding a chosen token are read, filtered to the chosen
//! rows; exact attention on them, blended with the mean value by α.
//!
//! SparF+ changes two things and no arithmetic: in a rotated sequence the
//! dims and approximate scores come from q̃ (`HeadJob::q_approx`) over the
//! dim-indexed copy, which the FTL wrote from K̃; and with the guardrail
//! the top-k reruns with a doubled k while the group's smallest α is low
//! (`attention::engine::select_guarded_with` on the argtopk unit).
//!
//! # Pipelining
//!
//! [`decode_batch`] runs every KV head of many commands (sequences ×
//! layers) at once, each head on its own: a SparF head's dim reads go out
//! when the batch starts, its selection runs as soon as its last dim page
//! has arrived, and its token reads go out right after, while other heads'
//! dim reads and selections go on; dense heads' K and V pages are consumed
//! as they arrive. One read queue per die feeds the NAND controllers as
//! deep as they take, token pages and dim pages in turns ([`crate::reads`]),
//! so the arrays and buses stay busy while the engine works. While the
//! heads start, reads that have already finished are taken between one
//! head and the next whenever reads wait for a full die queue
//! ([`crate::hal::Nand::poll_done`]: nothing is waited for): a PAGES head
//! chooses its pages on the engine before its reads go out, and without
//! this the dies' queues stayed full of pages nobody had taken until every
//! head had chosen (on the paper's board at 1/8 that step fell from
//! 0.23–0.24× of dense's to 0.18×).
//!
//! Every arithmetic step is a building block of [`attention::engine`] in
//! the order of its whole-array model (logits are independent per token,
//! the weighted sum is exact integer addition), so the result is bit-exact
//! with `attention::engine::sparf_plus_group` / `sparf_group` /
//! `dense_group`.

mod dims;
mod pages;
mod tokens;

use crate::counters::Counters;
use crate::hal::{Engine, LogitJob, Nand};
use crate::pages::PageIndex;
use crate::reads::{Arrival, ReadQueue};
use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;
use attention::shape::{Guard, PagesParams, SparseParams};
use ftl::{Ftl, StreamId};
use proto::Status;

/// One KV head's decode.
#[derive(Debug)]
pub(crate) struct HeadJob<'a> {
    pub stream: StreamId,
    /// Tokens stored (all are attended).
    pub s: usize,
    /// Query heads on this KV head.
    pub g: usize,
    pub d: usize,
    /// `g × d` fixed-point queries.
    pub q: &'a [i32],
    /// The same queries for SparF's approximate stage: `q` itself, or q̃
    /// in the basis of a rotated sequence's dim-indexed copy.
    pub q_approx: &'a [i32],
    /// Running value sum of the stream.
    pub vsum: &'a [i64],
    /// The stream's PAGES index (summaries, pinned sinks).
    pub index: &'a PageIndex,
}

/// What a decode step cost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HeadCost {
    pub pages_read: u64,
    pub pages_skipped: u64,
    pub engine_bytes: u64,
    pub elements_filtered: u64,
    /// KV heads whose k the guardrail widened.
    pub guard_widened: u64,
}

/// Working buffers reused across commands (device DRAM).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub page: Vec<u8>,
    rows: Vec<u16>,
}

fn ftl_err(e: ftl::FtlError) -> Status {
    crate::error::ftl_status(e)
}

fn softmax_heads<B: Engine>(board: &mut B, logits: &[i32], g: usize, n: usize) -> Vec<u32> {
    let mut probs = vec![0u32; g * n];
    if n > 0 {
        for (l, p) in logits.chunks_exact(n).zip(probs.chunks_exact_mut(n)) {
            board.softmax(l, p);
        }
    }
    probs
}

/// Everything a batch's flash work and engine work need.
pub(crate) struct Ctx<'a, B> {
    pub board: &'a mut B,
    pub ftl: &'a Ftl,
    pub scratch: &'a mut Scratch,
    pub counters: &'a mut Counters,
}

/// What a decode command runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MethodParams {
    /// Every token.
    Dense,
    /// SparF (and SparF+) with its guardrail, if any.
    SparF(SparseParams, Option<Guard>),
    /// The flash-aware page selection.
    Pages(PagesParams),
}

/// One decode command: every KV head of one layer of one sequence.
#[derive(Debug)]
pub(crate) struct Command<'a> {
    pub jobs: Vec<HeadJob<'a>>,
    pub method: MethodParams,
}

/// A command's `[kv_head][g][d]` outputs and what they cost.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub out: Vec<i32>,
    pub cost: HeadCost,
}

/// What a read in the queue brings, for which head.
#[derive(Clone, Copy, Debug)]
enum Route {
    Dims(usize, dims::Dest),
    Tokens(usize, tokens::Rows),
}

impl Route {
    fn head(self) -> usize {
        match self {
            Self::Dims(h, _) | Self::Tokens(h, _) => h,
        }
    }
}

/// Where a head is.
enum Stage<'j> {
    /// SparF step 2-3: the chosen dims' rows (`s × r`) fill in.
    Dims {
        dims: Vec<u16>,
        rows: Vec<u16>,
        left: usize,
    },
    /// Exact attention over the chosen (or all) tokens.
    Tokens(tokens::Head<'j>),
    /// Output written (or its command failed).
    Done,
}

/// One KV head of one command.
struct Run<'j> {
    cmd: usize,
    job: &'j HeadJob<'j>,
    stage: Stage<'j>,
    /// SparF's α per query head (empty for dense).
    alpha: Vec<u32>,
    /// Where the head's `g × d` outputs go in its command's.
    out_at: usize,
}

/// A command while it runs.
struct CmdState {
    method: MethodParams,
    out: Vec<i32>,
    cost: HeadCost,
    failed: Option<Status>,
}

/// Decodes every command of `cmds` with all their heads in flight at once;
/// returns each command's outputs, or the status it failed with (a failed
/// command does not stop the others).
pub(crate) fn decode_batch<B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    cmds: &[Command<'_>],
) -> Vec<Result<Decoded, Status>> {
    let mut progress: Vec<CmdState> = cmds
        .iter()
        .map(|c| CmdState {
            method: c.method,
            out: vec![0; c.jobs.iter().map(|j| j.g * j.d).sum()],
            cost: HeadCost::default(),
            failed: None,
        })
        .collect();
    let mut runs: Vec<Run<'_>> = Vec::new();
    for (c, cmd) in cmds.iter().enumerate() {
        let mut out_at = 0;
        for job in &cmd.jobs {
            runs.push(Run {
                cmd: c,
                job,
                stage: Stage::Done,
                alpha: Vec::new(),
                out_at,
            });
            out_at += job.g * job.d;
        }
    }
    let mut queue = ReadQueue::new();
    if let Err(e) = run(cx, &mut runs, &mut progress, &mut queue) {
        // The board failed under the batch: every command fails, and
        // nothing stays in flight for the next one.
        let Scratch { page, .. } = &mut *cx.scratch;
        while cx.board.in_flight() > 0 && nb::block!(cx.board.poll(page)).is_ok() {}
        for p in &mut progress {
            p.failed.get_or_insert(e);
        }
    }
    progress
        .into_iter()
        .map(|p| match p.failed {
            Some(e) => Err(e),
            None => Ok(Decoded {
                out: p.out,
                cost: p.cost,
            }),
        })
        .collect()
}

/// Starts every head, then routes page arrivals until the queue is idle.
/// An error here is the board's, not one command's.
fn run<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    runs: &mut [Run<'j>],
    progress: &mut [CmdState],
    queue: &mut ReadQueue<Route>,
) -> Result<(), Status> {
    // The page buffer and row buffer leave the scratch while the engine
    // work (which borrows the context) runs on their contents.
    let mut page = core::mem::take(&mut cx.scratch.page);
    let mut rows = core::mem::take(&mut cx.scratch.rows);
    let r = route_all(cx, runs, progress, queue, &mut page, &mut rows);
    cx.scratch.page = page;
    cx.scratch.rows = rows;
    r
}

fn route_all<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    runs: &mut [Run<'j>],
    progress: &mut [CmdState],
    queue: &mut ReadQueue<Route>,
    page: &mut [u8],
    rows: &mut Vec<u16>,
) -> Result<(), Status> {
    for h in 0..runs.len() {
        let c = runs[h].cmd;
        if let Err(e) = start(cx, h, &mut runs[h], &mut progress[c], queue) {
            fail(&mut progress[c], e);
        }
        queue.pump(cx.board)?;
        // Reads that finished while this head started (its selection kept
        // the engine, and the core, busy) are taken now, so that their
        // dies' queues make room for the next heads' reads; none is waited
        // for.
        while queue.waiting()
            && let Some(arrival) = queue.ready(cx.board, page, cx.counters)?
        {
            on_arrival(cx, runs, progress, queue, arrival, page, rows);
        }
    }
    while let Some(arrival) = queue.next(cx.board, page, cx.counters)? {
        on_arrival(cx, runs, progress, queue, arrival, page, rows);
    }
    Ok(())
}

/// Routes one arrival to its head; a failure fails the head's command.
fn on_arrival<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    runs: &mut [Run<'j>],
    progress: &mut [CmdState],
    queue: &mut ReadQueue<Route>,
    arrival: Arrival<Route>,
    page: &[u8],
    rows: &mut Vec<u16>,
) {
    let (route, len) = match arrival {
        Arrival::Failed(route) => {
            fail(&mut progress[runs[route.head()].cmd], Status::MEDIA_ERROR);
            return;
        }
        Arrival::Data { token, len } => (token, len),
    };
    let h = route.head();
    let c = runs[h].cmd;
    if progress[c].failed.is_some() {
        return;
    }
    let p = &mut progress[c];
    p.cost.pages_read += 1;
    p.cost.engine_bytes += len as u64;
    let r = arrived(cx, route, &page[..len], rows, &mut runs[h], p, queue);
    if let Err(e) = r {
        fail(p, e);
    }
}

fn fail(p: &mut CmdState, e: Status) {
    p.failed.get_or_insert(e);
}

/// A head's first step: dense plans its token reads; SparF picks its
/// dims and plans their reads.
fn start<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    h: usize,
    run: &mut Run<'j>,
    p: &mut CmdState,
    queue: &mut ReadQueue<Route>,
) -> Result<(), Status> {
    if p.failed.is_some() {
        return Ok(());
    }
    let job = run.job;
    match p.method {
        MethodParams::Dense => tokens_stage(cx, h, run, p, queue, tokens::Selection::ALL),
        MethodParams::Pages(params) => {
            let c = pages::select_pages(cx.board, job, params)?;
            let ix = job.index;
            let d = job.d;
            let pinned =
                (c.pinned > 0).then(|| (&ix.sink_k[..c.pinned * d], &ix.sink_v[..c.pinned * d]));
            let virt = c.virt.as_ref().map(|(k, v, ln)| (&k[..], &v[..], &ln[..]));
            let which = tokens::Selection {
                sel: Some(&c.sel),
                pinned,
                virt,
            };
            tokens_stage(cx, h, run, p, queue, which)
        }
        MethodParams::SparF(params, _) => {
            // Step 1: the r dims with the largest |q| summed over the group.
            let dims = select_dims(cx.board, job, params.r);
            // Steps 2-3: their rows for every token, from the dim pages.
            let (rows, reads) = dims::plan(cx.ftl, job, &dims, &mut p.cost, cx.counters)?;
            let left = reads.len();
            for (read, dest) in reads {
                queue.push(read, Route::Dims(h, dest), false)?;
            }
            run.stage = Stage::Dims { dims, rows, left };
            if left == 0 {
                select(cx, h, run, p, queue)?;
            }
            Ok(())
        }
    }
}

/// Steps 4-7 on a head whose dim rows are all in, then its token reads.
fn select<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    h: usize,
    run: &mut Run<'j>,
    p: &mut CmdState,
    queue: &mut ReadQueue<Route>,
) -> Result<(), Status> {
    let MethodParams::SparF(params, guard) = p.method else {
        return Err(Status::INTERNAL_ERROR);
    };
    let Stage::Dims { dims, rows, .. } = core::mem::replace(&mut run.stage, Stage::Done) else {
        return Err(Status::INTERNAL_ERROR);
    };
    let job = run.job;
    let (sel, alpha) = select_tokens(cx.board, job, &dims, &rows, params, guard);
    if sel.len() > params.k.min(job.s) {
        p.cost.guard_widened += 1;
    }
    run.alpha = alpha;
    let which = tokens::Selection {
        sel: Some(&sel),
        ..tokens::Selection::ALL
    };
    tokens_stage(cx, h, run, p, queue, which)
}

/// Steps 8-11 (or dense): plans the head's token reads over `which`.
fn tokens_stage<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    h: usize,
    run: &mut Run<'j>,
    p: &mut CmdState,
    queue: &mut ReadQueue<Route>,
    which: tokens::Selection<'_>,
) -> Result<(), Status> {
    let (head, reads) =
        tokens::Head::start(cx.board, cx.ftl, run.job, which, &mut p.cost, cx.counters)?;
    for (read, what) in reads {
        queue.push(read, Route::Tokens(h, what), true)?;
    }
    run.stage = Stage::Tokens(head);
    finish_if_complete(run, p);
    Ok(())
}

/// One page of head `run` arrived.
fn arrived<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    route: Route,
    bytes: &[u8],
    buf: &mut Vec<u16>,
    run: &mut Run<'j>,
    p: &mut CmdState,
    queue: &mut ReadQueue<Route>,
) -> Result<(), Status> {
    match (route, &mut run.stage) {
        (Route::Dims(h, dest), Stage::Dims { dims, rows, left }) => {
            dims::fill(rows, dims.len(), dest, bytes)?;
            *left = left.checked_sub(1).ok_or(Status::INTERNAL_ERROR)?;
            if *left == 0 {
                select(cx, h, run, p, queue)?;
            }
            Ok(())
        }
        (Route::Tokens(_, what), Stage::Tokens(head)) => {
            le_u16(bytes, buf);
            head.arrived(cx.board, what, buf)?;
            finish_if_complete(run, p);
            Ok(())
        }
        _ => Err(Status::INTERNAL_ERROR),
    }
}

/// Writes a head's outputs once all its pages are in.
fn finish_if_complete(run: &mut Run<'_>, p: &mut CmdState) {
    if !matches!(&run.stage, Stage::Tokens(head) if head.complete()) {
        return;
    }
    let Stage::Tokens(head) = core::mem::replace(&mut run.stage, Stage::Done) else {
        return;
    };
    let job = run.job;
    let acc = head.into_acc();
    let mut vmean = vec![0i32; job.d];
    let alpha = if run.alpha.is_empty() {
        vec![model::P_ONE; job.g]
    } else {
        model::vmean(job.vsum, job.s as u64, &mut vmean);
        core::mem::take(&mut run.alpha)
    };
    let out = &mut p.out[run.out_at..run.out_at + job.g * job.d];
    finish(job, &acc, &alpha, &vmean, out);
}

fn le_u16(bytes: &[u8], out: &mut Vec<u16>) {
    out.clear();
    out.extend(
        bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]])),
    );
}

fn finish(job: &HeadJob<'_>, acc: &[i64], alphas: &[u32], vmean: &[i32], out: &mut [i32]) {
    let d = job.d;
    for ((o, a), &alpha) in out.chunks_exact_mut(d).zip(acc.chunks_exact(d)).zip(alphas) {
        model::finish(a, alpha, vmean, o);
    }
}

/// SparF step 1 on the argtopk unit.
fn select_dims<B: Engine>(board: &mut B, job: &HeadJob<'_>, r: usize) -> Vec<u16> {
    let (g, d) = (job.g, job.d);
    let keys: Vec<u64> = (0..d)
        .map(|i| {
            (0..g)
                .map(|h| u64::from(job.q_approx[h * d + i].unsigned_abs()))
                .sum()
        })
        .collect();
    let mut picked = Vec::new();
    board.argtopk(&keys, r, &mut picked);
    picked.iter().map(|&i| i as u16).collect()
}

/// SparF steps 4-7 for one head: approximate logits over the chosen dims
/// (`kd` is `s × r`), softmax per query head, top-k tokens over the group
/// sum plus the local window, α per query head; the guardrail reruns the
/// top-k with a wider k while α is low.
fn select_tokens<B: Engine>(
    board: &mut B,
    job: &HeadJob<'_>,
    dims: &[u16],
    kd: &[u16],
    params: SparseParams,
    guard: Option<Guard>,
) -> (Vec<u32>, Vec<u32>) {
    let (s, g, d, r) = (job.s, job.g, job.d, dims.len());
    let mut q_r = vec![0i32; g * r];
    let mut scales = vec![0u32; g];
    for h in 0..g {
        let q_h = &job.q_approx[h * d..(h + 1) * d];
        for (k, &dim) in dims.iter().enumerate() {
            q_r[h * r + k] = q_h[usize::from(dim)];
        }
        scales[h] = model::approx_scale(q_h, dims);
    }
    let mut approx = vec![0i32; g * s];
    board.logits(LogitJob {
        queries: &q_r,
        scales: &scales,
        rows: kd,
        width: r,
        out: &mut approx,
        out_stride: s,
        out_offset: 0,
    });
    let probs = softmax_heads(board, &approx, g, s);
    let mut keys = Vec::new();
    model::token_keys(&probs, g, s, params.local, &mut keys);
    model::select_guarded_with(&keys, &probs, s, params.k, guard, |keys, k, out| {
        board.argtopk(keys, k, out)
    })
}
