//! The engine scheduler: which pages to read, with which filters, and what
//! the engine does with them, for one KV head of one decode step.
//!
//! Dense: stream every K page (logits), softmax, stream every V page
//! (weighted sum). SparF (InstInfer Algorithm 1): argtopk over |q| picks r
//! dims; only dim pages holding a chosen dim are read (page-level skip) and
//! their NFC filter keeps only the chosen dim rows (element-level filter);
//! approximate scores → softmax → top-k tokens (plus the `local` most recent);
//! only token pages holding a chosen token are read, filtered to the chosen
//! rows; exact attention on them, blended with the mean value by α.
//!
//! Every arithmetic step is a building block of [`attention::engine`], in
//! the same order as its whole-array model, so the result is bit-exact with
//! `attention::engine::sparf_group` / `dense_group`.

use crate::flash::{PageRead, read_pages};
use crate::hal::{Engine, LogitJob, Nand, RowFilter, WeightedSumJob};
use crate::stats::Counters;
use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;
use attention::shape::SparseParams;
use ftl::{Ftl, Kind, StreamId};
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
    /// Running value sum of the stream.
    pub vsum: &'a [i64],
}

/// What one head's decode cost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HeadCost {
    pub pages_read: u64,
    pub pages_skipped: u64,
    pub engine_bytes: u64,
    pub elements_filtered: u64,
}

/// Working buffers reused across heads (device DRAM).
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

/// Streams the `kind` rows of the tokens in `sel` (ascending; `None` = all
/// `s` tokens) to `f(board, rows, index of the first row in sel)`: flash
/// pages through filtered reads, tokens still in DRAM directly.
#[allow(clippy::too_many_arguments)]
fn token_pass<B: Nand + Engine>(
    board: &mut B,
    ftl: &Ftl,
    job: &HeadJob<'_>,
    kind: Kind,
    sel: Option<&[u32]>,
    scratch: &mut Scratch,
    counters: &mut Counters,
    cost: &mut HeadCost,
    mut f: impl FnMut(&mut B, &[u16], usize),
) -> Result<(), Status> {
    let d = job.d;
    let row_bytes = u16::try_from(d * 2).map_err(|_| Status::INTERNAL_ERROR)?;
    let t = ftl.tokens_per_page(job.stream).map_err(ftl_err)? as usize;
    let rows_per_page = u16::try_from(t).map_err(|_| Status::INTERNAL_ERROR)?;
    let groups = job.s.div_ceil(t);
    let mut reads: Vec<PageRead> = Vec::new();
    let mut offsets: Vec<usize> = Vec::new();
    let mut gathered: Vec<u16> = Vec::new();
    for gi in 0..groups {
        let lo = gi * t;
        let hi = ((gi + 1) * t).min(job.s);
        // Selected tokens of this group, as a range of `sel`.
        let (first, count) = match sel {
            None => (lo, hi - lo),
            Some(sel) => {
                let a = sel.partition_point(|&x| (x as usize) < lo);
                let b = sel.partition_point(|&x| (x as usize) < hi);
                (a, b - a)
            }
        };
        let picked = |i: usize| -> usize {
            match sel {
                None => lo + i,
                Some(sel) => sel[first + i] as usize,
            }
        };
        let spans = ftl
            .token_group(job.stream, kind, gi as u32)
            .map_err(ftl_err)?;
        let mut next = 0;
        if let Some((ppa, n_flash)) = spans.flash {
            let n_flash = n_flash as usize;
            let mut filter = RowFilter::none(rows_per_page, row_bytes);
            let start = next;
            while next < count && picked(next) - lo < n_flash {
                filter.keep((picked(next) - lo) as u16);
                next += 1;
            }
            let kept = next - start;
            if kept == 0 {
                cost.pages_skipped += 1;
            } else {
                cost.elements_filtered += ((n_flash - kept) * d) as u64;
                reads.push(PageRead { ppa, filter });
                offsets.push(first + start);
            }
        }
        if let Some((data, first_off, n)) = spans.dram {
            let (first_off, n) = (first_off as usize, n as usize);
            let start = next;
            gathered.clear();
            while next < count && picked(next) - lo < first_off + n {
                let local = picked(next) - lo;
                if local >= first_off {
                    let r = local - first_off;
                    gathered.extend_from_slice(&data[r * d..(r + 1) * d]);
                }
                next += 1;
            }
            if !gathered.is_empty() {
                counters.dram_tail_bytes += (gathered.len() * 2) as u64;
                f(board, &gathered, first + start);
            }
        }
        if next != count {
            // The FTL does not cover every token it reported stored.
            return Err(Status::INTERNAL_ERROR);
        }
    }
    let Scratch { page, rows } = scratch;
    read_pages(board, &reads, page, counters, |b, i, bytes| {
        le_u16(bytes, rows);
        cost.pages_read += 1;
        cost.engine_bytes += bytes.len() as u64;
        f(b, rows, offsets[i]);
        Ok(())
    })
}

