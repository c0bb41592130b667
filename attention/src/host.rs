//! The host's fast dense decode attention in f32: one pass over K (the
//! logits of every query head of a KV group at once, so each K row is read
//! once), a softmax, one pass over V. Eight independent accumulators per
//! dot product let the compiler vectorize. Its accuracy is that of f32
//! arithmetic; [`crate::reference`] (f64) is the yardstick it is tested
//! against.

use alloc::vec;

use crate::error::AttentionError;

fn dot8(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Softmax of every row of `s` logits, in place.
fn softmax_rows(logits: &mut [f32], s: usize) {
    for l in logits.chunks_exact_mut(s) {
        let m = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0f32;
        for x in l.iter_mut() {
            *x = libm::expf(*x - m);
            sum += *x;
        }
        let inv = 1.0 / sum;
        for x in l.iter_mut() {
            *x *= inv;
        }
    }
}

/// Dense attention of one KV group's `g` query heads (`q`: `[g][d]`) over
/// `n` tokens stored **interleaved**: `kv` is `[n][2d]`, each row a token's
/// key then its value (the layout of an SSD KV store that reads a block of
/// K and V in one extent; attention walks it with a stride of `2d`). Row
/// order does not matter. Writes `[g][d]`.
pub fn interleaved_f32(
    q: &[f32],
    kv: &[f32],
    g: usize,
    d: usize,
    out: &mut [f32],
) -> Result<(), AttentionError> {
    if d == 0 {
        return Err(AttentionError::InvalidHeadDim { head_dim: d });
    }
    let n = kv.len() / (2 * d);
    if n == 0 {
        return Err(AttentionError::EmptySequence);
    }
    for (what, expected, actual) in [
        ("q", g * d, q.len()),
        ("kv", n * 2 * d, kv.len()),
        ("out", g * d, out.len()),
    ] {
        if expected != actual {
            return Err(AttentionError::LengthMismatch {
                what,
                expected,
                actual,
            });
        }
    }
    let scale = 1.0 / libm::sqrtf(d as f32);
    let mut logits = vec![0f32; g * n];
    for (j, row) in kv.chunks_exact(2 * d).enumerate() {
        for (i, qi) in q.chunks_exact(d).enumerate() {
            logits[i * n + j] = dot8(qi, &row[..d]) * scale;
        }
    }
    softmax_rows(&mut logits, n);
    out.fill(0.0);
    for (j, row) in kv.chunks_exact(2 * d).enumerate() {
        for (i, oi) in out.chunks_exact_mut(d).enumerate() {
            let p = logits[i * n + j];
            for (a, x) in oi.iter_mut().zip(&row[d..]) {
                *a += p * x;
            }
        }
    }
    Ok(())
}

/// Dense attention of `q_heads` query heads (`[q_heads][d]`) over
/// `kv_heads` heads of `s` tokens (`k`, `v`: `[kv_heads][s][d]`); query
/// head h uses KV head `h / (q_heads / kv_heads)`. Writes `[q_heads][d]`.
#[allow(clippy::too_many_arguments)]
pub fn dense_f32(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    q_heads: usize,
    kv_heads: usize,
    s: usize,
    d: usize,
    out: &mut [f32],
) -> Result<(), AttentionError> {
    if kv_heads == 0 || q_heads == 0 || !q_heads.is_multiple_of(kv_heads) {
        return Err(AttentionError::InvalidHeads { q_heads, kv_heads });
    }
    if d == 0 {
        return Err(AttentionError::InvalidHeadDim { head_dim: d });
    }
    if s == 0 {
        return Err(AttentionError::EmptySequence);
    }
    for (what, expected, actual) in [
        ("q", q_heads * d, q.len()),
        ("k", kv_heads * s * d, k.len()),
        ("v", kv_heads * s * d, v.len()),
        ("out", q_heads * d, out.len()),
    ] {
        if expected != actual {
            return Err(AttentionError::LengthMismatch {
                what,
                expected,
                actual,
            });
        }
    }
    let g = q_heads / kv_heads;
    let scale = 1.0 / libm::sqrtf(d as f32);
    let mut logits = vec![0f32; g * s];
    for h in 0..kv_heads {
        let (kh, vh) = (
            &k[h * s * d..(h + 1) * s * d],
            &v[h * s * d..(h + 1) * s * d],
        );
        let qs = &q[h * g * d..(h + 1) * g * d];
        for (j, row) in kh.chunks_exact(d).enumerate() {
            for (i, qi) in qs.chunks_exact(d).enumerate() {
                logits[i * s + j] = dot8(qi, row) * scale;
            }
        }
        softmax_rows(&mut logits, s);
        let o = &mut out[h * g * d..(h + 1) * g * d];
        o.fill(0.0);
        for (j, row) in vh.chunks_exact(d).enumerate() {
            for (i, oi) in o.chunks_exact_mut(d).enumerate() {
                let p = logits[i * s + j];
                for (a, x) in oi.iter_mut().zip(row) {
                    *a += p * x;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Method;
    use crate::testdata::{structured_kv, structured_query};
    use alloc::vec::Vec;

    #[test]
    fn matches_the_f64_reference() {
        for (kvh, g, s, d) in [(2, 3, 300, 64), (1, 1, 17, 12), (4, 1, 1024, 128)] {
            let (k, v) = structured_kv(5, kvh, s, d);
            let q = structured_query(5, kvh * g, d, kvh);
            let want =
                crate::reference::attend_heads(Method::Dense, &q, &k, &v, kvh * g, kvh, s, d)
                    .unwrap();
            let mut got = vec![0f32; kvh * g * d];
            dense_f32(&q, &k, &v, kvh * g, kvh, s, d, &mut got).unwrap();
            let err = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(err < 1e-4, "s {s} d {d}: max error {err}");
        }
    }

    #[test]
    fn interleaved_rows_in_any_order_match_dense() {
        let (g, s, d) = (3, 77, 16);
        let (k, v) = structured_kv(9, 1, s, d);
        let q = structured_query(9, g, d, 1);
        let mut want = vec![0f32; g * d];
        dense_f32(&q, &k, &v, g, 1, s, d, &mut want).unwrap();
        // Rows reversed: attention does not depend on token order.
        let kv: Vec<f32> = (0..s)
            .rev()
            .flat_map(|t| k[t * d..(t + 1) * d].iter().chain(&v[t * d..(t + 1) * d]))
            .copied()
            .collect();
        let mut got = vec![0f32; g * d];
        interleaved_f32(&q, &kv, g, d, &mut got).unwrap();
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-5, "max error {err}");
        assert!(interleaved_f32(&q, &kv[..2 * d * 3 + 1], g, d, &mut got).is_err());
        assert!(interleaved_f32(&q, &[], g, d, &mut got).is_err());
    }

    #[test]
    fn rejects_bad_shapes() {
        let mut out = vec![0f32; 8];
        assert!(dense_f32(&[0.0; 8], &[0.0; 16], &[0.0; 16], 1, 2, 1, 8, &mut out).is_err());
        assert!(dense_f32(&[0.0; 8], &[0.0; 16], &[0.0; 8], 1, 1, 2, 8, &mut out).is_err());
    }
}
