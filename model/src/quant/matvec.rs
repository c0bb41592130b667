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
        assert_eq!(x.len(), self.cols(), "matvec input length");
        assert_eq!(out.len(), self.rows(), "matvec output length");
        let rows = self.rows();
        let input = Arc::new(self.prepare(x));
        let per = rows.div_ceil(threads.max(1)).max(1);
        if per >= rows {
            self.dot_rows(isa, 0, x, &input, out);
            return;
        }
        let xs: Arc<[f32]> = x.into();
        let jobs: Vec<Job> = (per..rows)
            .step_by(per)
            .map(|r0| {
                let (t, input, xs) = (self.clone(), Arc::clone(&input), Arc::clone(&xs));
                Box::new(move |buf: &mut Vec<f32>| {
                    buf.resize((r0 + per).min(rows) - r0, 0.0);
                    t.dot_rows(isa, r0, &xs, &input, buf);
                }) as Job
            })
            .collect();
        let (first, rest) = out.split_at_mut(per);
        Pool::get().run(
            || self.dot_rows(isa, 0, x, &input, first),
            jobs,
            |i, part| rest[i * per..i * per + part.len()].copy_from_slice(part),
        );
    }
}