/// Dense attention of one KV head; returns `g × d` outputs.
pub(crate) fn dense<B: Nand + Engine>(
    board: &mut B,
    ftl: &Ftl,
    job: &HeadJob<'_>,
    scratch: &mut Scratch,
    counters: &mut Counters,
    cost: &mut HeadCost,
) -> Result<Vec<i32>, Status> {
    let (s, g, d) = (job.s, job.g, job.d);
    let scales = vec![model::dense_scale(d); g];
    let mut logits = vec![0i32; g * s];
    token_pass(
        board,
        ftl,
        job,
        Kind::K,
        None,
        scratch,
        counters,
        cost,
        |b, rows, off| {
            b.logits(LogitJob {
                queries: job.q,
                scales: &scales,
                rows,
                width: d,
                out: &mut logits,
                out_stride: s,
                out_offset: off,
            })
        },
    )?;
    let probs = softmax_heads(board, &logits, g, s);
    let mut acc = vec![0i64; g * d];
    token_pass(
        board,
        ftl,
        job,
        Kind::V,
        None,
        scratch,
        counters,
        cost,
        |b, rows, off| {
            b.weighted_sum(WeightedSumJob {
                probs: &probs,
                probs_stride: s,
                probs_offset: off,
                rows,
                d,
                acc: &mut acc,
            })
        },
    )?;
    let zeros = vec![0i32; d];
    let mut out = vec![0i32; g * d];
    for h in 0..g {
        model::finish(
            &acc[h * d..(h + 1) * d],
            model::P_ONE,
            &zeros,
            &mut out[h * d..(h + 1) * d],
        );
    }
    Ok(out)
}

fn softmax_heads<B: Engine>(board: &mut B, logits: &[i32], g: usize, n: usize) -> Vec<u32> {
    let mut probs = vec![0u32; g * n];
    for h in 0..g {
        board.softmax(&logits[h * n..(h + 1) * n], &mut probs[h * n..(h + 1) * n]);
    }
    probs
}

/// SparF's first step: the chosen dims of every token, read from the dim
/// pages, as `s × r` rows.
#[allow(clippy::too_many_arguments)]
fn dim_columns<B: Nand + Engine>(
    board: &mut B,
    ftl: &Ftl,
    job: &HeadJob<'_>,
    dims: &[u16],
    scratch: &mut Scratch,
    counters: &mut Counters,
    cost: &mut HeadCost,
) -> Result<Vec<u16>, Status> {
    let (s, d) = (job.s, job.d);
    let shape = ftl.shape(job.stream).map_err(ftl_err)?;
    let m = usize::from(shape.dim_group);
    let n_run = ftl.tokens_per_dim_page(job.stream).map_err(ftl_err)? as usize;
    let runs = s.div_ceil(n_run);
    let r = dims.len();
    let mut rows = vec![0u16; s * r];
    let mut reads: Vec<PageRead> = Vec::new();
    // (first dim index in `dims`, chosen local dims count, run) per read.
    let mut meta: Vec<(usize, usize, usize, usize)> = Vec::new();
    let row_bytes = u16::try_from(n_run * 2).map_err(|_| Status::INTERNAL_ERROR)?;
    for b in 0..d / m {
        let lo = dims.partition_point(|&x| usize::from(x) < b * m);
        let hi = dims.partition_point(|&x| usize::from(x) < (b + 1) * m);
        for t in 0..runs {
            let spans = ftl
                .dim_run(job.stream, b as u32, t as u32)
                .map_err(ftl_err)?;
            if lo == hi {
                if spans.flash.is_some() {
                    cost.pages_skipped += 1;
                }
                continue;
            }
            let base = t * n_run;
            if let Some((ppa, p)) = spans.flash {
                let p = p as usize;
                let mut filter = RowFilter::none(m as u16, row_bytes);
                filter.keep_bytes = (p * 2) as u16;
                for &dim in &dims[lo..hi] {
                    filter.keep((usize::from(dim) - b * m) as u16);
                }
                cost.elements_filtered += ((m - (hi - lo)) * p) as u64;
                reads.push(PageRead { ppa, filter });
                meta.push((lo, hi - lo, base, p));
            }
            if let Some((data, first_off, n)) = spans.dram {
                let (first_off, n) = (first_off as usize, n as usize);
                for (k, &dim) in dims[lo..hi].iter().enumerate() {
                    let local = usize::from(dim) - b * m;
                    for i in 0..n {
                        rows[(base + first_off + i) * r + lo + k] = data[local * n + i];
                    }
                }
                counters.dram_tail_bytes += ((hi - lo) * n * 2) as u64;
            }
        }
    }
    let Scratch { page, .. } = scratch;
    read_pages(board, &reads, page, counters, |_, i, bytes| {
        let (lo, count, base, p) = meta[i];
        if bytes.len() != count * p * 2 {
            return Err(Status::INTERNAL_ERROR);
        }
        for k in 0..count {
            for j in 0..p {
                let at = (k * p + j) * 2;
                rows[(base + j) * r + lo + k] = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
            }
        }
        cost.pages_read += 1;
        cost.engine_bytes += bytes.len() as u64;
        Ok(())
    })?;
    Ok(rows)
}

