//! The crate's one module with `unsafe`: the inner loops of the kernels in
//! AVX2, AVX-512 VNNI (256-bit, with AVX-512VL) and NEON, chosen at run
//! time, beside a scalar version of each.
//!
//! Every kernel here computes **integers** (dot products of small unsigned
//! or signed weight quants with i8 activation quants) or an f32 dot product
//! in a fixed lane order with a multiply then an add (never a fused
//! multiply-add), so each SIMD path gives exactly the scalar path's bits;
//! the tests check that on every instruction set this machine has. The
//! float arithmetic that combines the integer sums with the block scales
//! follows one order (`vecdot::Lanes`: block b into lane b mod 8), which
//! the prefill's kernels take eight blocks at a time in vector lanes.
//! On x86 those kernels take the quants in *lane order* ([`lane_order`]):
//! each 32 bytes hold four quants of each of eight blocks, so a
//! multiply-add per 32 bytes leaves each block's integer sum in its own
//! lane, with no horizontal reduction per block (an integer sum is the
//! same in any order, so the bits are the scalar path's).
//!
//! Each `unsafe` block only loads from slices whose length was checked (by
//! slicing) just before, and calls functions compiled for features that
//! [`Isa::available`] detected at run time.

use std::sync::OnceLock;

use super::float::f16_at;
use super::q5_0::unpack5;

/// An instruction set the kernels can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust; the definition the others are tested against.
    Scalar,
    /// x86-64 AVX2 (`vpmaddubsw`/`vpmaddwd`), with F16C.
    Avx2,
    /// x86-64 AVX-512 VNNI on 256-bit vectors (`vpdpbusd`), with AVX2.
    Avx512Vnni,
    /// aarch64 Advanced SIMD (`smull`/`sadalp`).
    Neon,
}

impl Isa {
    /// The instruction sets this CPU runs, scalar first, best last.
    pub fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                v.push(Isa::Avx2);
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
                {
                    v.push(Isa::Avx512Vnni);
                }
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if std::arch::is_aarch64_feature_detected!("neon") {
                v.push(Isa::Neon);
            }
        }
        v
    }

    /// The set the kernels use: the best available, or the one named by
    /// `INSTINFER_ISA` (`scalar`, `avx2`, `avx512vnni`, `neon`) when this
    /// CPU has it (for A/B runs); an unknown or missing one is reported
    /// once on stderr and the best is used.
    pub fn active() -> Isa {
        static ACTIVE: OnceLock<Isa> = OnceLock::new();
        *ACTIVE.get_or_init(|| {
            let here = Isa::available();
            let best = *here.last().unwrap_or(&Isa::Scalar);
            match std::env::var("INSTINFER_ISA") {
                Ok(name) => match here.iter().find(|i| i.name() == name) {
                    Some(i) => *i,
                    None => {
                        eprintln!(
                            "INSTINFER_ISA={name}: not one of {:?} on this CPU; using {}",
                            here.iter().map(|i| i.name()).collect::<Vec<_>>(),
                            best.name()
                        );
                        best
                    }
                },
                Err(_) => best,
            }
        })
    }

    /// Whether the prefill's kernels on this set take quants in lane
    /// order ([`lane_order`]): each 32 bytes then hold four of each of
    /// eight blocks (or groups), so one multiply-add per 32 bytes leaves
    /// every block's sum in its own lane with no horizontal reduction.
    pub(super) fn lane_order(self) -> bool {
        matches!(self, Isa::Avx2 | Isa::Avx512Vnni)
    }

    /// Lower-case name (as `INSTINFER_ISA` takes it).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512Vnni => "avx512vnni",
            Isa::Neon => "neon",
        }
    }
}

/// Where the blocks of a row sit: block b's quants start at
/// `b·stride + head` of the row's bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Blocks<'a> {
    pub bytes: &'a [u8],
    pub stride: usize,
    pub head: usize,
}

impl<'a> Blocks<'a> {
    fn at(&self, b: usize, len: usize) -> &'a [u8] {
        &self.bytes[b * self.stride + self.head..][..len]
    }
}

