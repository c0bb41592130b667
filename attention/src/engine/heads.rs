//! Multi-head entry point of the engine model: splits `[heads][..]` buffers
//! into KV groups and runs [`dense_group`] or [`sparf_group`] on each.

use alloc::vec::Vec;

use super::model::{dense_group, sparf_group};
use crate::error::AttentionError;
use crate::shape::{HeadsLayout, Method};

/// Attention of all heads: `q` is `[q_heads][d]` fp16, `k` and `v` are
/// `[kv_heads][s][d]` fp16; query head `h` uses KV head
/// `h / (q_heads / kv_heads)`. Output `[q_heads][d]` Fx.
///
/// The device runs dense and SparF only: [`Method::SparQ`] is
/// [`AttentionError::Unsupported`].
#[allow(clippy::too_many_arguments)] // Signature shared with the reference and fixed by the workspace API.
pub fn attend_heads(
    method: Method,
    q: &[u16],
    k: &[u16],
    v: &[u16],
    q_heads: usize,
    kv_heads: usize,
    s: usize,
    d: usize,
) -> Result<Vec<i32>, AttentionError> {
    method.validate(d)?;
    let layout = HeadsLayout {
        q_heads,
        kv_heads,
        s,
        d,
    };
    layout.per_group(q, k, v, |q_g, k_g, v_g, shape| match method {
        Method::Dense => dense_group(q_g, k_g, v_g, shape),
        Method::SparF(p) => Ok(sparf_group(q_g, k_g, v_g, shape, p)?.out),
        Method::SparQ(_)
        | Method::Local { .. }
        | Method::H2o(_)
        | Method::Block(_)
        | Method::SparFPlus(_)
        | Method::Oracle { .. }
        | Method::Pages(_) => Err(AttentionError::Unsupported {
            method: method.name(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fixed::f32_to_f16_bits;
    use crate::shape::{GroupShape, SparseParams};
    use crate::testdata::SplitMix64;

    #[test]
    fn heads_map_to_their_kv_group() {
        let (qh, kvh, s, d) = (6, 2, 9, 8);
        let mut rng = SplitMix64::new(11);
        let mut draw =
            |n: usize| -> Vec<u16> { (0..n).map(|_| f32_to_f16_bits(rng.normal())).collect() };
        let q = draw(qh * d);
        let k = draw(kvh * s * d);
        let v = draw(kvh * s * d);
        let shape = GroupShape {
            group: 3,
            head_dim: d,
        };
        let p = SparseParams {
            r: 3,
            k: 4,
            local: 1,
        };
        for method in [Method::Dense, Method::SparF(p)] {
            let all = attend_heads(method, &q, &k, &v, qh, kvh, s, d).unwrap();
            assert_eq!(all.len(), qh * d);
            for g in 0..kvh {
                let (qg, kg, vg) = (
                    &q[g * 3 * d..(g + 1) * 3 * d],
                    &k[g * s * d..(g + 1) * s * d],
                    &v[g * s * d..(g + 1) * s * d],
                );
                let want = match method {
                    Method::SparF(p) => sparf_group(qg, kg, vg, shape, p).unwrap().out,
                    _ => dense_group(qg, kg, vg, shape).unwrap(),
                };
                assert_eq!(all[g * 3 * d..(g + 1) * 3 * d], want[..]);
            }
        }
        // The two groups see different KV, so their outputs differ.
        let all = attend_heads(Method::Dense, &q, &k, &v, qh, kvh, s, d).unwrap();
        assert_ne!(all[..3 * d], all[3 * d..]);
    }

    #[test]
    fn errors() {
        let p = SparseParams {
            r: 1,
            k: 1,
            local: 0,
        };
        assert_eq!(
            attend_heads(Method::SparQ(p), &[0; 4], &[0; 4], &[0; 4], 1, 1, 1, 4),
            Err(AttentionError::Unsupported { method: "SparQ" })
        );
        assert!(matches!(
            attend_heads(Method::Dense, &[0; 12], &[0; 8], &[0; 8], 3, 2, 1, 4),
            Err(AttentionError::InvalidHeads { .. })
        ));
        assert_eq!(
            attend_heads(Method::Dense, &[0; 4], &[], &[], 1, 1, 0, 4),
            Err(AttentionError::EmptySequence)
        );
        assert!(matches!(
            attend_heads(Method::Dense, &[0; 4], &[0; 4], &[0; 3], 1, 1, 1, 4),
            Err(AttentionError::LengthMismatch { what: "v", .. })
        ));
    }
}
