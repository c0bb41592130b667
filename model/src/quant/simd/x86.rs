//! The AVX2 and AVX-512 VNNI kernels behind `super`'s x86 arms. The
//! bodies are `#[inline(always)]` and generic over VNNI, inlined
//! into the two entry points compiled for AVX2 and for AVX2 + AVX-512
//! VNNI, so no call is left in a loop.

use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{Act32, Blocks, KBlockInts, KRowLanes, Q8KView, Quants32, Row32, Wide32};

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
        let isum = _mm256_sub_epi32(isum, _mm256_mullo_epi32(xsum, _mm256_set1_epi32(r.offset)));
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

/// `super::q8_fill`: `act`'s safe body compiled for AVX2.
///
/// # Safety
/// AVX2 present.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q8_fill(x: &[f32], out: &mut crate::quant::act::Q8Blocks) {
    crate::quant::act::q8_fill_body(x, out);
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

/// `acc` plus u8 × i8 products summed in fours (bounds as [`dot`]).
#[inline(always)]
fn dot_acc<const VNNI: bool>(acc: __m256i, u: __m256i, x: __m256i) -> __m256i {
    if VNNI {
        // SAFETY: as in `dot`.
        unsafe { _mm256_dpbusd_epi32(acc, u, x) }
    } else {
        // SAFETY: as in `dot`.
        unsafe { _mm256_add_epi32(acc, dot::<false>(u, x)) }
    }
}

/// The integer sums of one group of 8 blocks in lane order
/// (`super::lane_order`, 256 bytes from each row's `q` and each `x`; with
/// `HALF`, a last group of at most 4 blocks in half a tile, 128 bytes,
/// `super::lane_order32`) of each of `R` rows with each of `P` inputs:
/// block b's in lane b (in a half tile also in lane 4 + b), with no
/// horizontal step. Each input's bytes are loaded once for all the rows;
/// one row keeps two accumulators per input so that the multiply-adds'
/// latency stays hidden.
///
/// # Safety
/// Each `q` and `x` points at 256 (`HALF`: 128) readable bytes; AVX2
/// code only.
#[inline(always)]
unsafe fn lane_ints<
    const VNNI: bool,
    const S: bool,
    const R: usize,
    const P: usize,
    const HALF: bool,
>(
    q: &[*const u8; R],
    x: &[*const i8; P],
) -> [[__m256i; P]; R] {
    // SAFETY: as documented.
    unsafe {
        let zero = _mm256_setzero_si256();
        let mut acc = [[[zero; 2]; P]; R];
        for j in 0..if HALF { 4 } else { 8 } {
            let k = if R == 1 { j % 2 } else { 0 };
            let mut qv = [zero; R];
            let mut u = [zero; R];
            for r in 0..R {
                qv[r] = _mm256_loadu_si256(q[r].add(32 * j).cast());
                u[r] = if S {
                    _mm256_sign_epi8(qv[r], qv[r])
                } else {
                    qv[r]
                };
            }
            for (p, xj) in x.iter().enumerate() {
                let xv = _mm256_loadu_si256(xj.add(32 * j).cast());
                for r in 0..R {
                    let xr = if S { _mm256_sign_epi8(xv, qv[r]) } else { xv };
                    acc[r][p][k] = dot_acc::<VNNI>(acc[r][p][k], u[r], xr);
                }
            }
        }
        let mut sums = [[zero; P]; R];
        for r in 0..R {
            for p in 0..P {
                let a = if R == 1 {
                    _mm256_add_epi32(acc[r][p][0], acc[r][p][1])
                } else {
                    acc[r][p][0]
                };
                sums[r][p] = if HALF {
                    _mm256_add_epi32(a, _mm256_permute2x128_si256::<0x01>(a, a))
                } else {
                    a
                };
            }
        }
        sums
    }
}

