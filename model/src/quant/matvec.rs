//! `QTensor::matvec`: y = W·x on the encoded rows (never a dequantized
//! copy of W), rows spread over threads. Each row's result depends only
//! on that row, so any thread count gives the same bits.

use super::parallel::threads_for;
use super::tensor::QTensor;

impl QTensor {
    /// `out[r] = row_r · x`.
    ///
    /// # Panics
    /// When `x.len() != cols` or `out.len() != rows`.
    pub fn matvec(&self, x: &[f32], out: &mut [f32]) {
        self.matvec_threads(x, out, threads_for(self.rows() * self.cols()));
    }

    /// `matvec` on exactly `threads` threads (at least one).
    pub fn matvec_threads(&self, x: &[f32], out: &mut [f32], threads: usize) {
        assert_eq!(x.len(), self.cols(), "matvec input length");
        assert_eq!(out.len(), self.rows(), "matvec output length");
        let prepared = self.prepare(x);
        let per = self.rows().div_ceil(threads.max(1)).max(1);
        let run = |r0: usize, chunk: &mut [f32]| {
            for (i, o) in chunk.iter_mut().enumerate() {
                *o = self.dot_row(r0 + i, x, &prepared);
            }
        };
        std::thread::scope(|s| {
            let mut chunks = out.chunks_mut(per).enumerate();
            let first = chunks.next();
            for (t, chunk) in chunks {
                s.spawn(move || run(t * per, chunk));
            }
            if let Some((_, chunk)) = first {
                run(0, chunk);
            }
        });
    }
}