/// Which weight quants a block of 32 holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Quants32 {
    /// 16 bytes of nibbles: element j low nibble of byte j, element j + 16
    /// the high nibble (Q4_0, Q4_1); q in 0..16.
    U4,
    /// A little-endian u32 of fifth bits then the U4 nibbles (Q5_0,
    /// Q5_1); q in 0..32.
    U5,
    /// 32 signed bytes (Q8_0).
    I8,
}

/// `out[b] = Σ_j q_bj · x[32b + j]` over the blocks of a row (exact).
pub(super) fn dot_blocks32(isa: Isa, kind: Quants32, w: Blocks<'_>, x: &[i8], out: &mut [i32]) {
    let x = &x[..32 * out.len()];
    match isa {
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            for (b, (o, xb)) in out.iter_mut().zip(x.chunks_exact(32)).enumerate() {
                *o = match kind {
                    // SAFETY: NEON is present (`available`); 16 and 32 bytes.
                    Quants32::U4 => unsafe { neon::u4(w.at(b, 16), xb) },
                    // SAFETY: as above, 32 and 32 bytes.
                    Quants32::I8 => unsafe { neon::i8(w.at(b, 32), xb) },
                    Quants32::U5 => {
                        let q = unpack5(w.at(b, kind.len()));
                        // SAFETY: as above, 32 and 32 bytes.
                        unsafe { neon::u8(&q, xb) }
                    }
                };
            }
        }
        _ => {
            for (b, (o, xb)) in out.iter_mut().zip(x.chunks_exact(32)).enumerate() {
                *o = match kind {
                    Quants32::U4 => {
                        let q = w.at(b, 16);
                        (0..16)
                            .map(|j| {
                                i32::from(q[j] & 0xF) * i32::from(xb[j])
                                    + i32::from(q[j] >> 4) * i32::from(xb[j + 16])
                            })
                            .sum()
                    }
                    Quants32::U5 => {
                        let q = unpack5(w.at(b, kind.len()));
                        q.iter()
                            .zip(xb)
                            .map(|(a, v)| i32::from(*a) * i32::from(*v))
                            .sum()
                    }
                    Quants32::I8 => w
                        .at(b, 32)
                        .iter()
                        .zip(xb)
                        .map(|(a, v)| i32::from(*a as i8) * i32::from(*v))
                        .sum(),
                };
            }
        }
    }
}

/// A row of a 32-element format: its blocks, their quants, the offset
/// subtracted from the quants (8 for Q4_0, 16 for Q5_0) and whether each
/// block has an f16 minimum after its f16 scale.
#[derive(Clone, Copy, Debug)]
pub(super) struct Row32<'a> {
    pub w: Blocks<'a>,
    pub kind: Quants32,
    pub offset: i32,
    pub min: bool,
}

/// An input quantized in blocks of 32 (`act::Q8Blocks`): quants, scales,
/// Σq and the f16-rounded d·Σq.
#[derive(Clone, Copy, Debug)]
pub(super) struct Act32<'a> {
    pub q: &'a [i8],
    pub d: &'a [f32],
    pub sum: &'a [i32],
    pub s: &'a [f32],
}

impl Quants32 {
    /// Bytes of a block's quants.
    fn len(self) -> usize {
        match self {
            Quants32::U4 => 16,
            Quants32::U5 => 20,
            Quants32::I8 => 32,
        }
    }
}

/// The dot product of the first `nb` blocks of `r` with `x`. Block b adds
/// (d·dx)·(Σq·qx − offset·Σqx) and then, with a minimum, m·s into lane
/// b mod 8 of eight f32 accumulators, summed pairwise at the end.
pub(super) fn dot_row32(isa: Isa, r: Row32<'_>, x: Act32<'_>, nb: usize) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if matches!(isa, Isa::Avx2 | Isa::Avx512Vnni) {
        // The x86 kernels take whole runs of rows (`dot_rows32`'s x86 arm).
        let mut out = [0f32];
        dot_rows32(isa, r, nb * r.w.stride, x, nb, &mut out);
        return out[0];
    }
    let mut acc = [0f32; 8];
    let mut one = [0i32];
    for b in 0..nb {
        let w = Blocks {
            bytes: &r.w.bytes[b * r.w.stride..(b + 1) * r.w.stride],
            ..r.w
        };
        dot_blocks32(isa, r.kind, w, &x.q[32 * b..32 * (b + 1)], &mut one);
        let head = &r.w.bytes[b * r.w.stride..][..4];
        let lane = &mut acc[b % 8];
        *lane += (f16_at(head[0], head[1]) * x.d[b]) * (one[0] - r.offset * x.sum[b]) as f32;
        if r.min {
            *lane += f16_at(head[2], head[3]) * x.s[b];
        }
    }
    lane_sum(&acc)
}

