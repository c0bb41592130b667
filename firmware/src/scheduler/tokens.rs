//! The exact-attention step over token pages: plan the K and V reads of
//! every head (skipping pages without a chosen token, filtering the rest to
//! the chosen rows), read them as one batch, feed K rows to the GeMV lanes
//! as they arrive and hold V rows in device DRAM (V loads while the lanes
//! work on K, as in InstInfer's engine), then softmax and weighted sum per
//! head.

use super::{Ctx, HeadCost, HeadJob, Scratch, ftl_err, le_u16, softmax_heads};
use crate::flash::{PageRead, read_pages};
use crate::hal::{Engine, LogitJob, Nand, RowFilter, WeightedSumJob};
use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;
use ftl::{Ftl, Kind};
use proto::Status;

/// Where the rows of one token set live, for one of K or V.
#[derive(Debug, Default)]
struct Plan {
    reads: Vec<PageRead>,
    /// Index in the selection of each read's first kept row.
    offsets: Vec<usize>,
    /// Rows still in DRAM: `(rows, index in the selection of the first)`.
    dram: Vec<(Vec<u16>, usize)>,
}

/// Plans the reads of the `kind` rows of the tokens in `sel` (ascending;
/// `None` = all `s` tokens).
fn plan(
    ftl: &Ftl,
    job: &HeadJob<'_>,
    kind: Kind,
    sel: Option<&[u32]>,
    cost: &mut HeadCost,
) -> Result<Plan, Status> {
    let d = job.d;
    let row_bytes = u16::try_from(d * 2).map_err(|_| Status::INTERNAL_ERROR)?;
    let t = ftl.tokens_per_page(job.stream).map_err(ftl_err)? as usize;
    let rows_per_page = u16::try_from(t).map_err(|_| Status::INTERNAL_ERROR)?;
    let mut plan = Plan::default();
    for gi in 0..job.s.div_ceil(t) {
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
                plan.reads.push(PageRead { ppa, filter });
                plan.offsets.push(first + start);
            }
        }
        if let Some((data, first_off, n)) = spans.dram {
            let (first_off, n) = (first_off as usize, n as usize);
            let start = next;
            let mut rows = Vec::new();
            while next < count && picked(next) - lo < first_off + n {
                let local = picked(next) - lo;
                if local >= first_off {
                    let r = local - first_off;
                    rows.extend_from_slice(
                        data.get(r * d..(r + 1) * d).ok_or(Status::INTERNAL_ERROR)?,
                    );
                }
                next += 1;
            }
            if !rows.is_empty() {
                plan.dram.push((rows, first + start));
            }
        }
        if next != count {
            // The FTL does not cover every token it reported stored.
            return Err(Status::INTERNAL_ERROR);
        }
    }
    Ok(plan)
}

/// One head's working set during the step. Value rows are summed as soon
/// as the head's probabilities exist (after its last key page), so the
/// weighted sum runs while other pages are still being read; rows that
/// arrive earlier wait in `values` (`pending` spans).
struct Head<'j> {
    job: &'j HeadJob<'j>,
    n: usize,
    scales: Vec<u32>,
    logits: Vec<i32>,
    values: Vec<u16>,
    /// Key pages of this head still to arrive.
    k_left: usize,
    probs: Option<Vec<u32>>,
    /// `(first row, rows)` of value rows stored while `probs` was `None`.
    pending: Vec<(usize, usize)>,
    acc: Vec<i64>,
}

