//! The exact-attention step over token pages of one head: plan its K and V
//! reads (skipping pages without a chosen token, filtering the rest to the
//! chosen rows), feed K rows to the GeMV lanes as they arrive and hold V
//! rows in device DRAM until the head's probabilities exist (V loads while
//! the lanes work on K, as in InstInfer's engine), then softmax and
//! weighted sum.

use super::{HeadCost, HeadJob, ftl_err, softmax_heads};
use crate::counters::Counters;
use crate::flash::PageRead;
use crate::hal::{Engine, LogitJob, RowFilter, WeightedSumJob};
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
/// `None` = all `s` tokens); offsets count from `base` (the selection's
/// entries before `sel`, served from elsewhere).
fn plan(
    ftl: &Ftl,
    job: &HeadJob<'_>,
    kind: Kind,
    sel: Option<&[u32]>,
    base: usize,
    cost: &mut HeadCost,
) -> Result<Plan, Status> {
    let d = job.d;
    let row_bytes = u16::try_from(d * 2).map_err(|_| Status::INTERNAL_ERROR)?;
    let t = ftl.tokens_per_page(job.stream).map_err(ftl_err)? as usize;
    let rows_per_page = u16::try_from(t).map_err(|_| Status::INTERNAL_ERROR)?;
    let mut plan = Plan::default();
    // At most one read per page group: reserved once, so the list never
    // moves while it grows.
    let groups = job.s.div_ceil(t);
    plan.reads.reserve(groups);
    plan.offsets.reserve(groups);
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
                plan.reads.push(PageRead { ppa, filter });
                plan.offsets.push(base + first + start);
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
                plan.dram.push((rows, base + first + start));
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
pub(super) struct Head<'j> {
    job: &'j HeadJob<'j>,
    n: usize,
    scales: Vec<u32>,
    logits: Vec<i32>,
    values: Vec<u16>,
    /// Key pages of this head still to arrive.
    k_left: usize,
    /// Value pages of this head still to arrive.
    v_left: usize,
    probs: Option<Vec<u32>>,
    /// `(first row, rows)` of value rows stored while `probs` was `None`.
    pending: Vec<(usize, usize)>,
    acc: Vec<i64>,
}

/// The tokens of an exact pass: `sel` (ascending; `None` = all), whose
/// first entries may be `pinned` rows (K, V) already in device DRAM (the
/// PAGES method's sinks).
/// `virt` are stand-ins that join the softmax after the selection: mean
/// key rows, mean value rows and a logit offset each (PAGES with fill).
#[derive(Clone, Copy, Debug)]
pub(super) struct Selection<'a> {
    pub sel: Option<&'a [u32]>,
    pub pinned: Option<(&'a [u16], &'a [u16])>,
    pub virt: Option<(&'a [u16], &'a [u16], &'a [i32])>,
}

impl Selection<'_> {
    /// Every token, nothing pinned, no stand-ins (dense).
    pub const ALL: Selection<'static> = Selection {
        sel: None,
        pinned: None,
        virt: None,
    };
}

/// Which rows a token-page read carries: K or V, from this index of the
/// selection on.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rows {
    pub is_v: bool,
    pub offset: usize,
}

impl<'j> Head<'j> {
    /// Plans the head's K and V reads over `sel` (ascending; `None` = all
    /// tokens), consumes the rows still in DRAM at once, and returns the
    /// head with the page reads it waits for.
    pub fn start<B: Engine>(
        board: &mut B,
        ftl: &Ftl,
        job: &'j HeadJob<'j>,
        which: Selection<'_>,
        cost: &mut HeadCost,
        counters: &mut Counters,
    ) -> Result<(Self, Vec<(PageRead, Rows)>), Status> {
        let Selection { sel, pinned, virt } = which;
        let real = sel.map_or(job.s, <[u32]>::len);
        let n = real + virt.map_or(0, |(_, _, ln)| ln.len());
        let skip = pinned.map_or(0, |(k, _)| k.len() / job.d.max(1));
        let rest = match sel {
            Some(sel) => Some(sel.get(skip..).ok_or(Status::INTERNAL_ERROR)?),
            None if skip == 0 => None,
            None => return Err(Status::INTERNAL_ERROR),
        };
        let k = plan(ftl, job, Kind::K, rest, skip, cost)?;
        let v = plan(ftl, job, Kind::V, rest, skip, cost)?;
        let mut head = Head {
            job,
            n,
            scales: vec![model::dense_scale(job.d); job.g],
            logits: vec![0i32; job.g * n],
            values: vec![0u16; n * job.d],
            k_left: k.reads.len(),
            v_left: v.reads.len(),
            probs: None,
            pending: Vec::new(),
            acc: vec![0i64; job.g * job.d],
        };
        if let Some((pk, _)) = pinned {
            head.logits(board, pk, 0);
        }
        if let Some((kbar, _, ln)) = virt {
            head.logits(board, kbar, real);
            for h in 0..job.g {
                let at = h * n + real;
                for (l, &x) in head.logits[at..at + ln.len()].iter_mut().zip(ln) {
                    *l = l.saturating_add(x);
                }
            }
        }
        for (rows, off) in &k.dram {
            counters.dram_tail_bytes += (rows.len() * 2) as u64;
            head.logits(board, rows, *off);
        }
        if head.k_left == 0 {
            head.keys_done(board);
        }
        if let Some((_, pv)) = pinned {
            head.values(board, pv, 0)?;
        }
        if let Some((_, vbar, _)) = virt {
            head.values(board, vbar, real)?;
        }
        for (rows, off) in &v.dram {
            counters.dram_tail_bytes += (rows.len() * 2) as u64;
            head.values(board, rows, *off)?;
        }
        let mut reads = Vec::with_capacity(k.reads.len() + v.reads.len());
        for (plan, is_v) in [(k, false), (v, true)] {
            for (read, offset) in plan.reads.into_iter().zip(plan.offsets) {
                reads.push((read, Rows { is_v, offset }));
            }
        }
        Ok((head, reads))
    }

    /// One page's rows arrived.
    pub fn arrived<B: Engine>(
        &mut self,
        board: &mut B,
        what: Rows,
        rows: &[u16],
    ) -> Result<(), Status> {
        if what.is_v {
            self.v_left = self.v_left.checked_sub(1).ok_or(Status::INTERNAL_ERROR)?;
            return self.values(board, rows, what.offset);
        }
        self.k_left = self.k_left.checked_sub(1).ok_or(Status::INTERNAL_ERROR)?;
        self.logits(board, rows, what.offset);
        if self.k_left == 0 {
            self.keys_done(board);
        }
        Ok(())
    }

    /// Whether every page has arrived.
    pub fn complete(&self) -> bool {
        self.k_left == 0 && self.v_left == 0
    }

    /// The `g × d` weighted-sum accumulators of a complete head.
    pub fn into_acc(self) -> Vec<i64> {
        self.acc
    }

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
