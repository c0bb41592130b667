//! Dense attention: softmax(q·Kᵀ/√d)·V per query head of a group.

use alloc::vec;
use alloc::vec::Vec;

use super::common::{dot, softmax};
use crate::error::AttentionError;
use crate::math::sqrt;
use crate::shape::GroupShape;

/// Dense attention of one KV group (q `[g][d]`, K and V `[S][d]`, output
/// `[g][d]`). S = 0 is [`AttentionError::EmptySequence`].
pub fn dense(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
) -> Result<Vec<f32>, AttentionError> {
    shape.check_inputs(q.len(), k.len(), v.len())?;
    let d = shape.head_dim;
    let scale = 1.0 / sqrt(d as f64);
    let mut out = Vec::with_capacity(q.len());
    for q_h in q.chunks_exact(d) {
        let logits: Vec<f64> = k.chunks_exact(d).map(|k_j| dot(q_h, k_j) * scale).collect();
        let p = softmax(&logits);
        out.extend(
            weighted_sum(&p, v.chunks_exact(d), d)
                .iter()
                .map(|&x| x as f32),
        );
    }
    Ok(out)
}

/// Σ_j p_j · row_j in f64.
pub(crate) fn weighted_sum<'a>(
    p: &[f64],
    rows: impl Iterator<Item = &'a [f32]>,
    d: usize,
) -> Vec<f64> {
    let mut acc = vec![0.0f64; d];
    for (&pj, row) in p.iter().zip(rows) {
        for (a, &x) in acc.iter_mut().zip(row) {
            *a += pj * f64::from(x);
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_token_is_its_value() {
        let shape = GroupShape {
            group: 2,
            head_dim: 3,
        };
        let out = dense(
            &[1.0, 2.0, 3.0, -1.0, 0.0, 5.0],
            &[0.5; 3],
            &[1.0, -2.0, 0.25],
            shape,
        )
        .unwrap();
        assert_eq!(out, [1.0, -2.0, 0.25, 1.0, -2.0, 0.25]);
    }

    #[test]
    fn two_tokens_by_hand() {
        // d = 4, q·k0 = 2 → logit 1; q·k1 = 0 → logit 0.
        let shape = GroupShape {
            group: 1,
            head_dim: 4,
        };
        let q = [1.0, 1.0, 0.0, 0.0];
        let k = [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0];
        let v = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
        let out = dense(&q, &k, &v, shape).unwrap();
        let e = core::f64::consts::E;
        let p0 = (e / (e + 1.0)) as f32;
        assert!((out[0] - p0).abs() < 1e-7);
        assert!((out[1] - (1.0 - p0)).abs() < 1e-7);
        assert_eq!(out[2..], [0.0, 0.0]);
    }

    #[test]
    fn errors() {
        let shape = GroupShape {
            group: 1,
            head_dim: 2,
        };
        assert_eq!(
            dense(&[1.0, 1.0], &[], &[], shape),
            Err(AttentionError::EmptySequence)
        );
        assert!(dense(&[1.0], &[1.0, 1.0], &[1.0, 1.0], shape).is_err());
        assert!(dense(&[1.0, 1.0], &[1.0, 1.0], &[1.0], shape).is_err());
    }
}
