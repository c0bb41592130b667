//! One encoded row · one prepared input, for every kind: the integer sums
//! per block come from [`super::simd`] (any instruction set, same
//! integers), and this file combines them with the block scales in f32 in
//! one fixed order, so the result has the same bits on every path.

use super::act::{Input, Q8Blocks};
use super::float::{self, f16_at};
use super::kquant;
use super::q2_k::Q2K;
use super::q3_k::Q3K;
use super::q4_k::Q4K;
use super::q5_k::Q5K;
use super::q6_k::Q6K;
use super::simd::{
    Act32, Blocks, Isa, Quants32, Row32, Wide32, dot_f32, dot_row32, dot_rows32, lane_order32,
    lane_sum, unpack32,
};
use crate::TensorKind;

/// Eight f32 accumulators: block b adds into lane b mod 8; the lanes are
/// summed pairwise at the end. (The order every path follows.)
pub(super) struct Lanes([f32; 8]);

impl Lanes {
    pub(super) fn new() -> Self {
        Self([0.0; 8])
    }

    pub(super) fn add(&mut self, b: usize, v: f32) {
        self.0[b % 8] += v;
    }

    pub(super) fn sub(&mut self, b: usize, v: f32) {
        self.0[b % 8] -= v;
    }

    pub(super) fn sum(&self) -> f32 {
        lane_sum(&self.0)
    }
}

/// How a 32-element format turns Σq·x into its value.
#[derive(Clone, Copy)]
struct Format32 {
    quants: Quants32,
    /// Bytes per block.
    stride: usize,
    /// Bytes before the quants: f16 d, then f16 m when `min`.
    head: usize,
    /// Subtracted from the stored quants (8 for Q4_0, 16 for Q5_0).
    offset: i32,
    /// Whether the block has an f16 minimum after d.
    min: bool,
}

fn format32(kind: TensorKind) -> Option<Format32> {
    let f = |quants, stride, head, offset, min| {
        Some(Format32 {
            quants,
            stride,
            head,
            offset,
            min,
        })
    };
    match kind {
        TensorKind::Q4_0 => f(Quants32::U4, 18, 2, 8, false),
        TensorKind::Q4_1 => f(Quants32::U4, 20, 4, 0, true),
        TensorKind::Q5_0 => f(Quants32::U5, 22, 2, 16, false),
        TensorKind::Q5_1 => f(Quants32::U5, 24, 4, 0, true),
        TensorKind::Q8_0 => f(Quants32::I8, 34, 2, 0, false),
        _ => None,
    }
}

/// `out[i] = row i · x` for consecutive encoded rows of `row_bytes` (in
/// one call for the 32-element formats; row by row for the others).
pub(super) fn dot_rows(
    isa: Isa,
    kind: TensorKind,
    rows: &[u8],
    row_bytes: usize,
    x: &[f32],
    input: &Input,
    out: &mut [f32],
) {
    if let (Input::Blocks(q), Some(f)) = (input, format32(kind)) {
        dot_rows32(
            isa,
            f.on(rows),
            row_bytes,
            act32(q),
            row_bytes / f.stride,
            out,
        );
    } else {
        for (o, row) in out.iter_mut().zip(rows.chunks_exact(row_bytes.max(1))) {
            *o = dot_row(isa, kind, row, x, input);
        }
    }
}

impl Format32 {
    /// Rows of this format in `bytes`, for the kernels.
    fn on(self, bytes: &[u8]) -> Row32<'_> {
        Row32 {
            w: Blocks {
                bytes,
                stride: self.stride,
                head: self.head,
            },
            kind: self.quants,
            offset: self.offset,
            min: self.min,
        }
    }
}

/// Rows of a 32-element format unpacked once for many inputs (the
/// prefill's part of a matmul): each row's quants as bytes (in the lane
/// order of the kernels on `isa` where they take one), its scales (and
/// minimums) as f32, zero-padded to whole groups of 8 blocks. Reused
/// from part to part.
#[derive(Default)]
pub(super) struct WideRows {
    q: Vec<u8>,
    /// One row's quants in block order, before `lane_order`.
    plain: Vec<u8>,
    d: Vec<f32>,
    m: Vec<f32>,
    /// Blocks per row, padded.
    padded: usize,
    format: Option<Format32>,
}

