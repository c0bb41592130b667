//! `QTensor::matmul`: Y = X·Wᵀ for n inputs at once (the prefill path).
//!
//! Every input is quantized once. Each part of the work (run by the
//! caller or the kernel pool) owns a range of weight rows; it walks the
//! inputs in chunks small enough to stay in L2 and, for each row (kept in
//! L1), takes the dot product with every input of the chunk. A row's
//! result depends only on that row and input, so the number of parts does
//! not change the bits.

use std::sync::Arc;

use super::act::{Input, Q8K};
use super::kquant;
use super::parallel::threads_for;
use super::pool::{Job, Pool};
use super::simd::Isa;
use super::tensor::QTensor;
use super::vecdot;

/// Bytes of inputs kept hot while rows are taken against them.
const INPUT_CHUNK_BYTES: usize = 128 * 1024;

/// Rows `r0..r1` of `t` against every input, row-major by weight row:
/// the inputs in chunks that stay in L2, each row (in L1) unpacked once
/// per chunk and taken against every input of it.
fn block(
    t: &QTensor,
    isa: Isa,
    xs: &[f32],
    inputs: &[Input],
    r0: usize,
    r1: usize,
    local: &mut Vec<f32>,
) {
    let (n, cols) = (inputs.len(), t.cols());
    local.clear();
    local.resize((r1 - r0) * n, 0.0);
    let chunk_n = (INPUT_CHUNK_BYTES / cols.max(1)).clamp(1, n.max(1));
    let mut buf = vecdot::WideBuf::default();
    let acts = vecdot::acts32(inputs);
    let kinputs: Option<Vec<&Q8K>> = inputs
        .iter()
        .map(|i| match i {
            Input::K(q) => Some(q),
            _ => None,
        })
        .collect();
    for i0 in (0..n).step_by(chunk_n) {
        let i1 = (i0 + chunk_n).min(n);
        for r in r0..r1 {
            let dst = &mut local[(r - r0) * n + i0..(r - r0) * n + i1];
            if let Some(acts) = &acts
                && t.dot_row_inputs(isa, r, &acts[i0..i1], &mut buf, dst)
            {
                continue;
            }
            match (t.unpack_k(r), &kinputs) {
                (Some(k), Some(xq)) => kquant::dot_unpacked_inputs(isa, &k, &xq[i0..i1], dst),
                _ => {
                    for (i, o) in (i0..i1).zip(dst) {
                        *o = t.dot_row(isa, r, &xs[i * cols..(i + 1) * cols], &inputs[i]);
                    }
                }
            }
        }
    }
}

impl QTensor {
    /// `out[i·rows + r] = row_r · xs[i·cols..]` for `i < n`.
    ///
    /// # Panics
    /// When `xs.len() != n·cols` or `out.len() != n·rows`.
    pub fn matmul(&self, xs: &[f32], n: usize, out: &mut [f32]) {
        let threads = threads_for(self.rows() * self.cols() * n);
        self.matmul_with(xs, n, out, threads, Isa::active());
    }

    /// `matmul` in `threads` parts (at least one).
    pub fn matmul_threads(&self, xs: &[f32], n: usize, out: &mut [f32], threads: usize) {
        self.matmul_with(xs, n, out, threads, Isa::active());
    }

    /// `matmul` in `threads` parts on the instruction set `isa` (one of
    /// [`Isa::available`]).
    pub fn matmul_with(&self, xs: &[f32], n: usize, out: &mut [f32], threads: usize, isa: Isa) {
        let (rows, cols) = (self.rows(), self.cols());
        assert_eq!(xs.len(), n * cols, "matmul input length");
        assert_eq!(out.len(), n * rows, "matmul output length");
        if n == 0 || rows == 0 || cols == 0 {
            out.fill(0.0);
            return;
        }
        let inputs: Arc<[Input]> = xs.chunks_exact(cols).map(|x| self.prepare(x)).collect();
        let shared: Arc<[f32]> = xs.into();
        let per = rows.div_ceil(threads.max(1)).max(1);
        let jobs: Vec<Job> = (per..rows)
            .step_by(per)
            .map(|r0| {
                let (t, inputs, xs) = (self.clone(), Arc::clone(&inputs), Arc::clone(&shared));
                Box::new(move |buf: &mut Vec<f32>| {
                    block(&t, isa, &xs, &inputs, r0, (r0 + per).min(rows), buf);
                }) as Job
            })
            .collect();
        // `local` is by weight row, `out` by input: transposed in tiles of
        // TILE rows, so each input's slice is written whole.
        const TILE: usize = 16;
        let mut scatter = |r0: usize, local: &[f32]| {
            let part = local.len() / n;
            for k0 in (0..part).step_by(TILE) {
                let k1 = (k0 + TILE).min(part);
                for (i, o) in out.chunks_exact_mut(rows).enumerate() {
                    for (k, v) in o[r0 + k0..r0 + k1].iter_mut().enumerate() {
                        *v = local[(k0 + k) * n + i];
                    }
                }
            }
        };
        let mut first = Vec::new();
        Pool::get().run(
            || block(self, isa, xs, &inputs, 0, per.min(rows), &mut first),
            jobs,
            |i, part| scatter((i + 1) * per, part),
        );
        scatter(0, &first);
    }
}
