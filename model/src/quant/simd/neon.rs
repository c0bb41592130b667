//! The NEON kernels behind `super`'s aarch64 arms: integer dot products of
//! unsigned or signed weight quants with i8 inputs, and the f32 lanes.

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