/// The eight lanes summed pairwise.
pub(super) fn lane_sum(acc: &[f32; 8]) -> f32 {
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// `out[i] = dot_row32(row i)` for consecutive rows of `row_bytes` bytes
/// in `r.w.bytes` (one call for many rows: the per-row dispatch is paid
/// once).
pub(super) fn dot_rows32(
    isa: Isa,
    r: Row32<'_>,
    row_bytes: usize,
    x: Act32<'_>,
    nb: usize,
    out: &mut [f32],
) {
    let bytes = &r.w.bytes[..row_bytes * out.len()];
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            let (q, d, sum, s) = (&x.q[..32 * nb], &x.d[..nb], &x.sum[..nb], &x.s[..nb]);
            let x = Act32 { q, d, sum, s };
            let r = Row32 {
                w: Blocks { bytes, ..r.w },
                ..r
            };
            if isa == Isa::Avx512Vnni {
                // SAFETY: AVX2, F16C and AVX-512 F/VL/VNNI detected; `bytes`
                // holds every row, the input `nb` blocks, and each row
                // `row_bytes` ≥ `nb` blocks (the caller's rows).
                unsafe { x86::rows32_vnni(r, row_bytes, x, out) }
            } else {
                // SAFETY: AVX2 and F16C detected; lengths as above.
                unsafe { x86::rows32_avx2(r, row_bytes, x, out) }
            }
        }
        _ => {
            for (i, o) in out.iter_mut().enumerate() {
                let w = Blocks {
                    bytes: &bytes[i * row_bytes..(i + 1) * row_bytes],
                    ..r.w
                };
                *o = dot_row32(isa, Row32 { w, ..r }, x, nb);
            }
        }
    }
}

/// `src` reordered in tiles of eight segments of `seg` bytes (a multiple
/// of 4): `dst[t + 32·j + 4·l + k] = src[t + seg·l + 4·j + k]`, so that
/// the j-th 32 bytes of a tile hold bytes 4j..4j + 4 of each segment,
/// segment l in lane l. `dst` is whole tiles; what `src` lacks of them
/// is zero.
pub(super) fn lane_order<T: Copy + Default>(src: &[T], seg: usize, dst: &mut [T]) {
    let tile = 8 * seg;
    assert!(
        seg.is_multiple_of(4) && seg > 0 && dst.len().is_multiple_of(tile),
        "whole tiles"
    );
    for (t, out) in dst.chunks_exact_mut(tile).enumerate() {
        let from = src.get(t * tile..).unwrap_or_default();
        if from.len() >= tile {
            for (l, segment) in from[..tile].chunks_exact(seg).enumerate() {
                for (j, four) in segment.chunks_exact(4).enumerate() {
                    out[32 * j + 4 * l..][..4].copy_from_slice(four);
                }
            }
        } else {
            for (w, o) in out.chunks_exact_mut(4).enumerate() {
                let at = seg * (w % 8) + 4 * (w / 8);
                for (k, v) in o.iter_mut().enumerate() {
                    *v = from.get(at + k).copied().unwrap_or_default();
                }
            }
        }
    }
}

/// The quants of `nb` blocks of 32 (`src`, 32 bytes each) in the
/// prefill's lane order: whole groups of 8 blocks as [`lane_order`]; a
/// last group of at most 4 blocks in half a tile, each 32 bytes then
/// holding 8 bytes of each of its blocks (bytes 8j..8j + 4 of block l in
/// lane l, 8j + 4..8j + 8 in lane 4 + l), so that it costs half a group
/// (a row of 640 columns is 2½ groups). `dst` is 32 bytes per block
/// padded to whole groups; what is not written is zero.
pub(super) fn lane_order32<T: Copy + Default>(src: &[T], nb: usize, dst: &mut [T]) {
    let tail = nb % 8;
    let whole = if (1..=4).contains(&tail) {
        nb - tail
    } else {
        nb.div_ceil(8) * 8
    };
    let src = &src[..32 * nb];
    lane_order(
        &src[..src.len().min(32 * whole)],
        32,
        &mut dst[..32 * whole],
    );
    let (from, to) = (&src[src.len().min(32 * whole)..], &mut dst[32 * whole..]);
    to.fill(T::default());
    if whole < nb {
        for (l, block) in from.chunks_exact(32).enumerate() {
            for (j, eight) in block.chunks_exact(8).enumerate() {
                to[32 * j + 4 * l..][..4].copy_from_slice(&eight[..4]);
                to[32 * j + 16 + 4 * l..][..4].copy_from_slice(&eight[4..]);
            }
        }
    }
}

