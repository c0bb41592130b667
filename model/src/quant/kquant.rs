//! What the K-quants (Q2_K … Q6_K) share: super-blocks of 256 elements cut
//! into groups of 16 or 32, each group with an integer scale `sc` and, in
//! the formats with a minimum, an integer minimum `m`; with the block's
//! f16 `d` and `dmin`, x = (d·sc)·q − (dmin·m) for an integer q.
//!
//! Each format only says how to unpack a super-block (`KBlock::unpack`,
//! quants stored unsigned as q + `OFFSET`); decoding and the dot product
//! are written once here. The dot product is ggml's: the input quantized
//! to Q8_K (`act::Q8K`), Σ_g sc_g·Σ q·x and Σ_g m_g·Σx_g in integers, then
//! d·dx·(first) − dmin·dx·(second) in f32.

use super::act::Q8K;
use super::simd::{
    Isa, KBlockInts, KRowInts, KRowLanes, Q8KView, kblock, kblocks_inputs, kdots_inputs, lane_order,
};
use super::vecdot::Lanes;

/// Elements per super-block (ggml's `QK_K`).
pub(super) const QK_K: usize = 256;

/// One super-block, unpacked.
pub(super) struct Unpacked {
    /// Every element's quant plus `OFFSET` (so unsigned, below 64).
    pub q: [u8; QK_K],
    /// Per-group integer scale (the first `QK_K / GROUP` entries are used).
    pub sc: [i32; QK_K / 16],
    /// Per-group integer minimum (zero in the formats without one).
    pub m: [i32; QK_K / 16],
    /// `sc` per 16 elements (`expand`), for the integer kernel.
    pub sc16: [i16; 16],
    /// `m` per 16 elements (`expand`).
    pub m16: [i16; 16],
    /// The block's scale of scales.
    pub d: f32,
    /// The block's scale of minima (zero without one).
    pub dmin: f32,
}

impl Unpacked {
    pub(super) fn new() -> Self {
        Self {
            q: [0; QK_K],
            sc: [0; QK_K / 16],
            m: [0; QK_K / 16],
            sc16: [0; 16],
            m16: [0; 16],
            d: 0.0,
            dmin: 0.0,
        }
    }

    /// Fills `sc16` and `m16` from the `QK_K / group` scales and minima
    /// (every format's scales fit an i16: 6-bit, 4-bit or i8).
    fn expand(&mut self, group: usize) {
        for j in 0..16 {
            let g = j * 16 / group;
            self.sc16[j] = self.sc[g] as i16;
            self.m16[j] = self.m[g] as i16;
        }
    }

    /// Group g's f32 scale and minimum, as ggml computes them.
    fn dl_ml(&self, g: usize) -> (f32, f32) {
        (self.d * self.sc[g] as f32, self.dmin * self.m[g] as f32)
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
    /// What was added to the signed quants to store them unsigned.
    const OFFSET: i32;
    /// Unpacks `blk` (`BYTES` long) into `u`.
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
            let (dl, ml) = u.dl_ml(g);
            for (q, v) in qs.iter().zip(os) {
                let q = (i32::from(*q) - B::OFFSET) as f32;
                *v = if B::HAS_MIN { dl * q - ml } else { dl * q };
            }
        }
    }
}

/// Rows' super-blocks unpacked once for the prefill's many inputs (a
/// matmul part's rows): every block's quants, scales and minima per 16,
/// `d` and `dmin`, each kind of value contiguous. Reused from part to
/// part.
#[derive(Default)]
pub(super) struct KRows {
    q: Vec<u8>,
    sc16: Vec<i16>,
    m16: Vec<i16>,
    /// `offset · sc16` (lane order only).
    so16: Vec<i16>,
    d: Vec<f32>,
    dmin: Vec<f32>,
    /// Super-blocks per row.
    nb: usize,
    offset: i32,
    has_min: bool,
    /// Whether `q` is in lane order by groups of 16 (`simd::lane_order`).
    lanes: bool,
}

/// Unpacks every super-block of `rows` (whole rows of `row_bytes`) into
/// `k`, the quants in lane order when `lanes`.
pub(super) fn unpack_rows<B: KBlock>(lanes: bool, rows: &[u8], row_bytes: usize, k: &mut KRows) {
    k.nb = row_bytes / B::BYTES;
    (k.offset, k.has_min, k.lanes) = (B::OFFSET, B::HAS_MIN, lanes);
    k.q.clear();
    k.sc16.clear();
    k.m16.clear();
    k.so16.clear();
    k.d.clear();
    k.dmin.clear();
    let mut u = Unpacked::new();
    let mut ordered = [0u8; QK_K];
    for blk in rows.chunks_exact(B::BYTES) {
        B::unpack(blk, &mut u);
        u.expand(B::GROUP);
        if lanes {
            lane_order(&u.q, 16, &mut ordered);
            k.q.extend_from_slice(&ordered);
        } else {
            k.q.extend_from_slice(&u.q);
        }
        k.sc16.extend_from_slice(&u.sc16);
        k.m16.extend_from_slice(&u.m16);
        if lanes {
            // |offset| ≤ 32 and |scale| ≤ 128: the product fits an i16.
            k.so16
                .extend(u.sc16.iter().map(|&sc| (B::OFFSET * i32::from(sc)) as i16));
        }
        k.d.push(u.d);
        k.dmin.push(u.dmin);
    }
}

