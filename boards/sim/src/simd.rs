//! The soft engine's kernels compiled again for AVX2 and chosen at run
//! time: the simulated board runs the engine model on the host's CPU, and
//! its logits, softmax and weighted sums vectorise only with AVX2's 32-bit shifts
//! and 64-bit multiplies. The code is `SoftEngine`'s own (always inlined),
//! so the numbers are the firmware's bit for bit (tested here and in
//! `engine`), but for the logits' dot products, which [`Avx2Dots`] takes
//! with AVX2's signed 32×32→64 multiply (the compiler widens both sides to
//! 64 bits and multiplies those instead, three times the work): integer
//! sums that never leave i64 are the same number in any order.
//!
//! This is the crate's one module with `unsafe`: calling a function
//! compiled for a CPU feature, and its intrinsics.

use firmware::hal::{Engine, LogitJob, SoftEngine, WeightedSumJob};

/// [`Engine::logits`] on the widest instruction set this CPU has.
pub(crate) fn logits(e: &mut SoftEngine, job: LogitJob<'_>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked on the line above.
        unsafe { logits_avx2(e, job) };
        return;
    }
    e.logits(job);
}

/// [`Engine::softmax`] on the widest instruction set this CPU has.
pub(crate) fn softmax(e: &mut SoftEngine, logits: &[i32], probs: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked on the line above.
        unsafe { softmax_avx2(e, logits, probs) };
        return;
    }
    e.softmax(logits, probs);
}

/// [`Engine::weighted_sum`] on the widest instruction set this CPU has.
pub(crate) fn weighted_sum(e: &mut SoftEngine, job: WeightedSumJob<'_>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked on the line above.
        unsafe { weighted_sum_avx2(e, job) };
        return;
    }
    e.weighted_sum(job);
}

/// Asks the CPU to bring the cache lines of `bytes` in: a hint that
/// changes no value. The flash pages of the simulated array live all over
/// the host's memory; a read's kept rows are fetched when it is submitted
/// and copied when it completes, by which time they have arrived.
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let Some(last) = bytes.len().checked_sub(1) else {
            return;
        };
        let base = bytes.as_ptr();
        // Every line from the first byte's to the last byte's.
        let first = base as usize & !63;
        for line in (first..=base as usize + last).step_by(64) {
            // SAFETY: a prefetch never faults and reads nothing the program
            // sees; the address is that of a line holding part of `bytes`.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(
                    base.wrapping_offset((line as isize).wrapping_sub(base as isize))
                        .cast(),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn logits_avx2(e: &mut SoftEngine, job: LogitJob<'_>) {
    e.logits_with(job, &Avx2Dots);
}

/// [`firmware::hal::FitDots`] with AVX2 intrinsics, for any width that is
/// a multiple of 8 (others: the portable kernel). Only built into
/// [`logits_avx2`], so the CPU has AVX2 whenever it runs.
#[cfg(target_arch = "x86_64")]
struct Avx2Dots;

#[cfg(target_arch = "x86_64")]
impl firmware::hal::FitDots for Avx2Dots {
    #[inline(always)]
    fn logits(&self, q: &[i32], rows: &[i32], out: &mut [i32], scale: u32) {
        if q.is_empty() || !q.len().is_multiple_of(8) {
            firmware::hal::PortableDots.logits(q, rows, out, scale);
            return;
        }
        // SAFETY: `Avx2Dots` is only used by `logits_avx2`, which runs only
        // after `is_x86_feature_detected!("avx2")`.
        unsafe { dots_avx2(q, rows, out, scale) }
    }
}

/// `out[j] = scale_dot(q · rows[j], scale)` for `q.len()` a multiple of 8,
/// four rows at a time: `vpmuldq` on the even and the odd elements into
/// i64 lanes, the four rows' lanes summed together at the end.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_avx2(q: &[i32], rows: &[i32], out: &mut [i32], scale: u32) {
    use attention::engine::scale_dot;
    use core::arch::x86_64::*;
    let w = q.len();
    let n = out.len().min(rows.len() / w);
    let mut j = 0;
    while j + 4 <= n {
        let mut acc = [_mm256_setzero_si256(); 4];
        for c in 0..w / 8 {
            let qv = load8(&q[c * 8..c * 8 + 8]);
            for (r, a) in acc.iter_mut().enumerate() {
                let at = (j + r) * w + c * 8;
                *a = _mm256_add_epi64(*a, dot8(qv, &rows[at..at + 8]));
            }
        }
        // Lanes of row r: acc[r]; fold pairs, then halves, into one vector
        // of the four rows' sums.
        let s01 = _mm256_add_epi64(
            _mm256_unpacklo_epi64(acc[0], acc[1]),
            _mm256_unpackhi_epi64(acc[0], acc[1]),
        );
        let s23 = _mm256_add_epi64(
            _mm256_unpacklo_epi64(acc[2], acc[3]),
            _mm256_unpackhi_epi64(acc[2], acc[3]),
        );
        let sums = _mm256_add_epi64(
            _mm256_permute2x128_si256::<0x20>(s01, s23),
            _mm256_permute2x128_si256::<0x31>(s01, s23),
        );
        let at = &mut out[j..j + 4];
        if scale < 1 << 31 {
            at.copy_from_slice(&scale4(sums, scale));
        } else {
            let mut d = [0i64; 4];
            // SAFETY: `d` is 32 bytes, one unaligned store.
            unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), sums) };
            for (o, d) in at.iter_mut().zip(d) {
                *o = scale_dot(i128::from(d), scale);
            }
        }
        j += 4;
    }
    for (o, row) in out[j..n].iter_mut().zip(rows[j * w..].chunks_exact(w)) {
        let mut acc = _mm256_setzero_si256();
        for (q, r) in q.chunks_exact(8).zip(row.chunks_exact(8)) {
            acc = _mm256_add_epi64(acc, dot8(load8(q), r));
        }
        let mut d = [0i64; 4];
        // SAFETY: `d` is 32 bytes, one unaligned store.
        unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), acc) };
        *o = scale_dot(i128::from(d.iter().sum::<i64>()), scale);
    }
}

