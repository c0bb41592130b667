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
    /// A job's rows in Fx (scratch), each taken against every query head.
    rows_fx: Vec<i32>,
}

impl SoftEngine {
    /// The body of [`Engine::logits`]. Always inlined, so that a board
    /// may compile it again for a wider instruction set (the simulated
    /// board's AVX2 path); the numbers are the same either way.
    #[inline(always)]
    pub fn logits_inline(&mut self, job: LogitJob<'_>) {
        self.logits_with(job, &PortableDots);
    }

    /// [`Self::logits_inline`] with the dot products of the common case
    /// (every partial sum fits i64) taken by `dots`: a board's own kernel
    /// for its CPU. Integer sums are the same number in any order, so every
    /// kernel gives the same logits.
    #[inline(always)]
    pub fn logits_with<D: FitDots>(&mut self, job: LogitJob<'_>, dots: &D) {
        let w = job.width;
        if w == 0 {
            return;
        }
        let n = job.rows.len() / w;
        // Each row in Fx once, for every query head.
        let rows = to_fx(&mut self.rows_fx, &job.rows[..n * w]);
        for (h, &scale) in job.scales.iter().enumerate() {
            let q = &job.queries[h * w..(h + 1) * w];
            let at = h * job.out_stride + job.out_offset;
            let out = &mut job.out[at..at + n];
            if model::sums_fit_i64(q) {
                dots.logits(q, rows, out, scale);
            } else {
                for (o, row) in out.iter_mut().zip(rows.chunks_exact(w)) {
                    *o = model::scale_dot(model::dot_fx(q, row.iter().copied()), scale);
                }
            }
        }
        self.work.macs += (n * w * job.scales.len()) as u64;
        self.work.dots += (n * job.scales.len()) as u64;
        self.work.bytes_in += (job.rows.len() * 2) as u64;
    }

    /// The body of [`Engine::softmax`], inlined like
    /// [`Self::logits_inline`].
    #[inline(always)]
    pub fn softmax_inline(&mut self, logits: &[i32], probs: &mut [u32]) {
        model::softmax(logits, probs);
        self.work.softmax_elems += logits.len() as u64;
    }

    /// The body of [`Engine::weighted_sum`], inlined like
    /// [`Self::logits_inline`].
    #[inline(always)]
    pub fn weighted_sum_inline(&mut self, job: WeightedSumJob<'_>) {
        let d = job.d;
        if d == 0 {
            return;
        }
        let g = job.acc.len() / d;
        let n = job.rows.len() / d;
        let rows = to_fx(&mut self.rows_fx, &job.rows[..n * d]);
        for (j, row) in rows.chunks_exact(d).enumerate() {
            for (h, acc) in job.acc.chunks_exact_mut(d).take(g).enumerate() {
                let p = job.probs[h * job.probs_stride + job.probs_offset + j];
                model::accumulate_fx(acc, p, row);
            }
        }
        self.work.macs += (job.rows.len() * g) as u64;
        self.work.dots += (n * g) as u64;
        self.work.bytes_in += (job.rows.len() * 2) as u64;
    }
}

/// `rows` in Fx, into `buf` (scratch kept between jobs).
#[inline(always)]
fn to_fx<'b>(buf: &'b mut Vec<i32>, rows: &[u16]) -> &'b [i32] {
    buf.clear();
    buf.resize(rows.len(), 0);
    for (x, &b) in buf.iter_mut().zip(rows) {
        *x = model::fx(b);
    }
    buf
}

/// The logits of one query against Fx rows when no partial sum can leave
/// i64 ([`model::sums_fit_i64`]): `out[j] = scale_dot(q · rows[j], scale)`
/// for every row of `q.len()` elements.
pub trait FitDots {
    /// Fills `out` (one logit per row).
    fn logits(&self, q: &[i32], rows: &[i32], out: &mut [i32], scale: u32);
}

/// [`FitDots`] in portable code, unrolled for the widths the engine sees
/// (SparF's dims, head dims).
#[derive(Clone, Copy, Debug, Default)]
pub struct PortableDots;