impl WideRows {
    /// Unpacks `rows` (whole rows of `row_bytes`) of `kind` for `isa`'s
    /// kernels; false, and nothing kept, for the other kinds.
    pub(super) fn unpack(
        &mut self,
        isa: Isa,
        kind: TensorKind,
        rows: &[u8],
        row_bytes: usize,
    ) -> bool {
        let Some(f) = format32(kind) else {
            self.format = None;
            return false;
        };
        let nb = row_bytes / f.stride;
        let padded = nb.div_ceil(8) * 8;
        let n = rows.len() / row_bytes.max(1);
        (self.format, self.padded) = (Some(f), padded);
        self.q.clear();
        self.q.resize(32 * padded * n, 0);
        self.d.clear();
        self.d.resize(padded * n, 0.0);
        self.m.clear();
        self.m.resize(if f.min { padded * n } else { 0 }, 0.0);
        for (i, row) in rows.chunks_exact(row_bytes.max(1)).enumerate() {
            let q = &mut self.q[32 * padded * i..32 * padded * (i + 1)];
            if isa.lane_order() {
                self.plain.clear();
                self.plain.resize(32 * nb, 0);
                unpack32(isa, f.on(row), &mut self.plain);
                lane_order32(&self.plain, nb, q);
            } else {
                unpack32(isa, f.on(row), &mut q[..32 * nb]);
            }
            for (b, blk) in row.chunks_exact(f.stride).enumerate() {
                self.d[padded * i + b] = f16_at(blk[0], blk[1]);
                if f.min {
                    self.m[padded * i + b] = f16_at(blk[2], blk[3]);
                }
            }
        }
        true
    }

    /// The kernels' view of every row unpacked (none when none are);
    /// `dot_wide32_inputs` on a run of them gives `dot_row`'s bits.
    pub(super) fn rows(&self) -> Vec<Wide32<'_>> {
        let Some(f) = self.format else {
            return Vec::new();
        };
        let p = self.padded;
        (0..self.d.len() / p.max(1))
            .map(|i| Wide32 {
                q: &self.q[32 * p * i..32 * p * (i + 1)],
                d: &self.d[p * i..p * (i + 1)],
                m: f.min.then(|| &self.m[p * i..p * (i + 1)]),
                signed: f.quants == Quants32::I8,
                offset: f.offset,
            })
            .collect()
    }
}

/// Inputs quantized in blocks of 32, as the prefill's kernels on `isa`
/// take them (`None` when any is not, or lacks the lane order `isa`
/// takes).
pub(super) fn acts32(isa: Isa, inputs: &[Input]) -> Option<Vec<Act32<'_>>> {
    inputs
        .iter()
        .map(|i| match i {
            Input::Blocks(q) if !isa.lane_order() => Some(act32(q)),
            Input::Blocks(q) if !q.lanes.is_empty() => Some(Act32 {
                q: &q.lanes,
                ..act32(q)
            }),
            _ => None,
        })
        .collect()
}

/// The kernels' view of an input quantized in blocks of 32.
fn act32(x: &Q8Blocks) -> Act32<'_> {
    Act32 {
        q: &x.q,
        d: &x.d,
        sum: &x.sum,
        s: &x.s,
    }
}

fn dot32(isa: Isa, f: Format32, row: &[u8], x: &Q8Blocks) -> f32 {
    dot_row32(isa, f.on(row), act32(x), row.len() / f.stride)
}

/// `row · x` for a row of `kind`; `input` is `x` prepared for `kind`
/// ([`Input::new`]).
pub(super) fn dot_row(isa: Isa, kind: TensorKind, row: &[u8], x: &[f32], input: &Input) -> f32 {
    match (input, format32(kind)) {
        (Input::Blocks(q), Some(f)) => dot32(isa, f, row, q),
        (Input::K(q), _) => match kind {
            TensorKind::Q2_K => kquant::dot::<Q2K>(isa, row, q),
            TensorKind::Q3_K => kquant::dot::<Q3K>(isa, row, q),
            TensorKind::Q4_K => kquant::dot::<Q4K>(isa, row, q),
            TensorKind::Q5_K => kquant::dot::<Q5K>(isa, row, q),
            _ => kquant::dot::<Q6K>(isa, row, q),
        },
        _ => float_dot(isa, kind, row, x),
    }
}

/// F32/F16/BF16: the row decoded in pieces, then the f32 dot product.
fn float_dot(isa: Isa, kind: TensorKind, row: &[u8], x: &[f32]) -> f32 {
    const PIECE: usize = 256;
    let elem = match kind {
        TensorKind::F32 => 4,
        _ => 2,
    };
    let decode = match kind {
        TensorKind::F32 => float::dequantize_f32,
        TensorKind::F16 => float::dequantize_f16,
        _ => float::dequantize_bf16,
    };
    let mut buf = vec![0f32; x.len()];
    for (bytes, out) in row.chunks(PIECE * elem).zip(buf.chunks_mut(PIECE)) {
        decode(bytes, out);
    }
    dot_f32(isa, &buf, x)
}