/// `scale_dot` of four i64 lanes `d` for a scale `c < 2^31`:
/// saturate_i32(⌊d·c / 2^28⌋) without 128-bit products. With
/// d = h·2^32 + l (h signed, l unsigned 32 bits), ⌊d·c / 2^28⌋ =
/// 16·h·c + ⌊l·c / 2^28⌋ exactly; h·c is clamped to ±2^40 first (beyond
/// that the logit saturates anyway) so that nothing overflows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn scale4(d: core::arch::x86_64::__m256i, c: u32) -> [i32; 4] {
    use core::arch::x86_64::*;
    let cv = _mm256_set1_epi64x(i64::from(c));
    let hi = _mm256_mul_epi32(_mm256_srli_epi64::<32>(d), cv);
    let lo = _mm256_srli_epi64::<28>(_mm256_mul_epu32(d, cv));
    let hi = clamp(hi, -(1 << 40), 1 << 40);
    let r = clamp(
        _mm256_add_epi64(_mm256_slli_epi64::<4>(hi), lo),
        i64::from(i32::MIN),
        i64::from(i32::MAX),
    );
    let mut lanes = [0i64; 4];
    // SAFETY: `lanes` is 32 bytes, one unaligned store.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), r) };
    // In range after the clamp.
    lanes.map(|x| x as i32)
}

/// Each i64 lane of `x` clamped to `[lo, hi]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn clamp(x: core::arch::x86_64::__m256i, lo: i64, hi: i64) -> core::arch::x86_64::__m256i {
    use core::arch::x86_64::*;
    let (lo, hi) = (_mm256_set1_epi64x(lo), _mm256_set1_epi64x(hi));
    let x = _mm256_blendv_epi8(x, hi, _mm256_cmpgt_epi64(x, hi));
    _mm256_blendv_epi8(x, lo, _mm256_cmpgt_epi64(lo, x))
}

/// Eight i32 of `x` (at least 8 long) in a vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn load8(x: &[i32]) -> core::arch::x86_64::__m256i {
    assert!(x.len() >= 8);
    // SAFETY: 8 elements in bounds, checked above; an unaligned load.
    unsafe { core::arch::x86_64::_mm256_loadu_si256(x.as_ptr().cast()) }
}