/// `super::dot_wide32_inputs` for `R` rows and `P` inputs at a time:
/// each group of 8 blocks of the rows and of the inputs is loaded once
/// for all the pairs; row r's results go to `out[r·stride + j]`.
#[inline(always)]
fn wide_p<const VNNI: bool, const S: bool, const R: usize, const P: usize>(
    ws: &[Wide32<'_>; R],
    xs: &[Act32<'_>],
    out: &mut [f32],
    stride: usize,
) {
    let nb = xs[0].d.len();
    let (offset, min) = (ws[0].offset, ws[0].m.is_some());
    // SAFETY: register operations, and loads within the rows (padded to
    // whole groups) and within each input's blocks (the caller checked
    // both); inlined into AVX2 + F16C code.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); P]; R];
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let off = _mm256_set1_epi32(offset);
        for g in (0..nb).step_by(8) {
            let n = (nb - g).min(8);
            let xq: [*const i8; P] = std::array::from_fn(|j| xs[j].q[32 * g..].as_ptr());
            let wq: [*const u8; R] = std::array::from_fn(|r| ws[r].q[32 * g..].as_ptr());
            let ints = if n <= 4 {
                lane_ints::<VNNI, S, R, P, true>(&wq, &xq)
            } else {
                lane_ints::<VNNI, S, R, P, false>(&wq, &xq)
            };
            let load = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lanes);
            for j in 0..P {
                let x = xs[j];
                let (xd, xsum) = if n == 8 {
                    (
                        _mm256_loadu_ps(x.d[g..].as_ptr()),
                        _mm256_loadu_si256(x.sum[g..].as_ptr().cast()),
                    )
                } else {
                    (
                        _mm256_maskload_ps(x.d[g..].as_ptr(), load),
                        _mm256_maskload_epi32(x.sum[g..].as_ptr(), load),
                    )
                };
                let xs_min = if !min {
                    _mm256_setzero_ps()
                } else if n == 8 {
                    _mm256_loadu_ps(x.s[g..].as_ptr())
                } else {
                    _mm256_maskload_ps(x.s[g..].as_ptr(), load)
                };
                let shift = _mm256_mullo_epi32(xsum, off);
                for r in 0..R {
                    let isum = if offset != 0 {
                        _mm256_sub_epi32(ints[r][j], shift)
                    } else {
                        ints[r][j]
                    };
                    let dd = _mm256_mul_ps(_mm256_loadu_ps(ws[r].d[g..].as_ptr()), xd);
                    let a = acc[r][j];
                    let mut o = _mm256_add_ps(a, _mm256_mul_ps(dd, _mm256_cvtepi32_ps(isum)));
                    if let Some(m) = ws[r].m {
                        o = _mm256_add_ps(
                            o,
                            _mm256_mul_ps(_mm256_loadu_ps(m[g..].as_ptr()), xs_min),
                        );
                    }
                    acc[r][j] = kept(a, o, n, load);
                }
            }
        }
        rows_out(&acc, out, stride);
    }
}

/// `o` in the lanes of a group's blocks (`load`: lanes below `n` set),
/// `a` above them (a partial group leaves those lanes' bits alone).
#[inline(always)]
fn kept(a: __m256, o: __m256, n: usize, load: __m256i) -> __m256 {
    if n < 8 {
        // SAFETY: register operations; inlined into AVX2 code.
        unsafe { _mm256_blendv_ps(a, o, _mm256_castsi256_ps(load)) }
    } else {
        o
    }
}

/// Each row's lane sums ([`lane_sums`]) to `out[r·stride..]`.
#[inline(always)]
fn rows_out<const R: usize, const P: usize>(
    acc: &[[__m256; P]; R],
    out: &mut [f32],
    stride: usize,
) {
    for (r, a) in acc.iter().enumerate() {
        lane_sums(a, &mut out[r * stride..]);
    }
}

