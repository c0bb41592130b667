//! Multi-head entry point of the reference: splits `[heads][..]` buffers
//! into KV groups and dispatches on the method.

use alloc::vec::Vec;

use super::{block_sparse, dense, local, sparf, sparq};
use crate::error::AttentionError;
use crate::shape::{HeadsLayout, Method};

/// Attention of all heads: `q` is `[q_heads][d]`, `k` and `v` are
/// `[kv_heads][s][d]`; query head `h` uses KV head `h / (q_heads /
/// kv_heads)`. Output `[q_heads][d]`.
#[allow(clippy::too_many_arguments)] // Signature fixed by the workspace API.
pub fn attend_heads(
    method: Method,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    q_heads: usize,
    kv_heads: usize,
    s: usize,
    d: usize,
) -> Result<Vec<f32>, AttentionError> {
    method.validate(d)?;
    let layout = HeadsLayout {
        q_heads,
        kv_heads,
        s,
        d,
    };
    layout.per_group(q, k, v, |q_g, k_g, v_g, shape| match method {
        Method::Dense => dense(q_g, k_g, v_g, shape),
        Method::SparQ(p) => sparq(q_g, k_g, v_g, shape, p),
        Method::SparF(p) => sparf(q_g, k_g, v_g, shape, p),
        Method::Local { window } => local(q_g, k_g, v_g, shape, window),
        Method::H2o(_) => Err(AttentionError::Unsupported {
            method: "H2O (stateful: use reference::H2o)",
        }),
        Method::Block(p) => block_sparse(q_g, k_g, v_g, shape, p),
        // Stateless: the basis of the keys given.
        Method::SparFPlus(o) => {
            let b = super::Basis::of_kind(o.basis, k_g, shape.head_dim);
            super::sparf_plus(q_g, k_g, &b.rotate_key(k_g), v_g, shape, o.p, o.guard, &b)
                .map(|t| t.out)
        }
        Method::Oracle { k } => super::oracle(q_g, k_g, v_g, shape, k),
        // Defined on the drive's layout and integer bounds only.
        Method::Pages(_) => Err(AttentionError::Unsupported {
            method: "Pages (engine model only: attention::engine::pages_group)",
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{GroupShape, SparseParams};
    use crate::testdata::SplitMix64;

    #[test]
    fn heads_map_to_their_kv_group() {
        let (qh, kvh, s, d) = (4, 2, 7, 8);
        let mut rng = SplitMix64::new(5);
        let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.normal()).collect() };
        let q = draw(qh * d);
        let k = draw(kvh * s * d);
        let v = draw(kvh * s * d);
        let shape = GroupShape {
            group: 2,
            head_dim: d,
        };
        let p = SparseParams {
            r: 2,
            k: 3,
            local: 1,
        };
        let methods = [
            Method::Dense,
            Method::SparQ(p),
            Method::SparF(p),
            Method::Local { window: 3 },
            Method::Block(crate::shape::BlockParams {
                block: 2,
                budget: 4,
            }),
        ];
        for method in methods {
            let all = attend_heads(method, &q, &k, &v, qh, kvh, s, d).unwrap();
            for g in 0..kvh {
                let qg = &q[g * 2 * d..(g + 1) * 2 * d];
                let kg = &k[g * s * d..(g + 1) * s * d];
                let vg = &v[g * s * d..(g + 1) * s * d];
                let want = match method {
                    Method::Dense => dense(qg, kg, vg, shape),
                    Method::SparQ(p) => sparq(qg, kg, vg, shape, p),
                    Method::SparF(p) => sparf(qg, kg, vg, shape, p),
                    Method::Local { window } => local(qg, kg, vg, shape, window),
                    Method::H2o(_) => unreachable!("stateful"),
                    Method::Block(p) => block_sparse(qg, kg, vg, shape, p),
                    Method::SparFPlus(_) | Method::Oracle { .. } | Method::Pages(_) => {
                        unreachable!("not listed")
                    }
                }
                .unwrap();
                assert_eq!(all[g * 2 * d..(g + 1) * 2 * d], want[..]);
            }
        }
    }

    #[test]
    fn errors() {
        assert!(matches!(
            attend_heads(Method::Dense, &[0.0; 6], &[0.0; 8], &[0.0; 8], 3, 2, 2, 2),
            Err(AttentionError::InvalidHeads { .. })
        ));
        assert_eq!(
            attend_heads(Method::Dense, &[0.0; 2], &[], &[], 1, 1, 0, 2),
            Err(AttentionError::EmptySequence)
        );
        let bad = SparseParams {
            r: 0,
            k: 1,
            local: 0,
        };
        assert!(matches!(
            attend_heads(
                Method::SparF(bad),
                &[0.0; 2],
                &[0.0; 2],
                &[0.0; 2],
                1,
                1,
                1,
                2
            ),
            Err(AttentionError::InvalidSparse { .. })
        ));
    }
}
