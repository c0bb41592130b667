//! `QTensor::matmul`: Y = X·Wᵀ for n inputs at once (the prefill path).
//!
//! Each thread owns a range of weight rows. It walks the inputs in chunks
//! small enough to stay in L2, and for each chunk decodes each of its rows
//! once into an f32 buffer and reuses it for every input of the chunk.
//! A row's result depends only on that row and input, so the thread count
//! does not change the bits.

use super::float::dot_f32;
use super::parallel::threads_for;
use super::tensor::QTensor;

/// Bytes of inputs kept hot while rows are decoded against them.
const INPUT_CHUNK_BYTES: usize = 128 * 1024;

impl QTensor {
    /// `out[i·rows + r] = row_r · xs[i·cols..]` for `i < n`.
    ///
    /// # Panics
    /// When `xs.len() != n·cols` or `out.len() != n·rows`.
    pub fn matmul(&self, xs: &[f32], n: usize, out: &mut [f32]) {
        self.matmul_threads(xs, n, out, threads_for(self.rows() * self.cols() * n));
    }

    /// `matmul` on exactly `threads` threads (at least one).
    pub fn matmul_threads(&self, xs: &[f32], n: usize, out: &mut [f32], threads: usize) {
        let (rows, cols) = (self.rows(), self.cols());
        assert_eq!(xs.len(), n * cols, "matmul input length");
        assert_eq!(out.len(), n * rows, "matmul output length");
        if n == 0 || rows == 0 {
            return;
        }
        let per = rows.div_ceil(threads.max(1)).max(1);
        let chunk_n = (INPUT_CHUNK_BYTES / (cols.max(1) * 4)).clamp(1, n);
        // One block per thread: its rows × all inputs, row-major by weight row.
        let work = |r0: usize, r1: usize| -> Vec<f32> {
            let mut local = vec![0f32; (r1 - r0) * n];
            let mut decoded = vec![0f32; cols];
            for i0 in (0..n).step_by(chunk_n) {
                let i1 = (i0 + chunk_n).min(n);
                for r in r0..r1 {
                    self.dequantize_row(r, &mut decoded);
                    let dst = &mut local[(r - r0) * n..(r - r0 + 1) * n];
                    for (i, x) in (i0..i1).zip(xs[i0 * cols..i1 * cols].chunks_exact(cols.max(1))) {
                        dst[i] = dot_f32(&decoded, x);
                    }
                }
            }
            local
        };
        let blocks: Vec<(usize, usize, Vec<f32>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (per..rows)
                .step_by(per)
                .map(|r0| {
                    let r1 = (r0 + per).min(rows);
                    s.spawn(move || (r0, r1, work(r0, r1)))
                })
                .collect();
            let mut blocks = vec![(0, per.min(rows), work(0, per.min(rows)))];
            for h in handles {
                match h.join() {
                    Ok(b) => blocks.push(b),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            blocks
        });
        for (r0, r1, local) in blocks {
            for (r, col) in (r0..r1).zip(local.chunks_exact(n)) {
                for (i, v) in col.iter().enumerate() {
                    out[i * rows + r] = *v;
                }
            }
        }
    }
}
