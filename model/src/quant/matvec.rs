//! `QTensor::matvec`: y = W·x on the encoded rows (never a dequantized
//! copy of W), the input quantized once, rows split into parts run by the
//! caller and the kernel pool. Each row's result depends only on that
//! row, so any number of parts gives the same bits.

use std::cell::RefCell;
use std::sync::Arc;

use super::act::Family;
use super::parallel::threads_for;
use super::pool::{Remote, chunked};
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
    /// family of kinds (`act::Family`), and each matrix's rows are split
    /// as `matvec` splits them, so every output has `matvec`'s bits.
    ///
    /// # Panics
    /// When the counts differ, or a length does not fit.
    pub fn matvec_group(mats: &[&QTensor], x: &[f32], outs: &mut [&mut [f32]]) {
        let work: usize = mats.iter().map(|m| m.rows() * m.cols()).sum();
        group_with(mats, x, outs, threads_for(work), Isa::active());
    }
}

/// Multiply-adds a chunk of rows should hold at least (a chunk is what a
/// thread takes from the shared counter at a time).
const CHUNK_WORK: usize = 64 * 1024;

/// Chunks per thread and matrix at most: enough for a slow thread to
/// hand work to a fast one, few enough that the shared counter (a
/// contended atomic) costs nothing next to a chunk.
const CHUNKS_PER_THREAD: usize = 8;

/// The chunks of rows covering every row of a group of matrices, numbered
/// in order (matrix by matrix), found by arithmetic instead of a list (a
/// list for Gemma's 262 144 logit rows, allocated per token, kept the
/// allocator busy).
struct Chunks {
    /// Per matrix: rows, rows per chunk, index of its first chunk.
    mats: Vec<(usize, usize, usize)>,
    /// Chunks in all.
    count: usize,
}

impl Chunks {
    /// Chunks of at least [`CHUNK_WORK`] multiply-adds (and 16 rows), at
    /// most [`CHUNKS_PER_THREAD`] per thread and matrix.
    fn new(mats: &[&QTensor], threads: usize) -> Self {
        let mut count = 0;
        let mats = mats
            .iter()
            .map(|m| {
                let fewest = m.rows().div_ceil(threads * CHUNKS_PER_THREAD);
                let per = (CHUNK_WORK / m.cols().max(1)).max(16).max(fewest);
                let entry = (m.rows(), per, count);
                count += m.rows().div_ceil(per);
                entry
            })
            .collect();
        Self { mats, count }
    }

    /// Chunk c: its matrix and its rows r0..r1.
    fn get(&self, c: usize) -> Option<(usize, usize, usize)> {
        if c >= self.count {
            return None;
        }
        let i = self.mats.iter().rposition(|m| m.2 <= c)?;
        let (rows, per, first) = self.mats[i];
        let r0 = (c - first) * per;
        Some((i, r0, (r0 + per).min(rows)))
    }
}

/// `matvec` of each of `mats` on `x` into `outs`, the rows in chunks
/// ([`chunked`]).
fn group_with(mats: &[&QTensor], x: &[f32], outs: &mut [&mut [f32]], threads: usize, isa: Isa) {
    assert_eq!(mats.len(), outs.len(), "one output per matrix");
    let threads = threads.max(1);
    let mut inputs: Vec<Arc<super::act::Input>> = Vec::with_capacity(mats.len());
    for (i, m) in mats.iter().enumerate() {
        assert_eq!(x.len(), m.cols(), "matvec input length");
        assert_eq!(outs[i].len(), m.rows(), "matvec output length");
        let same = (0..i).find(|&j| Family::of(mats[j].kind()) == Family::of(m.kind()));
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
    let list = Arc::new(Chunks::new(mats, threads));
    let xs: Arc<[f32]> = x.into();
    let remote: Remote = {
        let mats: Vec<QTensor> = mats.iter().map(|m| (*m).clone()).collect();
        let (inputs, list) = (inputs.clone(), Arc::clone(&list));
        Arc::new(move |c, buf: &mut Vec<f32>| {
            if let Some((i, r0, r1)) = list.get(c) {
                let at = buf.len();
                buf.resize(at + (r1 - r0), 0.0);
                mats[i].dot_rows(isa, r0, &xs, &inputs[i], &mut buf[at..]);
            }
        })
    };
    let outs = RefCell::new(outs);
    chunked(
        list.count,
        threads,
        remote,
        |c| list.get(c).map_or(0, |(_, r0, r1)| r1 - r0),
        |c| {
            if let Some((i, r0, r1)) = list.get(c) {
                let mut outs = outs.borrow_mut();
                mats[i].dot_rows(isa, r0, x, &inputs[i], &mut outs[i][r0..r1]);
            }
        },
        |c, rows| {
            if let Some((i, r0, r1)) = list.get(c) {
                outs.borrow_mut()[i][r0..r1].copy_from_slice(rows);
            }
        },
    );
}
