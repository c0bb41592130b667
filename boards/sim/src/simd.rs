//! The soft engine's kernels compiled again for AVX2 and chosen at run
//! time: the simulated board runs the engine model on the host's CPU, and
//! its logits, softmax and weighted sums vectorise only with AVX2's 32-bit shifts
//! and 64-bit multiplies. The code is `SoftEngine`'s own (always inlined),
//! so the numbers are the firmware's bit for bit (tested in `engine`).
//!
//! This is the crate's one module with `unsafe`: calling a function
//! compiled for a CPU feature.

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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn logits_avx2(e: &mut SoftEngine, job: LogitJob<'_>) {
    e.logits_inline(job);
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
        for w in [1, 5, 8, 16, 32, 64, 100, 128, 256] {
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
                    let scales: Vec<u32> =
                        (0..g).map(|_| (rng.next() % (1 << 20)) as u32).collect();
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