/// A row of a 32-element format unpacked once for many inputs (the
/// prefill): 32 quant bytes per block (unsigned below 64 for U4/U5, or
/// Q8_0's signed bytes; in [`lane_order`] by blocks of 32 on the sets
/// that take it, the inputs' quants too), each block's scale `d` and,
/// with a minimum, `m` as f32, all zero-padded to a whole number of
/// groups of 8 blocks.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wide32<'a> {
    pub q: &'a [u8],
    pub d: &'a [f32],
    pub m: Option<&'a [f32]>,
    /// Whether `q` holds signed bytes (Q8_0).
    pub signed: bool,
    /// Subtracted from the quants (8 for Q4_0, 16 for Q5_0).
    pub offset: i32,
}

/// `act`'s Q8 quantization of `x` (blocks of 32) into `out`, compiled
/// for `isa` (the same code: the same bits on each).
pub(super) fn q8_fill(isa: Isa, x: &[f32], out: &mut super::act::Q8Blocks) {
    let n = x.len() / 32;
    assert!(
        out.q.len() >= 32 * n && out.d.len() >= n && out.sum.len() >= n && out.s.len() >= n,
        "q8_fill: {n} blocks"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            // SAFETY: AVX2 detected; the body is safe code.
            unsafe { x86::q8_fill(x, out) }
        }
        _ => super::act::q8_fill_body(x, out),
    }
}

/// The 32 quants of each of the first `out.len() / 32` blocks of `r` as
/// bytes (U4/U5 unpacked, I8 copied).
pub(super) fn unpack32(isa: Isa, r: Row32<'_>, out: &mut [u8]) {
    let nb = out.len() / 32;
    let len = r.kind.len();
    assert!(
        r.w.bytes.len() >= nb.saturating_sub(1) * r.w.stride + r.w.head + len || nb == 0,
        "unpack32: {nb} blocks"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            // SAFETY: AVX2 and F16C detected; the row holds `nb` blocks
            // (asserted) and `out` 32 bytes for each.
            unsafe { x86::unpack32(r, out) }
        }
        _ => {
            for (b, o) in out.chunks_exact_mut(32).enumerate() {
                let q = r.w.at(b, len);
                match r.kind {
                    Quants32::U4 => {
                        let (lo, hi) = o.split_at_mut(16);
                        for ((v, l), h) in q.iter().zip(lo).zip(hi) {
                            *l = v & 0xF;
                            *h = v >> 4;
                        }
                    }
                    Quants32::U5 => o.copy_from_slice(&unpack5(q)),
                    Quants32::I8 => o.copy_from_slice(q),
                }
            }
        }
    }
}

