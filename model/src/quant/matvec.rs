//! `QTensor::matvec`: y = W·x on the encoded rows (never a dequantized
//! copy of W), the input quantized once, rows split into parts run by the
//! caller and the kernel pool. Each row's result depends only on that
//! row, so any number of parts gives the same bits.

use std::sync::Arc;

use super::parallel::threads_for;
use super::pool::{Job, Pool};
use super::simd::Isa;
use super::tensor::QTensor;

impl QTensor {
    /// `out[r] = row_r · x`.
    ///
    /// # Panics
    /// When `x.len() != cols` or `out.len() != rows`.
    pub fn matvec(&self, x: &[f32], out: &mut [f32]) {
        self.matvec_with(
            x,
            out,
            threads_for(self.rows() * self.cols()),
            Isa::active(),
        );
    }

    /// `matvec` in `threads` parts (at least one).
    pub fn matvec_threads(&self, x: &[f32], out: &mut [f32], threads: usize) {
        self.matvec_with(x, out, threads, Isa::active());
    }

    /// `matvec` in `threads` parts on the instruction set `isa` (which
    /// must be one of [`Isa::available`]).
    pub fn matvec_with(&self, x: &[f32], out: &mut [f32], threads: usize, isa: Isa) {
        group_with(&[self], x, &mut [out], threads, isa);
    }

    /// `matvec` of several matrices on the same input (q, k and v; gate
    /// and up) in one dispatch to the pool: the input is quantized once per
    /// kind, and each matrix's rows are split as `matvec` splits them, so
    /// every output has `matvec`'s bits.
    ///
    /// # Panics
    /// When the counts differ, or a length does not fit.
    pub fn matvec_group(mats: &[&QTensor], x: &[f32], outs: &mut [&mut [f32]]) {
        let work: usize = mats.iter().map(|m| m.rows() * m.cols()).sum();
        group_with(mats, x, outs, threads_for(work), Isa::active());
    }
}

/// `matvec` of each of `mats` on `x` into `outs`, each split in `threads`
/// parts: part 0 of every matrix here, part t on worker t (one job each).
fn group_with(mats: &[&QTensor], x: &[f32], outs: &mut [&mut [f32]], threads: usize, isa: Isa) {
    assert_eq!(mats.len(), outs.len(), "one output per matrix");
    let threads = threads.max(1);
    let mut inputs: Vec<Arc<super::act::Input>> = Vec::with_capacity(mats.len());
    for (i, m) in mats.iter().enumerate() {
        assert_eq!(x.len(), m.cols(), "matvec input length");
        assert_eq!(outs[i].len(), m.rows(), "matvec output length");
        let same = (0..i).find(|&j| mats[j].kind() == m.kind());
        inputs.push(match same {
            Some(j) => Arc::clone(&inputs[j]),
            None => Arc::new(m.prepare(x)),
        });
    }
    if threads == 1 {
        for ((m, input), o) in mats.iter().zip(&inputs).zip(outs.iter_mut()) {
            m.dot_rows(isa, 0, x, input, o);
        }
        return;
    }
    // Part t of matrix i: rows t·per_i .. (t + 1)·per_i.
    let parts: Vec<Vec<(usize, usize)>> = (0..threads)
        .map(|t| {
            mats.iter()
                .map(|m| {
                    let per = m.rows().div_ceil(threads).max(1);
                    ((t * per).min(m.rows()), ((t + 1) * per).min(m.rows()))
                })
                .collect()
        })
        .collect();
    let xs: Arc<[f32]> = x.into();
    let jobs: Vec<Job> = parts[1..]
        .iter()
        .map(|ranges| {
            let mats: Vec<QTensor> = mats.iter().map(|m| (*m).clone()).collect();
            let (inputs, xs, ranges) = (inputs.clone(), Arc::clone(&xs), ranges.clone());
            Box::new(move |buf: &mut Vec<f32>| {
                for ((m, input), (r0, r1)) in mats.iter().zip(&inputs).zip(ranges) {
                    let at = buf.len();
                    buf.resize(at + (r1 - r0), 0.0);
                    m.dot_rows(isa, r0, &xs, input, &mut buf[at..]);
                }
            }) as Job
        })
        .collect();
    let mut firsts: Vec<&mut [f32]> = Vec::new();
    let mut rests: Vec<&mut [f32]> = Vec::new();
    for (o, (_, r1)) in outs.iter_mut().zip(&parts[0]) {
        let (a, b) = o.split_at_mut(*r1);
        firsts.push(a);
        rests.push(b);
    }
    Pool::get().run(
        || {
            for ((m, input), f) in mats.iter().zip(&inputs).zip(firsts.iter_mut()) {
                m.dot_rows(isa, 0, x, input, f);
            }
        },
        jobs,
        |t, part| {
            let mut at = 0;
            for (i, (r0, r1)) in parts[t + 1].iter().enumerate() {
                let (n, off) = (r1 - r0, r0 - parts[0][i].1);
                rests[i][off..off + n].copy_from_slice(&part[at..at + n]);
                at += n;
            }
        },
    );
}