/// `out[j] = super::lane_sum(acc[j])` for each of `P` accumulators,
/// four at a time: two rounds of `vhaddps` add lanes (0+1, 2+3) then
/// their sums, for the low and high halves at once, and the halves are
/// added last: `lane_sum`'s order, so its bits.
#[inline(always)]
fn lane_sums<const P: usize>(acc: &[__m256; P], out: &mut [f32]) {
    // SAFETY: register operations, and stores of at most 4 floats within
    // `out` (sliced to the count first); inlined into AVX2 code.
    unsafe {
        let zero = _mm256_setzero_ps();
        for (a, o) in acc.chunks(4).zip(out.chunks_mut(4)) {
            let at = |i: usize| a.get(i).copied().unwrap_or(zero);
            let ab = _mm256_hadd_ps(at(0), at(1));
            let cd = _mm256_hadd_ps(at(2), at(3));
            let s = _mm256_hadd_ps(ab, cd);
            let r = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps::<1>(s));
            let mut four = [0f32; 4];
            _mm_storeu_ps(four.as_mut_ptr(), r);
            let k = o.len().min(a.len());
            o[..k].copy_from_slice(&four[..k]);
        }
    }
}

/// How many inputs `wide` takes per pass over its rows: with two rows,
/// eight dependency chains in flight, and each group of the rows loaded
/// once for four inputs.
const WIDE_INPUTS: usize = 4;

/// A prefill kernel that takes `R` rows by `P` inputs per pass, row r's
/// results to `out[r·stride + j]`.
trait Pass {
    type Row: Copy;
    type Input: Copy;
    fn pass<const R: usize, const P: usize>(
        ws: &[Self::Row; R],
        xs: &[Self::Input],
        out: &mut [f32],
        stride: usize,
    );
}

/// `R` rows against every input, [`WIDE_INPUTS`] inputs at a time (then
/// two, then one for the remainder).
#[inline(always)]
fn by_inputs<K: Pass, const R: usize>(
    ws: &[K::Row; R],
    xs: &[K::Input],
    out: &mut [f32],
    stride: usize,
) {
    let mut j = 0;
    while j < xs.len() {
        let (x, o) = (&xs[j..], &mut out[j..]);
        j += match xs.len() - j {
            1 => {
                K::pass::<R, 1>(ws, x, o, stride);
                1
            }
            2 | 3 => {
                K::pass::<R, 2>(ws, x, o, stride);
                2
            }
            _ => {
                K::pass::<R, WIDE_INPUTS>(ws, x, o, stride);
                WIDE_INPUTS
            }
        };
    }
}

/// Every row of `ws` against every input, two rows at a time: row r's
/// results at `out[r·xs.len()..]`.
#[inline(always)]
fn by_rows<K: Pass>(ws: &[K::Row], xs: &[K::Input], out: &mut [f32]) {
    let n = xs.len();
    let mut pairs = ws.chunks_exact(2);
    for (i, pair) in pairs.by_ref().enumerate() {
        by_inputs::<K, 2>(&[pair[0], pair[1]], xs, &mut out[2 * i * n..], n);
    }
    if let [last] = pairs.remainder() {
        let at = (ws.len() - 1) * n;
        by_inputs::<K, 1>(&[*last], xs, &mut out[at..], n);
    }
}

/// [`wide_p`] as a [`Pass`] (on rows and inputs that live for `'a`).
struct Wide<'a, const VNNI: bool, const S: bool>(PhantomData<&'a ()>);

