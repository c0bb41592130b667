//! `QTensor::matmul`: Y = X·Wᵀ for n inputs at once (the prefill path).
//!
//! Every input is quantized once (once per family of kinds for a group of
//! matrices on the same inputs: q, k and v; gate and up), its quants also
//! in the lane order the x86 kernels take (`simd::lane_order`). Each part
//! of the work (run by the caller or the kernel pool) owns a range of
//! weight rows and unpacks them once (quants as bytes, in lane order on
//! x86); it walks the inputs in chunks small enough to stay in L2 and, for
//! each row, takes the dot product with every input of the chunk. A part
//! turns its results to input-major order itself, a tile of
//! rows at a time, so that what the caller does alone is contiguous
//! copies. A row's result depends only on that row and input, so the
//! number of parts does not change the bits.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use super::act::{Family, Input, Q8K};
use super::kquant;
use super::parallel::threads_for;
use super::pool::{Remote, chunked};
use super::simd::{Isa, dot_wide32_inputs};
use super::tensor::QTensor;
use super::vecdot;

/// Bytes of input quants kept in L1 while rows are taken against them:
/// the kernels are bound by how fast the inputs' bytes arrive, and from
/// L2 they arrive at half the rate (Gemma 3's Q5_0 2048×640 against 531
/// inputs, one thread: 17.3 ms with chunks of 128 KiB, 12.4–12.6 with 12
/// or 16 inputs of 640 columns).
const INPUT_CHUNK_BYTES: usize = 16 * 1024;

/// Inputs per chunk: as many as fit [`INPUT_CHUNK_BYTES`], a multiple of
/// the four the kernels take per pass (a remainder runs two or one at a
/// time), and at least eight.
fn chunk_inputs(cols: usize) -> usize {
    (INPUT_CHUNK_BYTES / cols.max(1) / 4 * 4).max(8)
}

/// Rows per tile turned to input-major order: one 64-byte line of
/// results per input.
const TILE_ROWS: usize = 16;

thread_local! {
    /// The rows of the part a thread is on, unpacked once for all inputs.
    static ROWS: RefCell<(vecdot::WideRows, kquant::KRows)> = RefCell::default();
}

/// Rows `r0..r1` of `t` against every input, into `out` input-major:
/// input i's result for row r at `out[i·stride + r − r0]`. The rows are
/// unpacked once; the inputs go in chunks that stay in L2, and each row
/// is taken against every input of a chunk into a tile of [`TILE_ROWS`]
/// rows that is then written out input by input.
#[allow(clippy::too_many_arguments)]
fn block(
    t: &QTensor,
    isa: Isa,
    xs: &[f32],
    inputs: &[Input],
    r0: usize,
    r1: usize,
    out: &mut [f32],
    stride: usize,
) {
    let (n, cols) = (inputs.len(), t.cols());
    let chunk_n = chunk_inputs(cols).min(n.max(1));
    let mut tile = vec![0f32; TILE_ROWS * chunk_n];
    let acts = vecdot::acts32(isa, inputs);
    let kinputs: Option<Vec<&Q8K>> = inputs
        .iter()
        .map(|i| match i {
            Input::K(q) => Some(q),
            _ => None,
        })
        .collect();
    // The K-quant rows go in lane order when every input has it.
    let klanes = isa.lane_order()
        && kinputs
            .as_ref()
            .is_some_and(|k| k.iter().all(|x| x.lanes.len() == x.q.len()));
    let kviews = kinputs.as_ref().map(|k| kquant::views(k, klanes));
    ROWS.with(|rows| {
        let (wide, krows) = &mut *rows.borrow_mut();
        let bytes = t.rows_bytes(r0, r1);
        let wide =
            (acts.is_some() && wide.unpack(isa, t.kind(), bytes, t.row_bytes())).then_some(&*wide);
        let krows = (wide.is_none() && kviews.is_some() && t.unpack_k(klanes, r0, r1, krows))
            .then_some(&*krows);
        // The kernels' views of the part's rows, taken a tile at a time.
        let wide_rows = wide.map(vecdot::WideRows::rows);
        let k_rows = krows.map(|k| (k.lanes(), k.rows()));
        for i0 in (0..n).step_by(chunk_n) {
            let i1 = (i0 + chunk_n).min(n);
            let m = i1 - i0;
            for t0 in (r0..r1).step_by(TILE_ROWS) {
                let t1 = (t0 + TILE_ROWS).min(r1);
                // The whole tile at once: the kernels take rows in pairs.
                let dst = &mut tile[..(t1 - t0) * m];
                let rows = t0 - r0..t1 - r0;
                match (&wide_rows, &acts, &k_rows, &kviews) {
                    (Some(w), Some(acts), _, _) => {
                        dot_wide32_inputs(isa, &w[rows], &acts[i0..i1], dst)
                    }
                    (_, _, Some((lanes, k)), Some(views)) => {
                        kquant::dot_unpacked_inputs(isa, *lanes, &k[rows], &views[i0..i1], dst)
                    }
                    _ => {
                        for (r, dst) in (t0..t1).zip(dst.chunks_mut(m)) {
                            for (i, o) in (i0..i1).zip(dst) {
                                *o = t.dot_row(isa, r, &xs[i * cols..(i + 1) * cols], &inputs[i]);
                            }
                        }
                    }
                }
                for i in 0..m {
                    let at = (i0 + i) * stride + t0 - r0;
                    for (k, o) in out[at..at + (t1 - t0)].iter_mut().enumerate() {
                        *o = tile[k * m + i];
                    }
                }
            }
        }
    });
}