/// `out[r·n + i] = dot_row32(row r, xs[i])` (the same bits; n inputs)
/// for rows unpacked as `ws` (one format) and inputs of equal block
/// counts: the prefill, where rows unpacked once are taken against every
/// input of a chunk that sits in L1.
pub(super) fn dot_wide32_inputs(isa: Isa, ws: &[Wide32<'_>], xs: &[Act32<'_>], out: &mut [f32]) {
    let Some(nb) = xs.first().map(|x| x.d.len()) else {
        return;
    };
    let padded = nb.div_ceil(8) * 8;
    // In lane order the inputs' quants are padded to whole groups too.
    let quants = if isa.lane_order() { padded } else { nb };
    assert!(
        xs.iter()
            .all(|x| x.d.len() == nb && x.q.len() >= 32 * quants)
    );
    let Some(first) = ws.first() else {
        return;
    };
    assert!(
        ws.iter().all(|w| w.d.len() >= padded
            && w.q.len() >= 32 * padded
            && w.m.is_none_or(|m| m.len() >= padded)
            && (w.signed, w.offset, w.m.is_some())
                == (first.signed, first.offset, first.m.is_some())),
        "wide rows of {nb} blocks, one format"
    );
    assert!(out.len() >= ws.len() * xs.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            if isa == Isa::Avx512Vnni {
                // SAFETY: AVX2, F16C and AVX-512 F/VL/VNNI detected; the
                // rows and every input's quants (in lane order) are padded
                // to whole groups, each input has `nb` blocks, the rows
                // one format and `out` room for every result (asserted).
                unsafe { x86::wide_vnni(ws, xs, out) }
            } else {
                // SAFETY: AVX2 and F16C detected; lengths as above.
                unsafe { x86::wide_avx2(ws, xs, out) }
            }
        }
        _ => {
            for (w, out) in ws.iter().zip(out.chunks_mut(xs.len())) {
                for (x, o) in xs.iter().zip(out) {
                    let mut acc = [0f32; 8];
                    for b in 0..nb {
                        let (q, xb) = (&w.q[32 * b..32 * (b + 1)], &x.q[32 * b..32 * (b + 1)]);
                        let isum = block_ints(isa, w.signed, q, xb);
                        let lane = &mut acc[b % 8];
                        *lane += (w.d[b] * x.d[b]) * (isum - w.offset * x.sum[b]) as f32;
                        if let Some(m) = w.m {
                            *lane += m[b] * x.s[b];
                        }
                    }
                    *o = lane_sum(&acc);
                }
            }
        }
    }
}

/// Σ q·x over one block of 32 unpacked quants (`signed`: Q8_0's bytes).
fn block_ints(isa: Isa, signed: bool, q: &[u8], x: &[i8]) -> i32 {
    match isa {
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            if signed {
                // SAFETY: NEON is present (`available`); 32 and 32 bytes.
                unsafe { neon::i8(q, x) }
            } else {
                // SAFETY: as above; unsigned quants below 64.
                unsafe { neon::u8(q, x) }
            }
        }
        _ => {
            let _ = isa;
            if signed {
                q.iter()
                    .zip(x)
                    .map(|(a, v)| i32::from(*a as i8) * i32::from(*v))
                    .sum()
            } else {
                scalar_u8(q, x)
            }
        }
    }
}

/// `out[g] = Σ_j q[16g + j] · x[16g + j]` (exact), for unsigned quants
/// below 64 (the unpacked K-quants).
pub(super) fn dot_groups16(isa: Isa, q: &[u8], x: &[i8], out: &mut [i32]) {
    let n = 16 * out.len();
    let (q, x) = (&q[..n], &x[..n]);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            let even = out.len() / 2 * 2;
            let (pairs, last) = out.split_at_mut(even);
            let (qp, xp) = (&q[..16 * even], &x[..16 * even]);
            if isa == Isa::Avx512Vnni {
                // SAFETY: AVX2 and AVX-512 F/VL/VNNI detected; `qp`, `xp`
                // hold 16 bytes per entry of `pairs`.
                unsafe { x86::groups16_vnni(qp, xp, pairs) }
            } else {
                // SAFETY: AVX2 detected; lengths as above.
                unsafe { x86::groups16_avx2(qp, xp, pairs) }
            }
            if let Some(o) = last.first_mut() {
                *o = scalar_u8(&q[16 * even..], &x[16 * even..]);
            }
        }
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            for ((o, qc), xc) in out.iter_mut().zip(q.chunks(16)).zip(x.chunks(16)) {
                // SAFETY: NEON present; 16 bytes each.
                *o = unsafe { neon::u8_16(qc, xc) };
            }
        }
        _ => {
            for ((o, qc), xc) in out.iter_mut().zip(q.chunks(16)).zip(x.chunks(16)) {
                *o = scalar_u8(qc, xc);
            }
        }
    }
}