impl KRows {
    /// The kernels' view of every row unpacked, in lane order when
    /// [`Self::lanes`].
    pub(super) fn rows(&self) -> Vec<KRowLanes<'_>> {
        let nb = self.nb;
        (0..self.d.len() / nb.max(1))
            .map(|i| {
                let blocks = nb * i..nb * (i + 1);
                KRowLanes {
                    ints: KRowInts {
                        q: &self.q[QK_K * blocks.start..QK_K * blocks.end],
                        sc: &self.sc16[16 * blocks.start..16 * blocks.end],
                        m: &self.m16[16 * blocks.start..16 * blocks.end],
                        offset: self.offset,
                    },
                    d: &self.d[blocks.clone()],
                    dmin: &self.dmin[blocks.clone()],
                    has_min: self.has_min,
                    so: self
                        .so16
                        .get(16 * blocks.start..16 * blocks.end)
                        .unwrap_or_default(),
                }
            })
            .collect()
    }

    /// Whether the quants are in lane order.
    pub(super) fn lanes(&self) -> bool {
        self.lanes
    }
}

/// `out[r·n + j] = dot(ws[r], xs[j])` (the same bits as `dot`; n inputs)
/// for rows of a [`KRows`]: in lane order (`lanes`), `simd::kdots_inputs`;
/// otherwise, row by row, the integers of every block and input in one
/// call (`simd::kblocks_inputs`), then `add_block`'s f32 steps in its
/// order. `xs` are in lane order exactly when the rows are.
pub(super) fn dot_unpacked_inputs(
    isa: Isa,
    lanes: bool,
    ws: &[KRowLanes<'_>],
    xs: &[Q8KView<'_>],
    out: &mut [f32],
) {
    if lanes {
        kdots_inputs(isa, ws, xs, out);
        return;
    }
    let nb = ws.first().map_or(0, |w| w.d.len());
    let mut ints = vec![0i32; 2 * nb * xs.len()];
    for (w, out) in ws.iter().zip(out.chunks_mut(xs.len().max(1))) {
        kblocks_inputs(isa, w.ints, xs, &mut ints);
        scale_inputs(w, &ints, xs, out);
    }
}

/// `add_sums`'s steps for eight inputs side by side on one row's
/// integers (`ints`, as `kblocks_inputs` writes them): each input's lane
/// takes the same operations in the same order as `Lanes` would, but the
/// loops over the inputs vectorize.
fn scale_inputs(w: &KRowLanes<'_>, ints: &[i32], xs: &[Q8KView<'_>], out: &mut [f32]) {
    const J: usize = 8;
    let nb = w.d.len();
    let stride = 2 * nb;
    for (c, (xc, oc)) in xs.chunks(J).zip(out.chunks_mut(J)).enumerate() {
        let mut lanes = [[0f32; J]; 8];
        for b in 0..nb {
            let (mut dx, mut isum, mut imin) = ([0f32; J], [0f32; J], [0f32; J]);
            for (j, x) in xc.iter().enumerate() {
                let at = (c * J + j) * stride + 2 * b;
                dx[j] = x.d[b];
                isum[j] = ints[at] as f32;
                imin[j] = ints[at + 1] as f32;
            }
            let (d, dmin) = (w.d[b], w.dmin[b]);
            let lane = &mut lanes[b % 8];
            for j in 0..J {
                lane[j] += (d * dx[j]) * isum[j];
            }
            if w.has_min {
                for j in 0..J {
                    lane[j] -= (dmin * dx[j]) * imin[j];
                }
            }
        }
        for (j, o) in oc.iter_mut().enumerate() {
            *o = crate::quant::simd::lane_sum(&std::array::from_fn(|i| lanes[i][j]));
        }
    }
}

/// The kernels' views of inputs quantized to Q8_K: in lane order when
/// `lanes` (each must have it), in block order otherwise.
pub(super) fn views<'a>(xs: &[&'a Q8K], lanes: bool) -> Vec<Q8KView<'a>> {
    xs.iter()
        .map(|x| Q8KView {
            q: if lanes { &x.lanes } else { &x.q },
            bsums: &x.bsums,
            d: &x.d,
        })
        .collect()
}

/// Super-block b's share of the dot product, into `lanes`: the integers
/// from `simd::kblock`, then d·dx·isum − dmin·dx·imin in f32.
fn add_block(
    isa: Isa,
    b: usize,
    u: &Unpacked,
    (offset, has_min): (i32, bool),
    x: &Q8K,
    lanes: &mut Lanes,
) {
    let w = KBlockInts {
        q: &u.q,
        sc: &u.sc16,
        m: &u.m16,
        offset,
    };
    let (isum, imin) = kblock(
        isa,
        w,
        &x.q[b * QK_K..(b + 1) * QK_K],
        &x.bsums[b * 16..(b + 1) * 16],
    );
    add_sums(lanes, b, (u.d, u.dmin, has_min), x.d[b], (isum, imin));
}

/// Super-block b's integer sums scaled into `lanes`: d·dx·isum, then
/// − dmin·dx·imin in the formats with a minimum (the one order every
/// path follows).
fn add_sums(
    lanes: &mut Lanes,
    b: usize,
    (d, dmin, has_min): (f32, f32, bool),
    dx: f32,
    (isum, imin): (i32, i32),
) {
    lanes.add(b, (d * dx) * isum as f32);
    if has_min {
        lanes.sub(b, (dmin * dx) * imin as f32);
    }
}

/// The dot product of an encoded row with an input quantized to Q8_K.
pub(super) fn dot<B: KBlock>(isa: Isa, row: &[u8], x: &Q8K) -> f32 {
    let mut u = Unpacked::new();
    let mut lanes = Lanes::new();
    for (b, blk) in row.chunks_exact(B::BYTES).enumerate() {
        B::unpack(blk, &mut u);
        u.expand(B::GROUP);
        add_block(isa, b, &u, (B::OFFSET, B::HAS_MIN), x, &mut lanes);
    }
    lanes.sum()
}
