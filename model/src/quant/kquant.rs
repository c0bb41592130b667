//! What the K-quants (Q2_K … Q6_K) share: super-blocks of 256 elements cut
//! into groups of 16 or 32, each group with its own scale `dl` and, in the
//! formats with a minimum, its own `ml`; x = dl·q − ml with integer q.
//!
//! Each format only says how to unpack a super-block (`KBlock::unpack`);
//! decoding and the dot product are written once here. The dot product
//! works on the unpacked integers: Σ_g dl_g·Σ q·x − Σ_g ml_g·Σx_g, with
//! Σx_g precomputed once per input (`QTensor::prepare`).

/// Elements per super-block (ggml's `QK_K`).
pub(super) const QK_K: usize = 256;
/// Width of the f32 accumulators of the dot product.
const LANES: usize = 16;

/// One super-block, unpacked.
pub(super) struct Unpacked {
    /// The integer quant of every element.
    pub q: [i8; QK_K],
    /// Per-group scale (the first `QK_K / GROUP` entries are used).
    pub dl: [f32; QK_K / 16],
    /// Per-group minimum (zero in the formats without one).
    pub ml: [f32; QK_K / 16],
}

impl Unpacked {
    pub(super) fn new() -> Self {
        Self {
            q: [0; QK_K],
            dl: [0.0; QK_K / 16],
            ml: [0.0; QK_K / 16],
        }
    }
}

/// A K-quant block layout.
pub(super) trait KBlock {
    /// Bytes per super-block.
    const BYTES: usize;
    /// Elements sharing one scale (16 or 32).
    const GROUP: usize;
    /// Whether groups carry a minimum (x = dl·q − ml rather than dl·q).
    const HAS_MIN: bool;
    /// Unpacks `blk` (`BYTES` long) into `u`, computing dl and ml exactly
    /// as ggml does (f16 super-scale × integer group scale, in f32).
    fn unpack(blk: &[u8], u: &mut Unpacked);
}

pub(super) fn dequantize<B: KBlock>(row: &[u8], out: &mut [f32]) {
    let mut u = Unpacked::new();
    for (blk, o) in row.chunks_exact(B::BYTES).zip(out.chunks_exact_mut(QK_K)) {
        B::unpack(blk, &mut u);
        for (g, (qs, os)) in
            u.q.chunks_exact(B::GROUP)
                .zip(o.chunks_exact_mut(B::GROUP))
                .enumerate()
        {
            let (dl, ml) = (u.dl[g], u.ml[g]);
            for (q, v) in qs.iter().zip(os) {
                *v = if B::HAS_MIN {
                    dl * f32::from(*q) - ml
                } else {
                    dl * f32::from(*q)
                };
            }
        }
    }
}

/// Σx per group, for `dot` (empty for the formats without a minimum).
pub(super) fn prepare<B: KBlock>(x: &[f32]) -> Vec<f32> {
    if B::HAS_MIN {
        super::float::group_sums(x, B::GROUP)
    } else {
        Vec::new()
    }
}

pub(super) fn dot<B: KBlock>(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let groups = QK_K / B::GROUP;
    let mut u = Unpacked::new();
    let mut acc = [0f32; LANES];
    let mut min_acc = 0f32;
    for (b, (blk, xb)) in row
        .chunks_exact(B::BYTES)
        .zip(x.chunks_exact(QK_K))
        .enumerate()
    {
        B::unpack(blk, &mut u);
        for (c, (qs, xs)) in
            u.q.chunks_exact(LANES)
                .zip(xb.chunks_exact(LANES))
                .enumerate()
        {
            let dl = u.dl[c * LANES / B::GROUP];
            for ((a, q), v) in acc.iter_mut().zip(qs).zip(xs) {
                *a += dl * (f32::from(*q) * v);
            }
        }
        if B::HAS_MIN {
            let sums = &xsum[b * groups..(b + 1) * groups];
            min_acc += u.ml[..groups]
                .iter()
                .zip(sums)
                .map(|(m, s)| m * s)
                .sum::<f32>();
        }
    }
    acc.iter().sum::<f32>() - min_acc
}