/// One K-quant super-block's integers (exact): `Σ_g sc[g]·(Σ_j q·x −
/// offset·bs[g])` and `Σ_g m[g]·bs[g]`, over its 16 groups of 16, where
/// `bs` holds the input's sums per 16. The quants are unsigned below 64;
/// |sc|, |m| ≤ 128. The scales are applied in integers, as ggml does.
pub(super) fn kblock(isa: Isa, w: KBlockInts<'_>, x: &[i8], bsums: &[i16]) -> (i32, i32) {
    let x: &[i8; 256] = x[..256].try_into().expect("256 quants");
    let bs: &[i16; 16] = bsums[..16].try_into().expect("16 sums");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 and AVX-512 F/VL/VNNI detected; fixed lengths.
        Isa::Avx512Vnni => unsafe { x86::kblock_vnni(w, x, bs) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 detected; fixed lengths.
        Isa::Avx2 => unsafe { x86::kblock_avx2(w, x, bs) },
        _ => {
            let mut g = [0i32; 16];
            dot_groups16(isa, w.q, x, &mut g);
            let (mut isum, mut imin) = (0i32, 0i32);
            for j in 0..16 {
                let b = i32::from(bs[j]);
                isum += i32::from(w.sc[j]) * (g[j] - w.offset * b);
                imin += i32::from(w.m[j]) * b;
            }
            (isum, imin)
        }
    }
}

/// A K-quant row unpacked for many inputs (`kquant::KRow`): 256 quants,
/// 16 scales and 16 minima per super-block, contiguous.
#[derive(Clone, Copy)]
pub(super) struct KRowInts<'a> {
    pub q: &'a [u8],
    pub sc: &'a [i16],
    pub m: &'a [i16],
    pub offset: i32,
}

/// An input quantized to Q8_K, as the kernels take it.
#[derive(Clone, Copy)]
pub(super) struct Q8KView<'a> {
    pub q: &'a [i8],
    pub bsums: &'a [i16],
    /// Each super-block's scale.
    pub d: &'a [f32],
}

/// A K-quant row unpacked for many inputs with its quants in lane order
/// by groups of 16 (`lane_order`), and its blocks' f32 `d` and `dmin`.
#[derive(Clone, Copy)]
pub(super) struct KRowLanes<'a> {
    pub ints: KRowInts<'a>,
    pub d: &'a [f32],
    pub dmin: &'a [f32],
    pub has_min: bool,
    /// offset × scale per 16 elements (fits an i16: |offset| ≤ 32,
    /// |scale| ≤ 128).
    pub so: &'a [i16],
}

/// `out[r·n + j] = row r · xs[j]` (n inputs) with the bits of
/// `kquant::dot` (the f32 steps of `kquant::add_sums` in lane b mod 8
/// for super-block b, the lanes summed by `lane_sum`), for rows of one
/// format and inputs in lane order: the prefill's K-quant rows on the
/// sets that take lane order.
pub(super) fn kdots_inputs(isa: Isa, ws: &[KRowLanes<'_>], xs: &[Q8KView<'_>], out: &mut [f32]) {
    let Some(first) = ws.first() else {
        return;
    };
    let nb = first.d.len();
    assert!(
        ws.iter().all(|w| w.d.len() == nb
            && w.ints.q.len() >= 256 * nb
            && w.ints.sc.len() >= 16 * nb
            && w.ints.m.len() >= 16 * nb
            && w.so.len() >= 16 * nb
            && w.dmin.len() >= nb
            && (w.ints.offset, w.has_min) == (first.ints.offset, first.has_min)),
        "rows of {nb} super-blocks, one format"
    );
    assert!(
        xs.iter()
            .all(|x| x.q.len() >= 256 * nb && x.bsums.len() >= 16 * nb && x.d.len() >= nb)
    );
    assert!(
        out.len() >= ws.len() * xs.len(),
        "one result per row and input"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 and AVX-512 F/VL/VNNI detected; lengths asserted.
        Isa::Avx512Vnni => unsafe { x86::klanes_vnni(ws, xs, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 detected; lengths asserted.
        Isa::Avx2 => unsafe { x86::klanes_avx2(ws, xs, out) },
        // Lane order is the x86 kernels' layout only (`Isa::lane_order`):
        // no other set is ever handed rows in it.
        _ => unreachable!("K-quant rows in lane order on {}", isa.name()),
    }
}

/// `kblock` of every super-block b of `w` with every input j, into
/// `out[2·(j·nb + b)..][..2]` (one call per row and many inputs: the
/// prefill's K-quant rows).
pub(super) fn kblocks_inputs(isa: Isa, w: KRowInts<'_>, xs: &[Q8KView<'_>], out: &mut [i32]) {
    let nb = w.q.len() / 256;
    assert!(
        w.sc.len() >= 16 * nb && w.m.len() >= 16 * nb,
        "16 scales per block"
    );
    assert!(
        xs.iter()
            .all(|x| x.q.len() >= 256 * nb && x.bsums.len() >= 16 * nb)
    );
    assert!(
        out.len() >= 2 * nb * xs.len(),
        "two sums per block and input"
    );
    // The sets with lane order take `kdots_inputs` instead; on them this
    // is the block-by-block form.
    for (x, o) in xs.iter().zip(out.chunks_exact_mut(2 * nb.max(1))) {
        for (b, pair) in o.chunks_exact_mut(2).enumerate() {
            let (isum, imin) = kblock(
                isa,
                w.block(b),
                &x.q[256 * b..256 * (b + 1)],
                &x.bsums[16 * b..16 * (b + 1)],
            );
            pair.copy_from_slice(&[isum, imin]);
        }
    }
}

impl<'a> KRowInts<'a> {
    /// Super-block b.
    #[inline(always)]
    fn block(&self, b: usize) -> KBlockInts<'a> {
        KBlockInts {
            q: self.q[256 * b..256 * (b + 1)]
                .try_into()
                .expect("256 quants"),
            sc: self.sc[16 * b..16 * (b + 1)].try_into().expect("16 scales"),
            m: self.m[16 * b..16 * (b + 1)].try_into().expect("16 minima"),
            offset: self.offset,
        }
    }
}