/// Each of `mats` on the inputs `xs` (`n` rows), into `outs`, with the
/// inputs prepared once per family and shared.
fn group_with(
    mats: &[&QTensor],
    xs: &[f32],
    n: usize,
    outs: &mut [&mut [f32]],
    threads: usize,
    isa: Isa,
) {
    assert_eq!(mats.len(), outs.len(), "one output per matrix");
    // The f32 inputs themselves: only the float kinds read them (the
    // others take the quantized inputs), so only they pay for the copy.
    let shared: Arc<[f32]> = if mats.iter().any(|m| Family::of(m.kind()) == Family::Float) {
        xs.into()
    } else {
        Arc::from([])
    };
    let mut prepared: Vec<(Family, Arc<[Input]>)> = Vec::new();
    for (m, out) in mats.iter().zip(outs.iter_mut()) {
        let (rows, cols) = (m.rows(), m.cols());
        assert_eq!(xs.len(), n * cols, "matmul input length");
        assert_eq!(out.len(), n * rows, "matmul output length");
        if n == 0 || rows == 0 || cols == 0 {
            out.fill(0.0);
            continue;
        }
        let f = Family::of(m.kind());
        let inputs = match prepared.iter().find(|(g, _)| *g == f) {
            Some((_, inputs)) => Arc::clone(inputs),
            None => {
                let inputs = prepare_all(m, xs, isa);
                prepared.push((f, Arc::clone(&inputs)));
                inputs
            }
        };
        run_one(m, None, &shared, inputs, n, out, threads, isa);
    }
}

/// [`QTensor::matmul_gated`] in `threads` parts on `isa`: the two
/// matrices' rows together when they take the same inputs, else the two
/// products one after the other, then `act`.
#[allow(clippy::too_many_arguments)]
fn gated_with(
    gate: &QTensor,
    up: &QTensor,
    xs: &[f32],
    n: usize,
    out: &mut [f32],
    act: Gate,
    threads: usize,
    isa: Isa,
) {
    let (rows, cols) = (gate.rows(), gate.cols());
    assert_eq!(xs.len(), n * cols, "matmul input length");
    assert_eq!(out.len(), n * rows, "matmul output length");
    let family = Family::of(gate.kind());
    if family != Family::of(up.kind()) || family == Family::Float {
        let mut u = vec![0f32; n * rows];
        group_with(&[gate, up], xs, n, &mut [&mut *out, &mut u], threads, isa);
        act(out, &u);
        return;
    }
    if n == 0 || rows == 0 || cols == 0 {
        out.fill(0.0);
        return;
    }
    let none: Arc<[f32]> = Arc::from([]);
    run_one(
        gate,
        Some((up, act)),
        &none,
        prepare_all(gate, xs, isa),
        n,
        out,
        threads,
        isa,
    );
}

/// Every input of `xs` (rows of `m.cols()`) prepared for `m`'s kind,
/// its quants also in the lane order of `isa`'s prefill kernels.
fn prepare_all(m: &QTensor, xs: &[f32], isa: Isa) -> Arc<[Input]> {
    xs.chunks_exact(m.cols())
        .map(|x| m.prepare(x).lane_ordered(isa))
        .collect()
}

/// A gated FFN's activation, element by element: `gate ← act(gate, up)`
/// (SiLU or GELU times up).
pub type Gate = fn(&mut [f32], &[f32]);