/// SparF attention of one KV head; returns `g × d` outputs.
pub(crate) fn sparf<B: Nand + Engine>(
    board: &mut B,
    ftl: &Ftl,
    job: &HeadJob<'_>,
    params: SparseParams,
    scratch: &mut Scratch,
    counters: &mut Counters,
    cost: &mut HeadCost,
) -> Result<Vec<i32>, Status> {
    let (s, g, d) = (job.s, job.g, job.d);
    // Step 1: the r dims with the largest |q| summed over the group.
    let mut keys: Vec<u64> = (0..d)
        .map(|i| {
            (0..g)
                .map(|h| u64::from(job.q[h * d + i].unsigned_abs()))
                .sum()
        })
        .collect();
    let mut picked = Vec::new();
    board.argtopk(&keys, params.r, &mut picked);
    let dims: Vec<u16> = picked.iter().map(|&i| i as u16).collect();
    let r = dims.len();
    // Step 2-4: approximate scores from the dim pages.
    let kd = dim_columns(board, ftl, job, &dims, scratch, counters, cost)?;
    let mut q_r = vec![0i32; g * r];
    let mut scales = vec![0u32; g];
    for h in 0..g {
        let q_h = &job.q[h * d..(h + 1) * d];
        for (k, &dim) in dims.iter().enumerate() {
            q_r[h * r + k] = q_h[usize::from(dim)];
        }
        scales[h] = model::approx_scale(q_h, &dims);
    }
    let mut approx = vec![0i32; g * s];
    board.logits(LogitJob {
        queries: &q_r,
        scales: &scales,
        rows: &kd,
        width: r,
        out: &mut approx,
        out_stride: s,
        out_offset: 0,
    });
    let probs = softmax_heads(board, &approx, g, s);
    // Step 5-7: top-k tokens (the last `local` always), α per head.
    model::token_keys(&probs, g, s, params.local, &mut keys);
    let mut sel = Vec::new();
    board.argtopk(&keys, params.k, &mut sel);
    let alphas: Vec<u32> = (0..g)
        .map(|h| model::alpha(&probs[h * s..(h + 1) * s], &sel, s))
        .collect();
    // Step 8-11: exact attention on the chosen tokens.
    let n = sel.len();
    let dense_scales = vec![model::dense_scale(d); g];
    let mut logits = vec![0i32; g * n];
    token_pass(
        board,
        ftl,
        job,
        Kind::K,
        Some(&sel),
        scratch,
        counters,
        cost,
        |b, rows, off| {
            b.logits(LogitJob {
                queries: job.q,
                scales: &dense_scales,
                rows,
                width: d,
                out: &mut logits,
                out_stride: n,
                out_offset: off,
            })
        },
    )?;
    let p = softmax_heads(board, &logits, g, n);
    let mut acc = vec![0i64; g * d];
    token_pass(
        board,
        ftl,
        job,
        Kind::V,
        Some(&sel),
        scratch,
        counters,
        cost,
        |b, rows, off| {
            b.weighted_sum(WeightedSumJob {
                probs: &p,
                probs_stride: n,
                probs_offset: off,
                rows,
                d,
                acc: &mut acc,
            })
        },
    )?;
    let mut vmean = vec![0i32; d];
    model::vmean(job.vsum, s as u64, &mut vmean);
    let mut out = vec![0i32; g * d];
    for h in 0..g {
        model::finish(
            &acc[h * d..(h + 1) * d],
            alphas[h],
            &vmean,
            &mut out[h * d..(h + 1) * d],
        );
    }
    Ok(out)
}