/// An unpacked K-quant super-block, as `kblock` takes it.
#[derive(Clone, Copy)]
pub(super) struct KBlockInts<'a> {
    /// Quants plus `offset`, unsigned, below 64.
    pub q: &'a [u8; 256],
    /// Scale per 16 elements.
    pub sc: &'a [i16; 16],
    /// Minimum per 16 elements (zeros without one).
    pub m: &'a [i16; 16],
    /// What the stored quants carry above the signed value.
    pub offset: i32,
}

fn scalar_u8(q: &[u8], x: &[i8]) -> i32 {
    q.iter()
        .zip(x)
        .map(|(a, v)| i32::from(*a) * i32::from(*v))
        .sum()
}

/// Lanes of the f32 dot product.
pub(super) const F32_LANES: usize = 16;

/// `Σ a·b`: lane i of 16 accumulates the products of elements ≡ i (mod
/// 16) (a multiply, then an add), the lanes are summed in order, then the
/// tail's products in order.
pub(super) fn dot_f32(isa: Isa, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let whole = n / F32_LANES * F32_LANES;
    let lanes: [f32; F32_LANES] = match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            // SAFETY: AVX2 detected; both slices hold `whole` elements.
            unsafe { x86::f32_lanes(&a[..whole], &b[..whole]) }
        }
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            // SAFETY: NEON present; both slices hold `whole` elements.
            unsafe { neon::f32_lanes(&a[..whole], &b[..whole]) }
        }
        _ => {
            let mut acc = [0f32; F32_LANES];
            for (ca, cb) in a[..whole]
                .chunks_exact(F32_LANES)
                .zip(b[..whole].chunks_exact(F32_LANES))
            {
                for i in 0..F32_LANES {
                    acc[i] += ca[i] * cb[i];
                }
            }
            acc
        }
    };
    let tail: f32 = a[whole..n]
        .iter()
        .zip(&b[whole..n])
        .map(|(x, y)| x * y)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// `out[j] = q · row j` for the rows of `keys` (each `q.len()` long), in one
/// call. Each dot product: lane l of 16 accumulates the products of
/// elements ≡ l (mod 16) (a multiply, then an add); lanes l and l + 8 are
/// added, the eight sums are added pairwise ((0+1)+(2+3))+((4+5)+(6+7)),
/// then the tail's products in order. The same bits on every path.
pub(super) fn dots_f32(isa: Isa, q: &[f32], keys: &[f32], out: &mut [f32]) {
    let d = q.len();
    if d == 0 {
        out.fill(0.0);
        return;
    }
    let keys = &keys[..d * out.len()];
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            // SAFETY: AVX2 detected; `keys` holds `out.len()` rows of `d`.
            unsafe { x86::dots(q, keys, out) }
        }
        _ => {
            let whole = d / 16 * 16;
            for (o, k) in out.iter_mut().zip(keys.chunks_exact(d)) {
                let mut acc = [0f32; 16];
                for (ca, cb) in q[..whole].chunks_exact(16).zip(k[..whole].chunks_exact(16)) {
                    for l in 0..16 {
                        acc[l] += ca[l] * cb[l];
                    }
                }
                let t: [f32; 8] = std::array::from_fn(|l| acc[l] + acc[l + 8]);
                let tail: f32 = q[whole..].iter().zip(&k[whole..]).map(|(a, b)| a * b).sum();
                *o = lane_sum(&t) + tail;
            }
        }
    }
}