/// The i64 products of `qv` and the first 8 elements of `r`, summed in
/// pairs (even element + odd element) into four lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn dot8(qv: core::arch::x86_64::__m256i, r: &[i32]) -> core::arch::x86_64::__m256i {
    use core::arch::x86_64::*;
    let rv = load8(r);
    let even = _mm256_mul_epi32(qv, rv);
    let odd = _mm256_mul_epi32(_mm256_srli_epi64::<32>(qv), _mm256_srli_epi64::<32>(rv));
    _mm256_add_epi64(even, odd)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn softmax_avx2(e: &mut SoftEngine, logits: &[i32], probs: &mut [u32]) {
    e.softmax_inline(logits, probs);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn weighted_sum_avx2(e: &mut SoftEngine, job: WeightedSumJob<'_>) {
    e.weighted_sum_inline(job);
}

#[cfg(test)]
mod tests {
    use super::*;
    use firmware::hal::EngineWork;

    /// xorshift64: reproducible inputs without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// fp16 rows: any bit pattern (subnormals, infinities and NaNs too)
    /// or, half the time, values near 1 where most keys live.
    fn rows(rng: &mut Rng, len: usize) -> Vec<u16> {
        (0..len)
            .map(|_| match rng.next() % 2 {
                0 => rng.next() as u16,
                _ => (0x3000 + (rng.next() % 0x1800) as u16) | ((rng.next() as u16) & 0x8000),
            })
            .collect()
    }

    #[test]
    fn logits_equal_the_portable_engine() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for w in [1, 5, 8, 16, 24, 32, 64, 100, 128, 256] {
            for n in [0, 1, 7, 33] {
                for huge in [false, true] {
                    let g = 3;
                    let queries: Vec<i32> = (0..g * w)
                        .map(|_| match huge {
                            // Sums that need i128 (not `sums_fit_i64`).
                            true => i32::MAX - (rng.next() % 3) as i32,
                            false => (rng.next() % 200_001) as i32 - 100_000,
                        })
                        .collect();
                    // Mostly the engine's range; now and then past 2^31
                    // (the scalar scaling) or of any size.
                    let scales: Vec<u32> = (0..g)
                        .map(|_| match rng.next() % 8 {
                            0 => rng.next() as u32 | 1 << 31,
                            1 => rng.next() as u32 >> (rng.next() % 32),
                            _ => (rng.next() % (1 << 20)) as u32,
                        })
                        .collect();
                    let rows = rows(&mut rng, n * w);
                    let run = |simd: bool| {
                        let mut e = SoftEngine::default();
                        let mut out = vec![7i32; g * (n + 2)];
                        let job = LogitJob {
                            queries: &queries,
                            scales: &scales,
                            rows: &rows,
                            width: w,
                            out: &mut out,
                            out_stride: n + 2,
                            out_offset: 1,
                        };
                        if simd {
                            logits(&mut e, job)
                        } else {
                            e.logits(job)
                        }
                        (out, e.work)
                    };
                    assert_eq!(run(true), run(false), "w {w} n {n} huge {huge}");
                }
            }
        }
    }

    /// The four-lane scaling is `scale_dot` at the edges: sums at the ends
    /// of i64, either side of the saturation points, and random ones, for
    /// scales up to 2^31 - 1.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn four_lane_scaling_is_scale_dot() {
        use attention::engine::scale_dot;
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for c in [0u32, 1, 5792, 1 << 20, (1 << 31) - 1, 77_777_777] {
            let mut ds = vec![i64::MAX, i64::MIN + 1, 0, -1, 1, i64::MAX >> 20];
            // Around the points where the logit saturates.
            if c > 0 {
                for edge in [i128::from(i32::MAX) << 28, i128::from(i32::MIN) << 28] {
                    let d = edge / i128::from(c);
                    for off in -2..=2 {
                        ds.push(
                            (d + off).clamp(i128::from(i64::MIN + 1), i128::from(i64::MAX)) as i64,
                        );
                    }
                }
            }
            ds.extend((0..400).map(|_| (rng.next() as i64) >> (rng.next() % 63)));
            for chunk in ds.chunks(4) {
                let mut d = [0i64; 4];
                d[..chunk.len()].copy_from_slice(chunk);
                // SAFETY: AVX2 checked above; `d` is 32 bytes.
                let got =
                    unsafe { scale4(core::arch::x86_64::_mm256_loadu_si256(d.as_ptr().cast()), c) };
                let want = d.map(|d| scale_dot(i128::from(d), c));
                assert_eq!(got, want, "c {c} d {d:?}");
            }
        }
    }

    #[test]
    fn softmax_and_weighted_sums_equal_the_portable_engine() {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        for n in [0, 1, 9, 300] {
            let logits: Vec<i32> = (0..n)
                .map(|_| rng.next() as i32 >> (rng.next() % 24))
                .collect();
            let run = |simd: bool| {
                let mut e = SoftEngine::default();
                let mut probs = vec![0u32; n];
                if simd {
                    softmax(&mut e, &logits, &mut probs)
                } else {
                    e.softmax(&logits, &mut probs)
                }
                (probs, e.work)
            };
            assert_eq!(run(true), run(false), "softmax n {n}");
        }
        for d in [1, 8, 64, 128, 256] {
            for n in [0, 1, 17] {
                let g = 3;
                let probs: Vec<u32> = (0..g * n)
                    .map(|_| (rng.next() % (1 << 30)) as u32)
                    .collect();
                let rows = rows(&mut rng, n * d);
                let start: Vec<i64> = (0..g * d).map(|_| rng.next() as i64 >> 8).collect();
                let run = |simd: bool| -> (Vec<i64>, EngineWork) {
                    let mut e = SoftEngine::default();
                    let mut acc = start.clone();
                    let job = WeightedSumJob {
                        probs: &probs,
                        probs_stride: n,
                        probs_offset: 0,
                        rows: &rows,
                        d,
                        acc: &mut acc,
                    };
                    if simd {
                        weighted_sum(&mut e, job)
                    } else {
                        e.weighted_sum(job)
                    }
                    (acc, e.work)
                };
                assert_eq!(run(true), run(false), "weighted sum d {d} n {n}");
            }
        }
    }
}