thread_local! {
    /// The up projection of the chunk a thread is on (gated matmuls).
    static UP: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Rows `rows` of `m` into `out` as [`block`] writes them; with `gated`,
/// the same rows of its up matrix too, and `out` becomes act(gate, up),
/// element by element (so the activation runs in the parts, beside the
/// products, instead of alone on the caller's thread afterwards).
#[allow(clippy::too_many_arguments)]
fn part(
    m: &QTensor,
    gated: Option<(&QTensor, Gate)>,
    isa: Isa,
    xs: &[f32],
    inputs: &[Input],
    rows: Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    block(m, isa, xs, inputs, rows.start, rows.end, out, stride);
    let Some((up, act)) = gated else {
        return;
    };
    let (w, n) = (rows.len(), inputs.len());
    UP.with(|scratch| {
        let mut u = scratch.borrow_mut();
        u.clear();
        u.resize(w * n, 0.0);
        block(up, isa, xs, inputs, rows.start, rows.end, &mut u, w);
        for (i, u) in u.chunks_exact(w).enumerate() {
            act(&mut out[i * stride..i * stride + w], u);
        }
    });
}

/// Chunks of rows the parts take at a time, per thread: enough for a
/// slow thread (or one that starts late) to leave work to the other.
const CHUNKS_PER_THREAD: usize = 8;

/// One matrix's rows in chunks ([`chunked`]): the caller's straight into
/// `out`, a worker's input-major into its buffer, copied out by the
/// caller.
#[allow(clippy::too_many_arguments)]
fn run_one(
    m: &QTensor,
    gated: Option<(&QTensor, Gate)>,
    xs: &Arc<[f32]>,
    inputs: Arc<[Input]>,
    n: usize,
    out: &mut [f32],
    threads: usize,
    isa: Isa,
) {
    let rows = m.rows();
    let threads = threads.max(1);
    let per = rows
        .div_ceil(threads * CHUNKS_PER_THREAD)
        .next_multiple_of(TILE_ROWS)
        .max(1);
    let chunks = rows.div_ceil(per);
    let span = move |c: usize| (c * per, ((c + 1) * per).min(rows));
    let remote: Remote = {
        let (t, inputs, xs) = (m.clone(), Arc::clone(&inputs), Arc::clone(xs));
        let up = gated.map(|(u, act)| (u.clone(), act));
        Arc::new(move |c, buf: &mut Vec<f32>| {
            let (r0, r1) = span(c);
            let at = buf.len();
            buf.resize(at + (r1 - r0) * n, 0.0);
            let gated = up.as_ref().map(|(u, act)| (u, *act));
            part(
                &t,
                gated,
                isa,
                &xs,
                &inputs,
                r0..r1,
                &mut buf[at..],
                r1 - r0,
            );
        })
    };
    let out = RefCell::new(out);
    chunked(
        chunks,
        threads,
        remote,
        |c| {
            let (r0, r1) = span(c);
            (r1 - r0) * n
        },
        |c| {
            let (r0, r1) = span(c);
            let mut out = out.borrow_mut();
            part(m, gated, isa, xs, &inputs, r0..r1, &mut out[r0..], rows);
        },
        |c, chunk| {
            let (r0, r1) = span(c);
            let mut out = out.borrow_mut();
            for (o, p) in out.chunks_exact_mut(rows).zip(chunk.chunks_exact(r1 - r0)) {
                o[r0..r1].copy_from_slice(p);
            }
        },
    );
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
        group_with(&[self], xs, n, &mut [out], threads, isa);
    }

    /// `matmul` of several matrices on the same inputs (q, k and v; gate
    /// and up): the inputs are quantized once per family of kinds, and
    /// every output has `matmul`'s bits.
    ///
    /// # Panics
    /// When the counts differ, or a length does not fit.
    pub fn matmul_group(mats: &[&QTensor], xs: &[f32], n: usize, outs: &mut [&mut [f32]]) {
        let work: usize = mats.iter().map(|m| m.rows() * m.cols() * n).sum();
        group_with(mats, xs, n, outs, threads_for(work), Isa::active());
    }

    /// A gated FFN's first half: `gate_out = act(gate·x, up·x)` for each
    /// of the `n` inputs, with the bits of the two `matmul`s followed by
    /// `act` over the whole outputs. Each part takes the same rows of
    /// both matrices and applies `act` to them itself.
    ///
    /// # Panics
    /// When the matrices' shapes differ, or a length does not fit.
    pub fn matmul_gated(
        gate: &QTensor,
        up: &QTensor,
        xs: &[f32],
        n: usize,
        gate_out: &mut [f32],
        act: Gate,
    ) {
        assert_eq!(
            (gate.rows(), gate.cols()),
            (up.rows(), up.cols()),
            "gate and up shapes"
        );
        let work = 2 * gate.rows() * gate.cols() * n;
        gated_with(
            gate,
            up,
            xs,
            n,
            gate_out,
            act,
            threads_for(work),
            Isa::active(),
        );
    }
}