impl FitDots for PortableDots {
    #[inline(always)]
    fn logits(&self, q: &[i32], rows: &[i32], out: &mut [i32], scale: u32) {
        match q.len() {
            8 => logits_fixed::<8>(q, rows, out, scale),
            16 => logits_fixed::<16>(q, rows, out, scale),
            32 => logits_fixed::<32>(q, rows, out, scale),
            64 => logits_fixed::<64>(q, rows, out, scale),
            128 => logits_fixed::<128>(q, rows, out, scale),
            256 => logits_fixed::<256>(q, rows, out, scale),
            w => {
                for (o, row) in out.iter_mut().zip(rows.chunks_exact(w)) {
                    let d = model::dot_fx_i64(q, row.iter().copied());
                    *o = model::scale_dot(i128::from(d), scale);
                }
            }
        }
    }
}

/// Logits of Fx rows of a width known at compile time (the sums fit i64).
#[inline(always)]
fn logits_fixed<const W: usize>(q: &[i32], rows: &[i32], out: &mut [i32], scale: u32) {
    let Ok(q) = <&[i32; W]>::try_from(q) else {
        return;
    };
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(W)) {
        let Ok(row) = <&[i32; W]>::try_from(row) else {
            continue;
        };
        let mut d = 0i64;
        for t in 0..W {
            d += i64::from(q[t]) * i64::from(row[t]);
        }
        *o = model::scale_dot(i128::from(d), scale);
    }
}

impl Engine for SoftEngine {
    fn logits(&mut self, job: LogitJob<'_>) {
        self.logits_inline(job);
    }

    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]) {
        self.softmax_inline(logits, probs);
    }

    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) {
        model::argtopk(keys, k, out);
        self.work.topk_keys += keys.len() as u64;
        self.work.topk_selected += out.len() as u64;
    }

    fn weighted_sum(&mut self, job: WeightedSumJob<'_>) {
        self.weighted_sum_inline(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A reproducible spread of fp16 bits (every class: zeros,
    /// subnormals, normals, infinities, NaNs).
    fn bits(i: usize) -> u16 {
        (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u16
    }

    #[test]
    fn logits_are_the_model_logit_of_each_row_and_head() {
        for w in [1, 3, 8, 16, 32, 64, 128, 256] {
            for big in [false, true] {
                let (n, g) = (5, 2);
                let queries: Vec<i32> = (0..g * w)
                    .map(|i| match big {
                        true => i32::MIN + i as i32,
                        false => (i as i32 * 7919) % 40_000 - 20_000,
                    })
                    .collect();
                let scales = [5792, 1 << 20];
                let rows: Vec<u16> = (0..n * w).map(|i| bits(i + w)).collect();
                let mut out = vec![0i32; g * n];
                SoftEngine::default().logits(LogitJob {
                    queries: &queries,
                    scales: &scales,
                    rows: &rows,
                    width: w,
                    out: &mut out,
                    out_stride: n,
                    out_offset: 0,
                });
                for h in 0..g {
                    for j in 0..n {
                        let want = model::logit(
                            &queries[h * w..(h + 1) * w],
                            &rows[j * w..(j + 1) * w],
                            scales[h],
                        );
                        assert_eq!(out[h * n + j], want, "w {w} big {big} h {h} j {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn weighted_sums_are_the_model_accumulation() {
        let (n, d, g) = (4, 64, 3);
        let probs: Vec<u32> = (0..g * n)
            .map(|i| (i as u32 * 97_003) % (1 << 30))
            .collect();
        let rows: Vec<u16> = (0..n * d).map(bits).collect();
        let mut acc = vec![0i64; g * d];
        SoftEngine::default().weighted_sum(WeightedSumJob {
            probs: &probs,
            probs_stride: n,
            probs_offset: 0,
            rows: &rows,
            d,
            acc: &mut acc,
        });
        let mut want = vec![0i64; g * d];
        for h in 0..g {
            for j in 0..n {
                model::accumulate(
                    &mut want[h * d..(h + 1) * d],
                    probs[h * n + j],
                    &rows[j * d..(j + 1) * d],
                );
            }
        }
        assert_eq!(acc, want);
    }
}