impl<'a, const VNNI: bool, const S: bool> Pass for Wide<'a, VNNI, S> {
    type Row = Wide32<'a>;
    type Input = Act32<'a>;
    #[inline(always)]
    fn pass<const R: usize, const P: usize>(
        ws: &[Wide32<'a>; R],
        xs: &[Act32<'a>],
        out: &mut [f32],
        stride: usize,
    ) {
        wide_p::<VNNI, S, R, P>(ws, xs, out, stride);
    }
}

#[inline(always)]
fn wide<const VNNI: bool, const S: bool>(ws: &[Wide32<'_>], xs: &[Act32<'_>], out: &mut [f32]) {
    by_rows::<Wide<'_, VNNI, S>>(ws, xs, out);
}

/// `super::dot_wide32_inputs` on AVX2.
///
/// # Safety
/// AVX2 and F16C present; each row padded to whole groups of 8 blocks,
/// all of one format; every input of the same block count, its quants
/// padded too; `out` holds a result per row and input.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn wide_avx2(ws: &[Wide32<'_>], xs: &[Act32<'_>], out: &mut [f32]) {
    if ws.first().is_some_and(|w| w.signed) {
        wide::<false, true>(ws, xs, out);
    } else {
        wide::<false, false>(ws, xs, out);
    }
}

/// `super::dot_wide32_inputs` on AVX-512 VNNI.
///
/// # Safety
/// AVX2, F16C and AVX-512 F/VL/VNNI present; lengths as above.
#[target_feature(enable = "avx2,f16c,avx512f,avx512vl,avx512vnni")]
pub(super) unsafe fn wide_vnni(ws: &[Wide32<'_>], xs: &[Act32<'_>], out: &mut [f32]) {
    if ws.first().is_some_and(|w| w.signed) {
        wide::<true, true>(ws, xs, out);
    } else {
        wide::<true, false>(ws, xs, out);
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
pub(super) unsafe fn rows32_avx2(r: Row32<'_>, row_bytes: usize, x: Act32<'_>, out: &mut [f32]) {
    rows32::<false>(r, row_bytes, x, out);
}

/// `super::dot_rows32` on AVX-512 VNNI.
///
/// # Safety
/// AVX2, F16C and AVX-512 F/VL/VNNI present; lengths as above.
#[target_feature(enable = "avx2,f16c,avx512f,avx512vl,avx512vnni")]
pub(super) unsafe fn rows32_vnni(r: Row32<'_>, row_bytes: usize, x: Act32<'_>, out: &mut [f32]) {
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
pub(super) unsafe fn kblock_avx2(w: KBlockInts<'_>, x: &[i8; 256], bs: &[i16; 16]) -> (i32, i32) {
    kblock::<false>(w, x, bs)
}

/// # Safety
/// AVX2, AVX-512F, VL and VNNI present.
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
pub(super) unsafe fn kblock_vnni(w: KBlockInts<'_>, x: &[i8; 256], bs: &[i16; 16]) -> (i32, i32) {
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
            0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2,
            3, 2, 3,
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

/// Super-blocks `g..g + n` (n ≤ 8) of `R` rows in lane order by groups
/// of 16 against each of `P` inputs (the same order): per row and input,
/// block g + b's `(isum, imin)` of `super::kblock` in lane b (zero in
/// lanes `n..`; `imin` only with `MIN`). A super-block's 8 multiply-adds
/// per pair leave group l's sum in lane l of `lo` (groups 0–7) or `hi`
/// (8–15), scaled there by the group's scale; the offset comes off as
/// Σ (offset·scale)·Σx per group (`so`, with `OFF`); one reduction
/// serves 8 super-blocks. Each input's bytes are loaded once for all
/// the rows.
///
/// # Safety
/// Every row and input hold blocks `g..g + n` (256 quants, 16 scales,
/// scaled offsets, minima and sums each); AVX2 code only.
#[inline(always)]
unsafe fn klane_ints<
    const VNNI: bool,
    const R: usize,
    const P: usize,
    const OFF: bool,
    const MIN: bool,
>(
    w: &[KRowLanes<'_>; R],
    x: &[Q8KView<'_>; P],
    g: usize,
    n: usize,
) -> ([[__m256i; P]; R], [[__m256i; P]; R]) {
    // SAFETY: as documented.
    unsafe {
        let zero = _mm256_setzero_si256();
        let mut is = [[[zero; 8]; P]; R];
        let mut im = [[[zero; 8]; P]; R];
        for b in 0..n {
            let blk = g + b;
            let mut lo = [[zero; P]; R];
            let mut hi = [[zero; P]; R];
            for j in 0..4 {
                let mut wl = [zero; R];
                let mut wh = [zero; R];
                for r in 0..R {
                    let q = w[r].ints.q.as_ptr().add(256 * blk);
                    wl[r] = _mm256_loadu_si256(q.add(32 * j).cast());
                    wh[r] = _mm256_loadu_si256(q.add(128 + 32 * j).cast());
                }
                for p in 0..P {
                    let xq = x[p].q.as_ptr().add(256 * blk);
                    let xl = _mm256_loadu_si256(xq.add(32 * j).cast());
                    let xh = _mm256_loadu_si256(xq.add(128 + 32 * j).cast());
                    for r in 0..R {
                        lo[r][p] = dot_acc::<VNNI>(lo[r][p], wl[r], xl);
                        hi[r][p] = dot_acc::<VNNI>(hi[r][p], wh[r], xh);
                    }
                }
            }
            let mut sc_lo = [zero; R];
            let mut sc_hi = [zero; R];
            let mut so = [zero; R];
            let mut m = [zero; R];
            for r in 0..R {
                let sc = _mm256_loadu_si256(w[r].ints.sc.as_ptr().add(16 * blk).cast());
                sc_lo[r] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(sc));
                sc_hi[r] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256::<1>(sc));
                if OFF {
                    so[r] = _mm256_loadu_si256(w[r].so.as_ptr().add(16 * blk).cast());
                }
                if MIN {
                    m[r] = _mm256_loadu_si256(w[r].ints.m.as_ptr().add(16 * blk).cast());
                }
            }
            for p in 0..P {
                let bs = _mm256_loadu_si256(x[p].bsums.as_ptr().add(16 * blk).cast());
                for r in 0..R {
                    let mut v = _mm256_add_epi32(
                        _mm256_mullo_epi32(lo[r][p], sc_lo[r]),
                        _mm256_mullo_epi32(hi[r][p], sc_hi[r]),
                    );
                    if OFF {
                        v = _mm256_sub_epi32(v, _mm256_madd_epi16(so[r], bs));
                    }
                    is[r][p][b] = v;
                    if MIN {
                        im[r][p][b] = _mm256_madd_epi16(m[r], bs);
                    }
                }
            }
        }
        // Loops, not `from_fn`: a closure would not be compiled with
        // the entry point's features.
        let (mut isum, mut imin) = ([[zero; P]; R], [[zero; P]; R]);
        for r in 0..R {
            for p in 0..P {
                isum[r][p] = reduce8(&is[r][p]);
                if MIN {
                    imin[r][p] = reduce8(&im[r][p]);
                }
            }
        }
        (isum, imin)
    }
}

/// `super::kdots_inputs` for `R` rows and `P` inputs at a time: each
/// super-block of the rows and inputs loaded once for all the pairs, the
/// f32 steps of `kquant`'s lanes on 8 super-blocks at once; row r's
/// results go to `out[r·stride + j]`.
#[inline(always)]
fn klanes_p<const VNNI: bool, const R: usize, const P: usize, const OFF: bool, const MIN: bool>(
    w: &[KRowLanes<'_>; R],
    xs: &[Q8KView<'_>],
    out: &mut [f32],
    stride: usize,
) {
    let nb = w[0].d.len();
    let x: [Q8KView<'_>; P] = std::array::from_fn(|p| xs[p]);
    // SAFETY: register operations, and loads of blocks below `nb` of
    // the rows and of each input (the caller checked the lengths); the
    // partial group's scales are loaded under a mask; inlined into AVX2
    // code.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); P]; R];
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for g in (0..nb).step_by(8) {
            let n = (nb - g).min(8);
            let (isum, imin) = match n {
                8 => klane_ints::<VNNI, R, P, OFF, MIN>(w, &x, g, 8),
                4 => klane_ints::<VNNI, R, P, OFF, MIN>(w, &x, g, 4),
                _ => klane_ints::<VNNI, R, P, OFF, MIN>(w, &x, g, n),
            };
            let load = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lanes);
            let mut dw = [_mm256_setzero_ps(); R];
            let mut dmin = [_mm256_setzero_ps(); R];
            for r in 0..R {
                dw[r] = scales8(w[r].d, g, n, load);
                if MIN {
                    dmin[r] = scales8(w[r].dmin, g, n, load);
                }
            }
            for p in 0..P {
                let dx = scales8(x[p].d, g, n, load);
                for r in 0..R {
                    let a = acc[r][p];
                    let mut o = _mm256_add_ps(
                        a,
                        _mm256_mul_ps(_mm256_mul_ps(dw[r], dx), _mm256_cvtepi32_ps(isum[r][p])),
                    );
                    if MIN {
                        o = _mm256_sub_ps(
                            o,
                            _mm256_mul_ps(
                                _mm256_mul_ps(dmin[r], dx),
                                _mm256_cvtepi32_ps(imin[r][p]),
                            ),
                        );
                    }
                    acc[r][p] = kept(a, o, n, load);
                }
            }
        }
        rows_out(&acc, out, stride);
    }
}

/// `v[g..g + n]` (n ≤ 8) in lanes `0..n`, zero above (`load`: lanes
/// below n set).
///
/// # Safety
/// `v` holds `g + n` values; AVX2 code only.
#[inline(always)]
unsafe fn scales8(v: &[f32], g: usize, n: usize, load: __m256i) -> __m256 {
    // SAFETY: as documented; the mask stops the load at `g + n`.
    unsafe {
        if n == 8 {
            _mm256_loadu_ps(v[g..].as_ptr())
        } else {
            _mm256_maskload_ps(v[g..].as_ptr(), load)
        }
    }
}

/// [`klanes_p`] as a [`Pass`] (on rows and inputs that live for `'a`).
struct KLanes<'a, const VNNI: bool, const OFF: bool, const MIN: bool>(PhantomData<&'a ()>);

impl<'a, const VNNI: bool, const OFF: bool, const MIN: bool> Pass for KLanes<'a, VNNI, OFF, MIN> {
    type Row = KRowLanes<'a>;
    type Input = Q8KView<'a>;
    #[inline(always)]
    fn pass<const R: usize, const P: usize>(
        ws: &[KRowLanes<'a>; R],
        xs: &[Q8KView<'a>],
        out: &mut [f32],
        stride: usize,
    ) {
        klanes_p::<VNNI, R, P, OFF, MIN>(ws, xs, out, stride);
    }
}

#[inline(always)]
fn klanes_all<const VNNI: bool, const OFF: bool, const MIN: bool>(
    ws: &[KRowLanes<'_>],
    xs: &[Q8KView<'_>],
    out: &mut [f32],
) {
    by_rows::<KLanes<'_, VNNI, OFF, MIN>>(ws, xs, out);
}

/// The rows' format as constants: whether quants carry an offset and
/// whether groups have a minimum (each K-quant has one or the other).
#[inline(always)]
fn klanes<const VNNI: bool>(ws: &[KRowLanes<'_>], xs: &[Q8KView<'_>], out: &mut [f32]) {
    let Some(first) = ws.first() else {
        return;
    };
    match (first.ints.offset != 0, first.has_min) {
        (true, true) => klanes_all::<VNNI, true, true>(ws, xs, out),
        (true, false) => klanes_all::<VNNI, true, false>(ws, xs, out),
        (false, true) => klanes_all::<VNNI, false, true>(ws, xs, out),
        (false, false) => klanes_all::<VNNI, false, false>(ws, xs, out),
    }
}

/// `super::kdots_inputs` on AVX2.
///
/// # Safety
/// AVX2 present; lengths and formats as `kdots_inputs` asserts.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn klanes_avx2(ws: &[KRowLanes<'_>], xs: &[Q8KView<'_>], out: &mut [f32]) {
    klanes::<false>(ws, xs, out);
}

/// `super::kdots_inputs` on AVX-512 VNNI.
///
/// # Safety
/// AVX2, AVX-512F, VL and VNNI present; lengths as above.
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
pub(super) unsafe fn klanes_vnni(ws: &[KRowLanes<'_>], xs: &[Q8KView<'_>], out: &mut [f32]) {
    klanes::<true>(ws, xs, out);
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
