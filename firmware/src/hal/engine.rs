//! The in-storage attention engine: GeMV lanes, softmax, argtopk.
//!
//! The operations are exactly the building blocks of
//! [`attention::engine`]; a board either runs them on its FPGA engine or in
//! software ([`SoftEngine`], used by the simulated and QEMU boards). The
//! numbers must be the same either way: that module is the one numeric
//! truth.

use alloc::vec::Vec;
use attention::engine as model;

/// Logits of `n` rows against `g` query vectors.
#[derive(Debug)]
pub struct LogitJob<'a> {
    /// `g × width` fixed-point queries (already restricted to the row's
    /// columns, e.g. the chosen dims of SparF's first step).
    pub queries: &'a [i32],
    /// One scale per query head (Q16).
    pub scales: &'a [u32],
    /// `n × width` fp16 rows as delivered by the NFC filters.
    pub rows: &'a [u16],
    /// Elements per row.
    pub width: usize,
    /// `g` logits per row: `out[h * out_stride + j]` for row `j` of this job
    /// lands at `out[h * out_stride + out_offset + j]`.
    pub out: &'a mut [i32],
    /// Distance between heads in `out`.
    pub out_stride: usize,
    /// Index of this job's first row in `out`.
    pub out_offset: usize,
}

/// `acc[h] += probs[h][j] · V[j]` over the `n` rows of one job.
#[derive(Debug)]
pub struct WeightedSumJob<'a> {
    /// Probabilities, `probs[h * probs_stride + probs_offset + j]`.
    pub probs: &'a [u32],
    /// Distance between heads in `probs`.
    pub probs_stride: usize,
    /// Index of this job's first row in `probs`.
    pub probs_offset: usize,
    /// `n × d` fp16 value rows.
    pub rows: &'a [u16],
    /// Head dimension.
    pub d: usize,
    /// `g × d` accumulators.
    pub acc: &'a mut [i64],
}

/// The engine of a board.
pub trait Engine {
    /// GeMV lanes (kernel part 1).
    fn logits(&mut self, job: LogitJob<'_>);
    /// Softmax unit over one head's logits.
    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]);
    /// The argtopk unit.
    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>);
    /// Weighted value sum (kernel part 2).
    fn weighted_sum(&mut self, job: WeightedSumJob<'_>);
}

/// Work counters of a [`SoftEngine`], from which a board derives cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineWork {
    /// Multiply-accumulates in GeMV (logits and weighted sums).
    pub macs: u64,
    /// Elements through the softmax unit.
    pub softmax_elems: u64,
    /// Keys through the argtopk unit.
    pub topk_keys: u64,
    /// fp16 bytes the engine received.
    pub bytes_in: u64,
    /// Dot products (logits) and value rows (weighted sums) computed, one
    /// per (row, query head): with `macs`, the row width.
    pub dots: u64,
    /// Indices the argtopk unit selected.
    pub topk_selected: u64,
}

impl EngineWork {
    /// The work done since `before`.
    pub fn since(&self, before: &EngineWork) -> EngineWork {
        EngineWork {
            macs: self.macs - before.macs,
            softmax_elems: self.softmax_elems - before.softmax_elems,
            topk_keys: self.topk_keys - before.topk_keys,
            bytes_in: self.bytes_in - before.bytes_in,
            dots: self.dots - before.dots,
            topk_selected: self.topk_selected - before.topk_selected,
        }
    }
}

/// The engine model run in software, counting its work.
#[derive(Debug, Default)]
pub struct SoftEngine {
    /// Work done so far.
    pub work: EngineWork,
    /// One row in Fx (scratch), taken against every query head.
    row_fx: Vec<i32>,
    /// Per query head of a logit job, whether its sums fit an i64
    /// (scratch).
    fits: Vec<bool>,
}

impl Engine for SoftEngine {
    fn logits(&mut self, job: LogitJob<'_>) {
        let w = job.width;
        if w == 0 {
            return;
        }
        let n = job.rows.len() / w;
        // Each row in Fx once, for every query head; a head whose sums
        // fit an i64 (checked once) takes the plain sum.
        let fits = &mut self.fits;
        fits.clear();
        fits.extend(
            job.queries
                .chunks_exact(w)
                .take(job.scales.len())
                .map(model::sums_fit_i64),
        );
        let row_fx = &mut self.row_fx;
        for (j, row) in job.rows.chunks_exact(w).enumerate() {
            row_fx.clear();
            row_fx.extend(row.iter().map(|&b| model::fx(b)));
            for (h, (&scale, &fit)) in job.scales.iter().zip(fits.iter()).enumerate() {
                let q = &job.queries[h * w..(h + 1) * w];
                job.out[h * job.out_stride + job.out_offset + j] = if fit {
                    model::logit_fx_i64(q, row_fx, scale)
                } else {
                    model::logit_fx(q, row_fx, scale)
                };
            }
        }
        self.work.macs += (n * w * job.scales.len()) as u64;
        self.work.dots += (n * job.scales.len()) as u64;
        self.work.bytes_in += (job.rows.len() * 2) as u64;
    }

    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]) {
        model::softmax(logits, probs);
        self.work.softmax_elems += logits.len() as u64;
    }

    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) {
        model::argtopk(keys, k, out);
        self.work.topk_keys += keys.len() as u64;
        self.work.topk_selected += out.len() as u64;
    }

    fn weighted_sum(&mut self, job: WeightedSumJob<'_>) {
        let d = job.d;
        if d == 0 {
            return;
        }
        let g = job.acc.len() / d;
        let row_fx = &mut self.row_fx;
        for (j, row) in job.rows.chunks_exact(d).enumerate() {
            row_fx.clear();
            row_fx.extend(row.iter().map(|&b| model::fx(b)));
            for (h, acc) in job.acc.chunks_exact_mut(d).take(g).enumerate() {
                let p = job.probs[h * job.probs_stride + job.probs_offset + j];
                model::accumulate_fx(acc, p, row_fx);
            }
        }
        self.work.macs += (job.rows.len() * g) as u64;
        self.work.dots += (job.rows.len() / d * g) as u64;
        self.work.bytes_in += (job.rows.len() * 2) as u64;
    }
}
