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
//! Flash reads of all heads of the layer go out as one batch per step, so
//! every channel and way stays busy while the engine works head by head.
//!
//! Every arithmetic step is a building block of [`attention::engine`] in
//! the order of its whole-array model (logits are independent per token,
//! the weighted sum is exact integer addition), so the result is bit-exact
//! with `attention::engine::sparf_plus_group` / `sparf_group` /
//! `dense_group`.

mod dims;
mod tokens;

use crate::counters::Counters;
use crate::hal::{Engine, LogitJob, Nand};
use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;
use attention::shape::{Guard, SparseParams};
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

fn le_u16(bytes: &[u8], out: &mut Vec<u16>) {
    out.clear();
    out.extend(
        bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]])),
    );
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

/// Everything a step's flash work and engine work need.
pub(crate) struct Ctx<'a, B> {
    pub board: &'a mut B,
    pub ftl: &'a Ftl,
    pub scratch: &'a mut Scratch,
    pub counters: &'a mut Counters,
    pub cost: &'a mut HeadCost,
}

/// Decodes every head in `jobs` (one layer of one sequence); `method` is
/// `None` for dense, else SparF's parameters and its guardrail. Returns the
/// `[kv_head][g][d]` outputs.
pub(crate) fn decode_layer<B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    jobs: &[HeadJob<'_>],
    method: Option<(SparseParams, Option<Guard>)>,
) -> Result<Vec<i32>, Status> {
    let mut out = Vec::new();
    let Some((params, guard)) = method else {
        let sels = vec![None; jobs.len()];
        let accs = tokens::attend(cx, jobs, &sels)?;
        for (job, acc) in jobs.iter().zip(&accs) {
            let zeros = vec![0i32; job.d];
            finish(job, acc, &vec![model::P_ONE; job.g], &zeros, &mut out);
        }
        return Ok(out);
    };
    // Step 1: the r dims with the largest |q| summed over the group.
    let dims: Vec<Vec<u16>> = jobs
        .iter()
        .map(|job| select_dims(cx.board, job, params.r))
        .collect();
    // Steps 2-3: the chosen dims of every token from the dim pages.
    let columns = dims::read(cx, jobs, &dims)?;
    // Steps 4-7: approximate scores, top-k tokens, α per query head.
    let mut sels = Vec::with_capacity(jobs.len());
    let mut alphas = Vec::with_capacity(jobs.len());
    for ((job, dims), kd) in jobs.iter().zip(&dims).zip(&columns) {
        let (sel, alpha) = select_tokens(cx.board, job, dims, kd, params, guard);
        if sel.len() > params.k.min(job.s) {
            cx.cost.guard_widened += 1;
        }
        sels.push(sel);
        alphas.push(alpha);
    }
    // Steps 8-11: exact attention on the chosen tokens, blended with v̄.
    let sel_refs: Vec<Option<&[u32]>> = sels.iter().map(|s| Some(s.as_slice())).collect();
    let accs = tokens::attend(cx, jobs, &sel_refs)?;
    for ((job, acc), alpha) in jobs.iter().zip(&accs).zip(&alphas) {
        let mut vmean = vec![0i32; job.d];
        model::vmean(job.vsum, job.s as u64, &mut vmean);
        finish(job, acc, alpha, &vmean, &mut out);
    }
    Ok(out)
}

fn finish(job: &HeadJob<'_>, acc: &[i64], alphas: &[u32], vmean: &[i32], out: &mut Vec<i32>) {
    let d = job.d;
    let at = out.len();
    out.resize(at + job.g * d, 0);
    for ((o, a), &alpha) in out[at..]
        .chunks_exact_mut(d)
        .zip(acc.chunks_exact(d))
        .zip(alphas)
    {
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