impl Head<'_> {
    fn logits<B: Engine>(&mut self, board: &mut B, rows: &[u16], offset: usize) {
        board.logits(LogitJob {
            queries: self.job.q,
            scales: &self.scales,
            rows,
            width: self.job.d,
            out: &mut self.logits,
            out_stride: self.n,
            out_offset: offset,
        });
    }

    /// Value rows starting at token `offset`: summed now if the
    /// probabilities exist, kept for later otherwise.
    fn values<B: Engine>(
        &mut self,
        board: &mut B,
        rows: &[u16],
        offset: usize,
    ) -> Result<(), Status> {
        if let Some(probs) = &self.probs {
            board.weighted_sum(WeightedSumJob {
                probs,
                probs_stride: self.n,
                probs_offset: offset,
                rows,
                d: self.job.d,
                acc: &mut self.acc,
            });
            return Ok(());
        }
        let at = offset * self.job.d;
        self.values
            .get_mut(at..at + rows.len())
            .ok_or(Status::INTERNAL_ERROR)?
            .copy_from_slice(rows);
        self.pending.push((offset, rows.len() / self.job.d.max(1)));
        Ok(())
    }

    /// Every key row is in: softmax, then the value rows that waited.
    fn keys_done<B: Engine>(&mut self, board: &mut B) {
        let (g, d, n) = (self.job.g, self.job.d, self.n);
        let probs = softmax_heads(board, &self.logits, g, n);
        for &(off, rows) in &self.pending {
            board.weighted_sum(WeightedSumJob {
                probs: &probs,
                probs_stride: n,
                probs_offset: off,
                rows: &self.values[off * d..(off + rows) * d],
                d,
                acc: &mut self.acc,
            });
        }
        self.pending.clear();
        self.probs = Some(probs);
    }
}

/// Exact attention of every head over its selection (`None` = all
/// tokens); returns each head's `g × d` weighted-sum accumulators.
pub(super) fn attend<'j, B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    jobs: &'j [HeadJob<'j>],
    sels: &[Option<&[u32]>],
) -> Result<Vec<Vec<i64>>, Status> {
    let mut heads = Vec::with_capacity(jobs.len());
    // (head, is V, offset) of every read, K reads first.
    let mut route: Vec<(usize, bool, usize)> = Vec::new();
    let mut reads: Vec<PageRead> = Vec::new();
    let mut v_reads: Vec<PageRead> = Vec::new();
    let mut v_route = Vec::new();
    for (h, (job, &sel)) in jobs.iter().zip(sels).enumerate() {
        let n = sel.map_or(job.s, <[u32]>::len);
        let k = plan(cx.ftl, job, Kind::K, sel, cx.cost)?;
        let v = plan(cx.ftl, job, Kind::V, sel, cx.cost)?;
        let mut head = Head {
            job,
            n,
            scales: vec![model::dense_scale(job.d); job.g],
            logits: vec![0i32; job.g * n],
            values: vec![0u16; n * job.d],
            k_left: k.reads.len(),
            probs: None,
            pending: Vec::new(),
            acc: vec![0i64; job.g * job.d],
        };
        for (rows, off) in &k.dram {
            cx.counters.dram_tail_bytes += (rows.len() * 2) as u64;
            head.logits(cx.board, rows, *off);
        }
        if head.k_left == 0 {
            head.keys_done(cx.board);
        }
        for (rows, off) in &v.dram {
            cx.counters.dram_tail_bytes += (rows.len() * 2) as u64;
            head.values(cx.board, rows, *off)?;
        }
        route.extend(k.offsets.iter().map(|&o| (h, false, o)));
        reads.extend_from_slice(&k.reads);
        v_route.extend(v.offsets.iter().map(|&o| (h, true, o)));
        v_reads.extend_from_slice(&v.reads);
        heads.push(head);
    }
    route.extend(v_route);
    reads.extend(v_reads);
    let Scratch { page, rows } = &mut *cx.scratch;
    let cost = &mut *cx.cost;
    read_pages(cx.board, &reads, page, cx.counters, |b, i, bytes| {
        le_u16(bytes, rows);
        cost.pages_read += 1;
        cost.engine_bytes += bytes.len() as u64;
        let (h, is_v, off) = route[i];
        let head = &mut heads[h];
        if is_v {
            head.values(b, rows, off)
        } else {
            head.logits(b, rows, off);
            head.k_left -= 1;
            if head.k_left == 0 {
                head.keys_done(b);
            }
            Ok(())
        }
    })?;
    let mut accs = Vec::with_capacity(heads.len());
    for mut head in heads {
        if head.probs.is_none() {
            head.keys_done(cx.board);
        }
        accs.push(head.acc);
    }
    Ok(accs)
}
