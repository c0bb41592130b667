//! The crate's one module with `unsafe`: the inner loops of the kernels in
//! AVX2, AVX-512 VNNI (256-bit, with AVX-512VL) and NEON, chosen at run
//! time, beside a scalar version of each.
//!
//! Every kernel here computes **integers** (dot products of small unsigned
//! or signed weight quants with i8 activation quants) or an f32 dot product
//! in a fixed lane order with a multiply then an add (never a fused
//! multiply-add), so each SIMD path gives exactly the scalar path's bits;
//! the tests check that on every instruction set this machine has. The
//! float arithmetic that combines the integer sums with the block scales is
//! safe code shared by all paths (`vecdot`).
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

/// A row of a 32-element format unpacked once for many inputs (the
/// prefill): 32 quant bytes per block (unsigned below 64 for U4/U5, or
/// Q8_0's signed bytes), each block's scale `d` and, with a minimum, `m`
/// as f32, all zero-padded to a whole number of groups of 8 blocks.
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

/// `out[i] = dot_row32(row, xs[i])` (the same bits) for a row unpacked
/// as `w` and inputs of equal block counts: the prefill, where a row
/// unpacked once is taken against every input while it sits in L1.
pub(super) fn dot_wide32_inputs(isa: Isa, w: Wide32<'_>, xs: &[Act32<'_>], out: &mut [f32]) {
    let Some(nb) = xs.first().map(|x| x.d.len()) else {
        return;
    };
    assert!(xs.iter().all(|x| x.d.len() == nb && x.q.len() >= 32 * nb));
    let padded = nb.div_ceil(8) * 8;
    assert!(
        w.d.len() >= padded && w.q.len() >= 32 * padded,
        "wide row of {nb} blocks"
    );
    assert!(w.m.is_none_or(|m| m.len() >= padded));
    assert!(out.len() >= xs.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512Vnni => {
            if isa == Isa::Avx512Vnni {
                // SAFETY: AVX2, F16C and AVX-512 F/VL/VNNI detected; the
                // row is padded to whole groups and every input has `nb`
                // blocks (asserted).
                unsafe { x86::wide_vnni(w, xs, out) }
            } else {
                // SAFETY: AVX2 and F16C detected; lengths as above.
                unsafe { x86::wide_avx2(w, xs, out) }
            }
        }
        _ => {
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
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 and AVX-512 F/VL/VNNI detected; lengths asserted.
        Isa::Avx512Vnni => unsafe { x86::kblocks_vnni(w, xs, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 detected; lengths asserted.
        Isa::Avx2 => unsafe { x86::kblocks_avx2(w, xs, out) },
        _ => {
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
mod x86 {
    //! The bodies are `#[inline(always)]` and generic over VNNI, inlined
    //! into the two entry points compiled for AVX2 and for AVX2 + AVX-512
    //! VNNI, so no call is left in a loop.

    use std::arch::x86_64::*;

    use super::{Act32, Blocks, KBlockInts, KRowInts, Q8KView, Quants32, Row32, Wide32};

    /// u8 × i8 products summed in fours into 8 × i32 (every u below 64, or
    /// below 129 with |x| ≤ 127, so `vpmaddubsw` never saturates).
    #[inline(always)]
    fn dot<const VNNI: bool>(u: __m256i, x: __m256i) -> __m256i {
        if VNNI {
            // SAFETY: `VNNI` is true only in the `_vnni` entry points,
            // compiled with AVX-512 VL + VNNI, which the caller detected.
            unsafe { _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x) }
        } else {
            // SAFETY: only inlined into the AVX2 entry points below.
            unsafe { _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)) }
        }
    }

    /// The 32 quants of a block as bytes, from a pointer to them: U4's 16
    /// bytes of nibbles (low nibbles, then high), U5's `qh` then those
    /// nibbles, or I8's 32 bytes.
    ///
    /// # Safety
    /// `p` points at `kind.len()` readable bytes; AVX2 code only.
    #[inline(always)]
    unsafe fn quants_at(kind: Quants32, p: *const u8) -> __m256i {
        // SAFETY: as documented.
        unsafe {
            let nibbles = |p: *const u8| {
                let v = _mm_loadu_si128(p.cast());
                let both = _mm256_set_m128i(_mm_srli_epi16::<4>(v), v);
                _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
            };
            match kind {
                Quants32::U4 => nibbles(p),
                Quants32::U5 => {
                    let qh = std::ptr::read_unaligned(p.cast::<i32>());
                    // Byte i gets qh's byte i / 8, then its bit i % 8.
                    let spread = _mm256_shuffle_epi8(
                        _mm256_set1_epi32(qh),
                        _mm256_set_epi64x(
                            0x0303_0303_0303_0303,
                            0x0202_0202_0202_0202,
                            0x0101_0101_0101_0101,
                            0,
                        ),
                    );
                    let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
                    let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
                    _mm256_or_si256(
                        nibbles(p.add(4)),
                        _mm256_and_si256(set, _mm256_set1_epi8(16)),
                    )
                }
                Quants32::I8 => _mm256_loadu_si256(p.cast()),
            }
        }
    }

    /// Sums of each of eight 8-lane vectors, in order.
    #[inline(always)]
    fn reduce8(v: &[__m256i; 8]) -> __m256i {
        // SAFETY: register operations only; inlined into AVX2 code.
        unsafe {
            let q = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
            let r = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
            _mm256_add_epi32(
                _mm256_permute2x128_si256::<0x20>(q, r),
                _mm256_permute2x128_si256::<0x31>(q, r),
            )
        }
    }

    /// The low (or, with `HIGH`, high) f16 of each of 8 dwords, as f32.
    #[inline(always)]
    fn halves<const HIGH: bool>(v: __m256i) -> __m256 {
        // SAFETY: register operations only; inlined into AVX2 + F16C code.
        unsafe {
            let h = if HIGH {
                _mm256_srli_epi32::<16>(v)
            } else {
                _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF))
            };
            let packed = _mm256_permute4x64_epi64::<0b10_00>(_mm256_packus_epi32(h, h));
            _mm256_cvtph_ps(_mm256_castsi256_si128(packed))
        }
    }

    /// Kinds as a const parameter, so each is its own loop.
    const U4: u8 = 0;
    const U5: u8 = 1;
    const I8: u8 = 2;

    fn kind_of(k: u8) -> Quants32 {
        match k {
            U4 => Quants32::U4,
            U5 => Quants32::U5,
            _ => Quants32::I8,
        }
    }

    /// Blocks `g..g + n` (n ≤ 8) of `super::dot_row32` added into `sum`'s
    /// lanes `0..n` (the other lanes keep their bits).
    #[inline(always)]
    fn group<const VNNI: bool, const K: u8>(
        r: Row32<'_>,
        x: Act32<'_>,
        g: usize,
        n: usize,
        sum: __m256,
    ) -> __m256 {
        let kind = kind_of(K);
        let stride = r.w.stride;
        // SAFETY: register operations and loads from slices whose lengths
        // the slicing next to them checks; inlined into AVX2 + F16C code.
        unsafe {
            // The group's bytes, from its first block to the end of its
            // last block's quants (each block's 4-byte head is inside).
            let len = kind.len();
            let wg = &r.w.bytes[g * stride..(g + n - 1) * stride + r.w.head + len];
            let xg = &x.q[32 * g..32 * (g + n)];
            // (A loop, not a closure: a closure would not inherit the
            // caller's target features and the intrinsics would become
            // calls.)
            let mut v = [_mm256_setzero_si256(); 8];
            for (i, vi) in v.iter_mut().enumerate().take(n) {
                let q = quants_at(kind, wg.as_ptr().add(i * stride + r.w.head));
                let xv = _mm256_loadu_si256(xg.as_ptr().add(32 * i).cast());
                *vi = match kind {
                    Quants32::I8 => dot::<VNNI>(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xv, q)),
                    _ => dot::<VNNI>(q, xv),
                };
            }
            // Each block's first four bytes (f16 d, then f16 m) and the
            // input's per-block values, in registers (no store to reload).
            let head = |i: usize| -> i32 {
                if i < n {
                    std::ptr::read_unaligned(wg.as_ptr().add(i * stride).cast::<i32>())
                } else {
                    0
                }
            };
            let h = _mm256_setr_epi32(
                head(0),
                head(1),
                head(2),
                head(3),
                head(4),
                head(5),
                head(6),
                head(7),
            );
            // Lanes `n..` of the input's values are not loaded (masked),
            // so a short last group reads nothing past its blocks.
            let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let load = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lanes);
            let (d, sm, ss) = (&x.d[g..g + n], &x.sum[g..g + n], &x.s[g..g + n]);
            let xd = _mm256_maskload_ps(d.as_ptr(), load);
            let xsum = _mm256_maskload_epi32(sm.as_ptr(), load);
            let xs = _mm256_maskload_ps(ss.as_ptr(), load);
            let isum = reduce8(&v);
            let isum =
                _mm256_sub_epi32(isum, _mm256_mullo_epi32(xsum, _mm256_set1_epi32(r.offset)));
            let dd = _mm256_mul_ps(halves::<false>(h), xd);
            let mut out = _mm256_add_ps(sum, _mm256_mul_ps(dd, _mm256_cvtepi32_ps(isum)));
            if r.min {
                let ms = _mm256_mul_ps(halves::<true>(h), xs);
                out = _mm256_add_ps(out, ms);
            }
            if n < 8 {
                out = _mm256_blendv_ps(sum, out, _mm256_castsi256_ps(load));
            }
            out
        }
    }

    /// `super::dot_row32`'s lanes, every block.
    #[inline(always)]
    fn row32_k<const VNNI: bool, const K: u8>(r: Row32<'_>, x: Act32<'_>, acc: &mut [f32; 8]) {
        let nb = x.d.len();
        // SAFETY: `acc` holds 8 floats; inlined into AVX2 code.
        let mut sum = unsafe { _mm256_loadu_ps(acc.as_ptr()) };
        let n8 = nb / 8 * 8;
        for g in (0..n8).step_by(8) {
            sum = group::<VNNI, K>(r, x, g, 8, sum);
        }
        if n8 < nb {
            sum = group::<VNNI, K>(r, x, n8, nb - n8, sum);
        }
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(acc.as_mut_ptr(), sum) };
    }

    #[inline(always)]
    fn row32<const VNNI: bool>(r: Row32<'_>, x: Act32<'_>, acc: &mut [f32; 8]) {
        match r.kind {
            Quants32::U4 => row32_k::<VNNI, U4>(r, x, acc),
            Quants32::U5 => row32_k::<VNNI, U5>(r, x, acc),
            Quants32::I8 => row32_k::<VNNI, I8>(r, x, acc),
        }
    }

    /// `super::unpack32`.
    ///
    /// # Safety
    /// AVX2 present; `r` holds `out.len() / 32` blocks.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn unpack32(r: Row32<'_>, out: &mut [u8]) {
        for (b, o) in out.chunks_exact_mut(32).enumerate() {
            let q = r.w.at(b, r.kind.len());
            // SAFETY: `q` holds the block's quants and `o` 32 bytes.
            unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), quants_at(r.kind, q.as_ptr())) };
        }
    }

    /// Two blocks (`i`, `i + 1`, those below `n`) of `q` against each of
    /// `P` inputs, their 8-lane sums folded pairwise (`vphaddd`).
    ///
    /// # Safety
    /// As `wide_ints`.
    #[inline(always)]
    unsafe fn wide_pair<const VNNI: bool, const S: bool, const P: usize>(
        q: *const u8,
        x: &[*const i8; P],
        i: usize,
        n: usize,
    ) -> [__m256i; P] {
        // SAFETY: as documented.
        unsafe {
            let zero = _mm256_setzero_si256();
            let mut v = [[zero; 2]; P];
            for (k, b) in (i..i + 2).enumerate() {
                if b < n {
                    let qv = _mm256_loadu_si256(q.add(32 * b).cast());
                    for (vj, xj) in v.iter_mut().zip(x) {
                        let xv = _mm256_loadu_si256(xj.add(32 * b).cast());
                        vj[k] = if S {
                            dot::<VNNI>(_mm256_sign_epi8(qv, qv), _mm256_sign_epi8(xv, qv))
                        } else {
                            dot::<VNNI>(qv, xv)
                        };
                    }
                }
            }
            std::array::from_fn(|j| _mm256_hadd_epi32(v[j][0], v[j][1]))
        }
    }

    /// The integer sums of blocks `0..n` (n ≤ 8) of `q` with each of `P`
    /// inputs, block b in lane b (lanes `n..` zero): `reduce8`'s tree,
    /// folded as the dot products arrive so that few registers are live.
    ///
    /// # Safety
    /// `q` points at 8 blocks of 32 bytes, each `x` at `n`; AVX2 code only.
    #[inline(always)]
    unsafe fn wide_ints<const VNNI: bool, const S: bool, const P: usize>(
        q: *const u8,
        x: &[*const i8; P],
        n: usize,
    ) -> [__m256i; P] {
        // SAFETY: as documented.
        unsafe {
            let h0 = wide_pair::<VNNI, S, P>(q, x, 0, n);
            let h1 = wide_pair::<VNNI, S, P>(q, x, 2, n);
            let a: [__m256i; P] = std::array::from_fn(|j| _mm256_hadd_epi32(h0[j], h1[j]));
            let h2 = wide_pair::<VNNI, S, P>(q, x, 4, n);
            let h3 = wide_pair::<VNNI, S, P>(q, x, 6, n);
            std::array::from_fn(|j| {
                let b = _mm256_hadd_epi32(h2[j], h3[j]);
                _mm256_add_epi32(
                    _mm256_permute2x128_si256::<0x20>(a[j], b),
                    _mm256_permute2x128_si256::<0x31>(a[j], b),
                )
            })
        }
    }

    /// `super::dot_wide32_inputs` for `P` inputs at a time: each group of
    /// 8 blocks of the row is loaded once for all of them.
    #[inline(always)]
    fn wide_p<const VNNI: bool, const S: bool, const P: usize>(
        w: Wide32<'_>,
        xs: &[Act32<'_>],
        out: &mut [f32],
    ) {
        let nb = xs[0].d.len();
        // SAFETY: register operations, and loads within the row (padded
        // to whole groups) and within each input's `nb` blocks (the
        // caller checked both); inlined into AVX2 + F16C code.
        unsafe {
            let mut acc = [_mm256_setzero_ps(); P];
            let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let off = _mm256_set1_epi32(w.offset);
            for g in (0..nb).step_by(8) {
                let n = (nb - g).min(8);
                let xq: [*const i8; P] = std::array::from_fn(|j| xs[j].q[32 * g..].as_ptr());
                let wq = w.q[32 * g..].as_ptr();
                // A whole group with a constant count, so the checks fold.
                let ints = if n == 8 {
                    wide_ints::<VNNI, S, P>(wq, &xq, 8)
                } else {
                    wide_ints::<VNNI, S, P>(wq, &xq, n)
                };
                let dw = _mm256_loadu_ps(w.d[g..].as_ptr());
                let load = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lanes);
                for j in 0..P {
                    let x = xs[j];
                    let (xd, xsum, xs) = if n == 8 {
                        (
                            _mm256_loadu_ps(x.d[g..].as_ptr()),
                            _mm256_loadu_si256(x.sum[g..].as_ptr().cast()),
                            _mm256_loadu_ps(x.s[g..].as_ptr()),
                        )
                    } else {
                        (
                            _mm256_maskload_ps(x.d[g..].as_ptr(), load),
                            _mm256_maskload_epi32(x.sum[g..].as_ptr(), load),
                            _mm256_maskload_ps(x.s[g..].as_ptr(), load),
                        )
                    };
                    let isum = if w.offset != 0 {
                        _mm256_sub_epi32(ints[j], _mm256_mullo_epi32(xsum, off))
                    } else {
                        ints[j]
                    };
                    let dd = _mm256_mul_ps(dw, xd);
                    let mut o = _mm256_add_ps(acc[j], _mm256_mul_ps(dd, _mm256_cvtepi32_ps(isum)));
                    if let Some(m) = w.m {
                        o = _mm256_add_ps(o, _mm256_mul_ps(_mm256_loadu_ps(m[g..].as_ptr()), xs));
                    }
                    if n < 8 {
                        o = _mm256_blendv_ps(acc[j], o, _mm256_castsi256_ps(load));
                    }
                    acc[j] = o;
                }
            }
            for j in 0..P {
                let mut lanes = [0f32; 8];
                _mm256_storeu_ps(lanes.as_mut_ptr(), acc[j]);
                out[j] = super::lane_sum(&lanes);
            }
        }
    }

    /// How many inputs `wide` takes per pass over a row: four dependency
    /// chains in flight, and each group of the row loaded once for four
    /// inputs (on a Q5_0 2048×640 matmul of 64 inputs: 7.0 ms one input
    /// at a time, 5.1 two, 4.1 four, 4.0 eight).
    const WIDE_INPUTS: usize = 4;

    #[inline(always)]
    fn wide<const VNNI: bool, const S: bool>(w: Wide32<'_>, xs: &[Act32<'_>], out: &mut [f32]) {
        let whole = xs.len() / WIDE_INPUTS * WIDE_INPUTS;
        for (x, o) in xs[..whole]
            .chunks_exact(WIDE_INPUTS)
            .zip(out.chunks_exact_mut(WIDE_INPUTS))
        {
            wide_p::<VNNI, S, WIDE_INPUTS>(w, x, o);
        }
        let (mut x, mut o) = (&xs[whole..], &mut out[whole..xs.len()]);
        if x.len() >= 2 {
            wide_p::<VNNI, S, 2>(w, &x[..2], &mut o[..2]);
            (x, o) = (&x[2..], &mut o[2..]);
        }
        if let (Some(x), Some(o)) = (x.first(), o.first_mut()) {
            wide_p::<VNNI, S, 1>(w, std::slice::from_ref(x), std::slice::from_mut(o));
        }
    }

    /// `super::dot_wide32_inputs` on AVX2.
    ///
    /// # Safety
    /// AVX2 and F16C present; `w` padded to whole groups of 8 blocks;
    /// every input of the same block count.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn wide_avx2(w: Wide32<'_>, xs: &[Act32<'_>], out: &mut [f32]) {
        if w.signed {
            wide::<false, true>(w, xs, out);
        } else {
            wide::<false, false>(w, xs, out);
        }
    }

    /// `super::dot_wide32_inputs` on AVX-512 VNNI.
    ///
    /// # Safety
    /// AVX2, F16C and AVX-512 F/VL/VNNI present; lengths as above.
    #[target_feature(enable = "avx2,f16c,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn wide_vnni(w: Wide32<'_>, xs: &[Act32<'_>], out: &mut [f32]) {
        if w.signed {
            wide::<true, true>(w, xs, out);
        } else {
            wide::<true, false>(w, xs, out);
        }
    }

    /// `super::k_nibbles`.
    ///
    /// # Safety
    /// AVX2 present.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn k_nibbles(qs: &[u8; 128], q: &mut [u8; 256]) {
        // SAFETY: fixed-length arrays: 4 loads of 32 in `qs`, 8 stores of
        // 32 in `q`.
        unsafe {
            let mask = _mm256_set1_epi8(0x0F);
            for c in 0..4 {
                let b = _mm256_loadu_si256(qs.as_ptr().add(32 * c).cast());
                let lo = _mm256_and_si256(b, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(b), mask);
                _mm256_storeu_si256(q.as_mut_ptr().add(64 * c).cast(), lo);
                _mm256_storeu_si256(q.as_mut_ptr().add(64 * c + 32).cast(), hi);
            }
        }
    }

    /// `super::q6k_quants`. Shifts are by 16-bit lanes; each result is
    /// masked to bits the byte's own value supplies.
    ///
    /// # Safety
    /// AVX2 present.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn q6k_quants(ql: &[u8; 128], qh: &[u8; 64], q: &mut [u8; 256]) {
        // SAFETY: fixed-length arrays: loads of 32 at 0..128 of `ql` and
        // 0..64 of `qh`, stores of 32 at 0..256 of `q`.
        unsafe {
            let low4 = _mm256_set1_epi8(0x0F);
            let top2 = _mm256_set1_epi8(0x30);
            for n in 0..2 {
                let l0 = _mm256_loadu_si256(ql.as_ptr().add(64 * n).cast());
                let l1 = _mm256_loadu_si256(ql.as_ptr().add(64 * n + 32).cast());
                let h = _mm256_loadu_si256(qh.as_ptr().add(32 * n).cast());
                let out = [
                    _mm256_or_si256(
                        _mm256_and_si256(l0, low4),
                        _mm256_and_si256(_mm256_slli_epi16::<4>(h), top2),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(l1, low4),
                        _mm256_and_si256(_mm256_slli_epi16::<2>(h), top2),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16::<4>(l0), low4),
                        _mm256_and_si256(h, top2),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16::<4>(l1), low4),
                        _mm256_and_si256(_mm256_srli_epi16::<2>(h), top2),
                    ),
                ];
                for (k, v) in out.into_iter().enumerate() {
                    _mm256_storeu_si256(q.as_mut_ptr().add(128 * n + 32 * k).cast(), v);
                }
            }
        }
    }

    /// How far ahead of the row being summed its bytes are prefetched:
    /// the weights stream from memory once per token, and the hardware
    /// prefetcher alone kept under half of the bandwidth busy (a Q8_0
    /// 262144×640 matvec went from 8.8 to 14.7 GB/s on one core).
    const PREFETCH_BYTES: usize = 3072;

    #[inline(always)]
    fn rows32<const VNNI: bool>(r: Row32<'_>, row_bytes: usize, x: Act32<'_>, out: &mut [f32]) {
        for (i, o) in out.iter_mut().enumerate() {
            let ahead = (i * row_bytes + PREFETCH_BYTES)..((i + 1) * row_bytes + PREFETCH_BYTES);
            if let Some(ahead) = r.w.bytes.get(ahead) {
                for line in (0..row_bytes).step_by(64) {
                    // SAFETY: the address is inside `ahead`; a prefetch
                    // never faults.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.as_ptr().add(line).cast()) };
                }
            }
            let w = Blocks {
                bytes: &r.w.bytes[i * row_bytes..(i + 1) * row_bytes],
                ..r.w
            };
            let mut acc = [0f32; 8];
            row32::<VNNI>(Row32 { w, ..r }, x, &mut acc);
            *o = super::lane_sum(&acc);
        }
    }

    /// `super::dot_rows32` on AVX2.
    ///
    /// # Safety
    /// AVX2 and F16C present; `r.w.bytes` holds `out.len()` rows of
    /// `row_bytes`, each at least as many blocks as `x`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn rows32_avx2(
        r: Row32<'_>,
        row_bytes: usize,
        x: Act32<'_>,
        out: &mut [f32],
    ) {
        rows32::<false>(r, row_bytes, x, out);
    }

    /// `super::dot_rows32` on AVX-512 VNNI.
    ///
    /// # Safety
    /// AVX2, F16C and AVX-512 F/VL/VNNI present; lengths as above.
    #[target_feature(enable = "avx2,f16c,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn rows32_vnni(
        r: Row32<'_>,
        row_bytes: usize,
        x: Act32<'_>,
        out: &mut [f32],
    ) {
        rows32::<true>(r, row_bytes, x, out);
    }

    #[inline(always)]
    fn groups16<const VNNI: bool>(q: &[u8], x: &[i8], out: &mut [i32]) {
        for ((o, qc), xc) in out
            .chunks_exact_mut(2)
            .zip(q.chunks_exact(32))
            .zip(x.chunks_exact(32))
        {
            // SAFETY: 32 bytes each; inlined into AVX2 code.
            unsafe {
                let qv = _mm256_loadu_si256(qc.as_ptr().cast());
                let xv = _mm256_loadu_si256(xc.as_ptr().cast());
                let s = dot::<VNNI>(qv, xv);
                let h = _mm_hadd_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
                let h = _mm_hadd_epi32(h, h);
                o[0] = _mm_cvtsi128_si32(h);
                o[1] = _mm_extract_epi32::<1>(h);
            }
        }
    }

    /// `super::kblock`: per 32 bytes, `vpmaddubsw` into pairs, then the
    /// pairs times their group's scale (lanes 0–7 group 2k, 8–15 group
    /// 2k + 1) summed into i32 lanes; the input's sums per 16 times the
    /// scales and the minima with `vpmaddwd`.
    #[inline(always)]
    fn kblock<const VNNI: bool>(w: KBlockInts<'_>, x: &[i8; 256], bs: &[i16; 16]) -> (i32, i32) {
        kblock_p::<VNNI, 1>(w, [x], [bs])[0]
    }

    /// # Safety
    /// AVX2 present.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn kblock_avx2(
        w: KBlockInts<'_>,
        x: &[i8; 256],
        bs: &[i16; 16],
    ) -> (i32, i32) {
        kblock::<false>(w, x, bs)
    }

    /// # Safety
    /// AVX2, AVX-512F, VL and VNNI present.
    #[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn kblock_vnni(
        w: KBlockInts<'_>,
        x: &[i8; 256],
        bs: &[i16; 16],
    ) -> (i32, i32) {
        kblock::<true>(w, x, bs)
    }

    /// `kblock` of one super-block against `P` inputs: each 32 quants and
    /// their scales loaded once for all of them.
    #[inline(always)]
    fn kblock_p<const VNNI: bool, const P: usize>(
        w: KBlockInts<'_>,
        x: [&[i8; 256]; P],
        bs: [&[i16; 16]; P],
    ) -> [(i32, i32); P] {
        // SAFETY: fixed-length arrays; register operations; inlined into
        // AVX2 code (and VNNI code when `VNNI`).
        unsafe {
            let s = _mm256_loadu_si256(w.sc.as_ptr().cast());
            let pick = _mm256_setr_epi8(
                0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
                2, 3, 2, 3,
            );
            let mut acc = [_mm256_setzero_si256(); P];
            for k in 0..8 {
                let qv = _mm256_loadu_si256(w.q.as_ptr().add(32 * k).cast());
                let sk = _mm256_shuffle_epi8(
                    _mm256_permutevar8x32_epi32(s, _mm256_set1_epi32(k as i32)),
                    pick,
                );
                for j in 0..P {
                    let xv = _mm256_loadu_si256(x[j].as_ptr().add(32 * k).cast());
                    let p = _mm256_maddubs_epi16(qv, xv);
                    acc[j] = if VNNI {
                        _mm256_dpwssd_epi32(acc[j], p, sk)
                    } else {
                        _mm256_add_epi32(acc[j], _mm256_madd_epi16(p, sk))
                    };
                }
            }
            let m = _mm256_loadu_si256(w.m.as_ptr().cast());
            let off = _mm256_set1_epi32(w.offset);
            let mut out = [(0, 0); P];
            for j in 0..P {
                let bsv = _mm256_loadu_si256(bs[j].as_ptr().cast());
                let sbs = _mm256_madd_epi16(s, bsv);
                let isum = _mm256_sub_epi32(acc[j], _mm256_mullo_epi32(sbs, off));
                let imin = _mm256_madd_epi16(m, bsv);
                let h = _mm256_hadd_epi32(isum, imin);
                let h = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
                let h = _mm_hadd_epi32(h, h);
                out[j] = (_mm_cvtsi128_si32(h), _mm_extract_epi32::<1>(h));
            }
            out
        }
    }

    /// Inputs `xs` (`P` of them) against every super-block.
    #[inline(always)]
    fn kblocks_p<const VNNI: bool, const P: usize>(
        w: KRowInts<'_>,
        xs: &[Q8KView<'_>],
        out: &mut [i32],
    ) {
        let nb = w.q.len() / 256;
        for b in 0..nb {
            let x: [&[i8; 256]; P] =
                std::array::from_fn(|j| xs[j].q[256 * b..256 * (b + 1)].try_into().expect("256"));
            let bs: [&[i16; 16]; P] =
                std::array::from_fn(|j| xs[j].bsums[16 * b..16 * (b + 1)].try_into().expect("16"));
            let sums = kblock_p::<VNNI, P>(w.block(b), x, bs);
            for (j, (isum, imin)) in sums.into_iter().enumerate() {
                out[2 * (j * nb + b)] = isum;
                out[2 * (j * nb + b) + 1] = imin;
            }
        }
    }

    #[inline(always)]
    fn kblocks<const VNNI: bool>(w: KRowInts<'_>, xs: &[Q8KView<'_>], out: &mut [i32]) {
        let per = 2 * (w.q.len() / 256);
        let mut j = 0;
        while j < xs.len() {
            let o = &mut out[j * per..];
            j += match xs.len() - j {
                1 => {
                    kblocks_p::<VNNI, 1>(w, &xs[j..], o);
                    1
                }
                2 | 3 => {
                    kblocks_p::<VNNI, 2>(w, &xs[j..], o);
                    2
                }
                _ => {
                    kblocks_p::<VNNI, 4>(w, &xs[j..], o);
                    4
                }
            };
        }
    }

    /// `super::kblocks_inputs` on AVX2.
    ///
    /// # Safety
    /// AVX2 present.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn kblocks_avx2(w: KRowInts<'_>, xs: &[Q8KView<'_>], out: &mut [i32]) {
        kblocks::<false>(w, xs, out);
    }

    /// `super::kblocks_inputs` on AVX-512 VNNI.
    ///
    /// # Safety
    /// AVX2, AVX-512F, VL and VNNI present.
    #[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn kblocks_vnni(w: KRowInts<'_>, xs: &[Q8KView<'_>], out: &mut [i32]) {
        kblocks::<true>(w, xs, out);
    }

    /// `super::dot_groups16` on AVX2 for an even number of groups.
    ///
    /// # Safety
    /// AVX2 present; `q` and `x` hold 16 bytes per entry of `out`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn groups16_avx2(q: &[u8], x: &[i8], out: &mut [i32]) {
        groups16::<false>(q, x, out);
    }

    /// `super::dot_groups16` on AVX-512 VNNI for an even number of groups.
    ///
    /// # Safety
    /// AVX2, AVX-512F, VL and VNNI present; lengths as above.
    #[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn groups16_vnni(q: &[u8], x: &[i8], out: &mut [i32]) {
        groups16::<true>(q, x, out);
    }

    /// `super::dots_f32` on AVX2.
    ///
    /// # Safety
    /// AVX2 present; `keys` holds `out.len()` rows of `q.len()` floats.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dots(q: &[f32], keys: &[f32], out: &mut [f32]) {
        let d = q.len();
        let whole = d / 16 * 16;
        for (o, k) in out.iter_mut().zip(keys.chunks_exact(d)) {
            let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            for (ca, cb) in q[..whole].chunks_exact(16).zip(k[..whole].chunks_exact(16)) {
                // SAFETY: each chunk holds 16 floats.
                unsafe {
                    lo = _mm256_add_ps(
                        lo,
                        _mm256_mul_ps(_mm256_loadu_ps(ca.as_ptr()), _mm256_loadu_ps(cb.as_ptr())),
                    );
                    hi = _mm256_add_ps(
                        hi,
                        _mm256_mul_ps(
                            _mm256_loadu_ps(ca[8..].as_ptr()),
                            _mm256_loadu_ps(cb[8..].as_ptr()),
                        ),
                    );
                }
            }
            // t = lo + hi; ((t0+t1)+(t2+t3)) + ((t4+t5)+(t6+t7)).
            let t = _mm256_add_ps(lo, hi);
            let h = _mm256_hadd_ps(t, t);
            let h = _mm256_hadd_ps(h, h);
            let sum = _mm_add_ss(_mm256_castps256_ps128(h), _mm256_extractf128_ps::<1>(h));
            let mut tail = 0f32;
            for (a, b) in q[whole..].iter().zip(&k[whole..]) {
                tail += a * b;
            }
            *o = _mm_cvtss_f32(sum) + tail;
        }
    }

    /// `super::weighted_rows` on AVX2: 64 columns at a time in eight
    /// registers, every row added in order.
    ///
    /// # Safety
    /// AVX2 present; `rows` holds `p.len()` rows of `out.len()` floats.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn weighted_rows(p: &[f32], rows: &[f32], out: &mut [f32]) {
        let d = out.len();
        let whole = d / 8 * 8;
        for c0 in (0..whole).step_by(64) {
            let w = (whole - c0).min(64) / 8;
            let mut acc = [_mm256_setzero_ps(); 8];
            for (k, a) in acc.iter_mut().enumerate().take(w) {
                // SAFETY: columns c0 + 8k .. + 8 are below `whole`.
                *a = unsafe { _mm256_loadu_ps(out[c0 + 8 * k..].as_ptr()) };
            }
            for (pj, row) in p.iter().zip(rows.chunks_exact(d)) {
                let pv = _mm256_set1_ps(*pj);
                let r = &row[c0..c0 + 8 * w];
                for (k, a) in acc.iter_mut().enumerate().take(w) {
                    // SAFETY: `r` holds 8·w floats.
                    *a = unsafe {
                        _mm256_add_ps(*a, _mm256_mul_ps(pv, _mm256_loadu_ps(r[8 * k..].as_ptr())))
                    };
                }
            }
            for (k, a) in acc.iter().enumerate().take(w) {
                // SAFETY: as for the loads.
                unsafe { _mm256_storeu_ps(out[c0 + 8 * k..].as_mut_ptr(), *a) };
            }
        }
        for i in whole..d {
            let mut o = out[i];
            for (pj, row) in p.iter().zip(rows.chunks_exact(d)) {
                o += pj * row[i];
            }
            out[i] = o;
        }
    }

    /// The 16 lane sums of `Σ a·b` (see `super::dot_f32`).
    ///
    /// # Safety
    /// AVX2 present; `a` and `b` have the same length, a multiple of 16.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn f32_lanes(a: &[f32], b: &[f32]) -> [f32; 16] {
        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for (ca, cb) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
            // SAFETY: each chunk holds 16 floats.
            let (a0, a1, b0, b1) = unsafe {
                (
                    _mm256_loadu_ps(ca.as_ptr()),
                    _mm256_loadu_ps(ca[8..].as_ptr()),
                    _mm256_loadu_ps(cb.as_ptr()),
                    _mm256_loadu_ps(cb[8..].as_ptr()),
                )
            };
            lo = _mm256_add_ps(lo, _mm256_mul_ps(a0, b0));
            hi = _mm256_add_ps(hi, _mm256_mul_ps(a1, b1));
        }
        let mut out = [0f32; 16];
        // SAFETY: `out` holds 16 floats.
        unsafe {
            _mm256_storeu_ps(out.as_mut_ptr(), lo);
            _mm256_storeu_ps(out[8..].as_mut_ptr(), hi);
        }
        out
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use std::arch::aarch64::*;

    /// Σ of 16 u8·i8 (u < 128) products as i32 lanes.
    #[target_feature(enable = "neon")]
    fn dot16(u: uint8x16_t, x: int8x16_t) -> int32x4_t {
        let s = vreinterpretq_s8_u8(u);
        let p = vmull_s8(vget_low_s8(s), vget_low_s8(x));
        let p = vmlal_high_s8(p, s, x);
        vpaddlq_s16(p)
    }

    /// # Safety
    /// NEON present; `q` 16 bytes, `x` 32 bytes.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn u4(q: &[u8], x: &[i8]) -> i32 {
        // SAFETY: lengths as documented.
        let (v, x0, x1) = unsafe {
            (
                vld1q_u8(q[..16].as_ptr()),
                vld1q_s8(x[..16].as_ptr()),
                vld1q_s8(x[16..32].as_ptr()),
            )
        };
        let lo = vandq_u8(v, vdupq_n_u8(0x0F));
        let hi = vshrq_n_u8::<4>(v);
        vaddvq_s32(vaddq_s32(dot16(lo, x0), dot16(hi, x1)))
    }

    /// # Safety
    /// NEON present; `q` and `x` 32 bytes, q below 128.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn u8(q: &[u8], x: &[i8]) -> i32 {
        // SAFETY: lengths as documented.
        unsafe { u8_16(&q[..16], &x[..16]) + u8_16(&q[16..32], &x[16..32]) }
    }

    /// # Safety
    /// NEON present; `q` and `x` 16 bytes, q below 128.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn u8_16(q: &[u8], x: &[i8]) -> i32 {
        // SAFETY: lengths as documented.
        let (v, xv) = unsafe { (vld1q_u8(q[..16].as_ptr()), vld1q_s8(x[..16].as_ptr())) };
        vaddvq_s32(dot16(v, xv))
    }

    /// # Safety
    /// NEON present; `w` and `x` 32 bytes, |x| ≤ 127.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn i8(w: &[u8], x: &[i8]) -> i32 {
        let mut acc = vdupq_n_s32(0);
        for (wc, xc) in w[..32].chunks_exact(16).zip(x[..32].chunks_exact(16)) {
            // SAFETY: 16 bytes each.
            let (a, b) = unsafe { (vld1q_s8(wc.as_ptr().cast()), vld1q_s8(xc.as_ptr())) };
            let p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
            let p = vmlal_high_s8(p, a, b);
            acc = vpadalq_s16(acc, p);
        }
        vaddvq_s32(acc)
    }

    /// # Safety
    /// NEON present; equal lengths, a multiple of 16.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn f32_lanes(a: &[f32], b: &[f32]) -> [f32; 16] {
        let mut acc = [vdupq_n_f32(0.0); 4];
        for (ca, cb) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
            for (i, s) in acc.iter_mut().enumerate() {
                // SAFETY: each chunk holds 16 floats.
                let (x, y) = unsafe {
                    (
                        vld1q_f32(ca[4 * i..].as_ptr()),
                        vld1q_f32(cb[4 * i..].as_ptr()),
                    )
                };
                *s = vaddq_f32(*s, vmulq_f32(x, y));
            }
        }
        let mut out = [0f32; 16];
        for (i, s) in acc.iter().enumerate() {
            // SAFETY: `out` holds 16 floats.
            unsafe { vst1q_f32(out[4 * i..].as_mut_ptr(), *s) };
        }
        out
    }
}