/// `out[i] += Σ_j p[j] · rows[j][i]` for the rows of `rows` (each
/// `out.len()` long), adding row after row (a multiply, then an add, per
/// element), with `out` held in registers on the SIMD paths.
pub(super) fn weighted_rows(isa: Isa, p: &[f32], rows: &[f32], out: &mut [f32]) {
    let d = out.len();
    if d == 0 {
        return;
    }
    let n = p.len().min(rows.len() / d);
    let (p, rows) = (&p[..n], &rows[..n * d]);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            // SAFETY: AVX2 detected; `rows` holds `p.len()` rows of `d`.
            unsafe { x86::weighted_rows(p, rows, out) }
        }
        _ => {
            for (w, row) in p.iter().zip(rows.chunks_exact(d)) {
                for (o, v) in out.iter_mut().zip(row) {
                    *o += w * v;
                }
            }
        }
    }
}

/// Q4_K/Q5_K's 4-bit quants from `qs[128]`: each 32 bytes hold 64
/// elements, the low nibbles first.
pub(super) fn k_nibbles(qs: &[u8], q: &mut [u8; 256]) {
    let qs: &[u8; 128] = qs[..128].try_into().expect("128 bytes of nibbles");
    #[cfg(target_arch = "x86_64")]
    if matches!(Isa::active(), Isa::Avx2 | Isa::Avx512Vnni) {
        // SAFETY: AVX2 detected (`active` is one of `available`); fixed
        // lengths.
        unsafe { x86::k_nibbles(qs, q) };
        return;
    }
    k_nibbles_scalar(qs, q);
}

pub(super) fn k_nibbles_scalar(qs: &[u8; 128], q: &mut [u8; 256]) {
    for (bytes, out) in qs.chunks_exact(32).zip(q.chunks_exact_mut(64)) {
        let (lo, hi) = out.split_at_mut(32);
        for ((b, l), h) in bytes.iter().zip(lo).zip(hi) {
            *l = b & 0xF;
            *h = b >> 4;
        }
    }
}

/// Q6_K's 6-bit quants (stored value, 0..64) from `ql[128]` and `qh[64]`:
/// element 128·n + 32·k + l has low nibble k / 2 of ql[64·n + 32·(k % 2)
/// + l] and top bits (qh[32·n + l] >> 2·k) & 3.
pub(super) fn q6k_quants(ql: &[u8], qh: &[u8], q: &mut [u8; 256]) {
    let ql: &[u8; 128] = ql[..128].try_into().expect("128 bytes of ql");
    let qh: &[u8; 64] = qh[..64].try_into().expect("64 bytes of qh");
    #[cfg(target_arch = "x86_64")]
    if matches!(Isa::active(), Isa::Avx2 | Isa::Avx512Vnni) {
        // SAFETY: AVX2 detected; fixed lengths.
        unsafe { x86::q6k_quants(ql, qh, q) };
        return;
    }
    q6k_quants_scalar(ql, qh, q);
}

pub(super) fn q6k_quants_scalar(ql: &[u8; 128], qh: &[u8; 64], q: &mut [u8; 256]) {
    for (i, out) in q.chunks_exact_mut(32).enumerate() {
        let (n, k) = (i / 4, i % 4);
        let low = &ql[64 * n + 32 * (k % 2)..][..32];
        let high = &qh[32 * n..][..32];
        let (lshift, hshift) = (4 * (k / 2), 2 * k);
        for ((q, l), h) in out.iter_mut().zip(low).zip(high) {
            *q = ((l >> lshift) & 0xF) | (((h >> hshift) & 3) << 4);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(target_arch = "aarch64")]
mod neon;
