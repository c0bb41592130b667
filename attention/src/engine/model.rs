//! Whole-group model functions: the oracle the device is tested against.
//! They chain the building blocks exactly as the firmware does (which
//! streams pages through the same blocks in the same order).

use alloc::vec;
use alloc::vec::Vec;

use super::fixed::{approx_scale, dense_scale, fx, logit, logit_dims};
use super::guard::select_guarded;
use super::kernels::{accumulate, add_vsum, finish, vmean};
use super::softmax::{P_ONE, softmax};
use super::topk::{select_dims, token_keys};
use crate::error::AttentionError;
use crate::shape::{GroupShape, Guard, SparseParams};

/// The result of [`sparf_group`], with the choices the device must also
/// report (so tests can compare selections, not just outputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparfOutput {
    /// `g × d` output, Fx.
    pub out: Vec<i32>,
    /// The `r` chosen dims, ascending.
    pub dims: Vec<u16>,
    /// The chosen token indices, ascending.
    pub tokens: Vec<u32>,
    /// α per query head, Q0.30.
    pub alphas: Vec<u32>,
}

/// Dense attention of one KV group: `q` is `g × d` fp16, `k` and `v` are
/// `S × d` fp16; output `g × d` Fx. Logits with [`dense_scale`], softmax
/// over all tokens, weighted value sum, [`finish`] with α = P_ONE.
pub fn dense_group(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    shape: GroupShape,
) -> Result<Vec<i32>, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    let qf: Vec<i32> = q.iter().map(|&b| fx(b)).collect();
    let all = all_tokens(s);
    let alphas = vec![P_ONE; shape.group];
    Ok(exact_pass(&qf, k, v, shape, &all, &alphas, &[]))
}

/// SparF (InstInfer Algorithm 1, grouped) of one KV group; see the module
/// docs of [`crate::engine`] for the step list.
pub fn sparf_group(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    shape: GroupShape,
    p: SparseParams,
) -> Result<SparfOutput, AttentionError> {
    sparf_plus_group(
        PlusInputs {
            q,
            q_approx: q,
            k,
            k_approx: k,
            v,
        },
        shape,
        p,
        None,
    )
}

/// The inputs of [`sparf_plus_group`], fp16 bits: `q` `[g][d]` and `K`, `V`
/// `[S][d]` for the exact pass; `q_approx` and `k_approx` (same shapes) for
/// the approximate stage — the same as `q` and `K` for plain SparF, or both
/// expressed in a per-head basis (the host rotates q, the dim-indexed copy
/// of K is stored rotated).
#[derive(Clone, Copy, Debug)]
pub struct PlusInputs<'a> {
    /// Query, exact pass.
    pub q: &'a [u16],
    /// Query, approximate stage.
    pub q_approx: &'a [u16],
    /// Keys, exact pass (the token-indexed copy).
    pub k: &'a [u16],
    /// Keys, approximate stage (the dim-indexed copy).
    pub k_approx: &'a [u16],
    /// Values.
    pub v: &'a [u16],
}

/// SparF with its options: the approximate stage (steps 1–3 of the module
/// docs) on `q_approx` and `k_approx`, the guardrail (while the smallest
/// α of the group is below `alpha_min_milli`/1000 and k is below
/// min(`k_cap`, S), k doubles, capped, and the top-k is taken again), then
/// the exact pass on the unrotated `q`, `K`, `V`.
pub fn sparf_plus_group(
    x: PlusInputs<'_>,
    shape: GroupShape,
    p: SparseParams,
    guard: Option<Guard>,
) -> Result<SparfOutput, AttentionError> {
    let PlusInputs {
        q,
        q_approx,
        k,
        k_approx,
        v,
    } = x;
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    shape.check_inputs(q_approx.len(), k_approx.len(), v.len())?;
    p.validate(shape.head_dim)?;
    let (g, d) = (shape.group, shape.head_dim);
    let qf: Vec<i32> = q.iter().map(|&b| fx(b)).collect();
    let qa: Vec<i32> = q_approx.iter().map(|&b| fx(b)).collect();

    // Step 1: dims from |q| summed over the group.
    let mut dims = Vec::with_capacity(p.r);
    select_dims(&qa, g, d, p.r, &mut dims);

    // Step 4: approximate probabilities of every token, per head.
    let scales: Vec<u32> = qa
        .chunks_exact(d)
        .map(|q_h| approx_scale(q_h, &dims))
        .collect();
    let mut logits = vec![0i32; g * s];
    let mut k_dims = vec![0u16; dims.len()];
    for (j, k_row) in k_approx.chunks_exact(d).enumerate() {
        for (slot, &i) in k_dims.iter_mut().zip(&dims) {
            *slot = k_row[usize::from(i)];
        }
        for (h, (q_h, &c)) in qa.chunks_exact(d).zip(&scales).enumerate() {
            logits[h * s + j] = logit_dims(q_h, &k_dims, &dims, c);
        }
    }
    let mut probs = vec![0u32; g * s];
    for (l, pr) in logits.chunks_exact(s).zip(probs.chunks_exact_mut(s)) {
        softmax(l, pr);
    }

    // Steps 5–7: token keys with the recency bonus, top-k, α per head,
    // widened by the guardrail.
    let mut keys = Vec::with_capacity(s);
    token_keys(&probs, g, s, p.local, &mut keys);
    let (tokens, alphas) = select_guarded(&keys, &probs, s, p.k, guard);

    // v̄ over all S value rows.
    let mut vsum = vec![0i64; d];
    for v_row in v.chunks_exact(d) {
        add_vsum(&mut vsum, v_row);
    }
    let mut vm = vec![0i32; d];
    vmean(&vsum, s as u64, &mut vm);

    // Steps 10–11: exact attention on the chosen tokens, blended with v̄.
    let out = exact_pass(&qf, k, v, shape, &tokens, &alphas, &vm);
    Ok(SparfOutput {
        out,
        dims,
        tokens,
        alphas,
    })
}

fn all_tokens(s: usize) -> Vec<u32> {
    // s ≤ u32::MAX was checked by check_inputs.
    (0..s).filter_map(|j| u32::try_from(j).ok()).collect()
}

/// Per head: logits with dense_scale over `tokens`, softmax, Σ p·V, finish.
fn exact_pass(
    qf: &[i32],
    k: &[u16],
    v: &[u16],
    shape: GroupShape,
    tokens: &[u32],
    alphas: &[u32],
    vm: &[i32],
) -> Vec<i32> {
    let d = shape.head_dim;
    let c = dense_scale(d);
    let mut out = vec![0i32; shape.group * d];
    let mut logits = vec![0i32; tokens.len()];
    let mut probs = vec![0u32; tokens.len()];
    let mut acc = vec![0i64; d];
    for ((q_h, out_h), &a) in qf.chunks_exact(d).zip(out.chunks_exact_mut(d)).zip(alphas) {
        for (l, &j) in logits.iter_mut().zip(tokens) {
            *l = logit(q_h, row(k, j, d), c);
        }
        softmax(&logits, &mut probs);
        acc.fill(0);
        for (&p, &j) in probs.iter().zip(tokens) {
            accumulate(&mut acc, p, row(v, j, d));
        }
        finish(&acc, a, vm, out_h);
    }
    out
}

/// Row `j` of an `S × d` matrix (empty if out of range; tokens come from
/// argtopk over S keys, so they are in range).
fn row(m: &[u16], j: u32, d: usize) -> &[u16] {
    let start = j as usize * d;
    m.get(start..start + d).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fixed::f32_to_f16_bits;
    use crate::testdata::SplitMix64;

    fn random_fp16(rng: &mut SplitMix64, n: usize) -> Vec<u16> {
        (0..n).map(|_| f32_to_f16_bits(rng.normal())).collect()
    }

    #[test]
    fn full_sparf_is_dense_bit_for_bit() {
        let mut rng = SplitMix64::new(7);
        for (g, d, s) in [(1, 64, 1), (3, 64, 17), (2, 128, 300), (4, 8, 5)] {
            let shape = GroupShape {
                group: g,
                head_dim: d,
            };
            let q = random_fp16(&mut rng, g * d);
            let k = random_fp16(&mut rng, s * d);
            let v = random_fp16(&mut rng, s * d);
            let dense = dense_group(&q, &k, &v, shape).unwrap();
            for (kk, local) in [(s, 0), (s + 5, 3), (usize::MAX, s)] {
                let p = SparseParams { r: d, k: kk, local };
                let sp = sparf_group(&q, &k, &v, shape, p).unwrap();
                assert_eq!(sp.out, dense, "g={g} d={d} s={s}");
                assert_eq!(sp.tokens, all_tokens(s));
                assert_eq!(sp.dims.len(), d);
                assert!(sp.alphas.iter().all(|&a| a == P_ONE));
            }
        }
    }

    #[test]
    fn rotated_approximate_copy_changes_only_the_selection() {
        let mut rng = SplitMix64::new(19);
        let (g, d, s) = (3, 16, 50);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let q = random_fp16(&mut rng, g * d);
        let k = random_fp16(&mut rng, s * d);
        let v = random_fp16(&mut rng, s * d);
        let p = SparseParams {
            r: 4,
            k: 10,
            local: 2,
        };
        // A signed permutation is an exact rotation in fp16: same scores,
        // so the same tokens and bit-identical output.
        let perm: Vec<usize> = (0..d).map(|i| (i * 5 + 3) % d).collect();
        let rot = |m: &[u16]| -> Vec<u16> {
            m.chunks_exact(d)
                .flat_map(|row| {
                    perm.iter()
                        .enumerate()
                        .map(|(i, &j)| row[j] ^ ((i as u16 & 1) << 15))
                })
                .collect()
        };
        let (qr, kr) = (rot(&q), rot(&k));
        let x = PlusInputs {
            q: &q,
            q_approx: &qr,
            k: &k,
            k_approx: &kr,
            v: &v,
        };
        let plain = sparf_group(&q, &k, &v, shape, p).unwrap();
        let plus = sparf_plus_group(x, shape, p, None).unwrap();
        assert_eq!(plus.tokens, plain.tokens);
        assert_eq!(plus.alphas, plain.alphas);
        assert_eq!(plus.out, plain.out);
        let mapped: Vec<u16> = plus
            .dims
            .iter()
            .map(|&i| perm[usize::from(i)] as u16)
            .collect();
        let mut mapped = mapped;
        mapped.sort_unstable();
        assert_eq!(mapped, plain.dims);
        // Any approximate copy at all: with k ≥ S the exact pass is dense.
        let noise = random_fp16(&mut rng, s * d);
        let all = SparseParams { k: s, ..p };
        let x = PlusInputs {
            k_approx: &noise,
            ..x
        };
        let dense = dense_group(&q, &k, &v, shape).unwrap();
        assert_eq!(sparf_plus_group(x, shape, all, None).unwrap().out, dense);
        // A different copy picks different tokens, same count.
        let other = sparf_plus_group(x, shape, p, None).unwrap();
        assert_eq!(other.tokens.len(), p.k);
        assert_ne!(other.tokens, plain.tokens);
    }

    #[test]
    fn guard_widens_within_its_cap() {
        let mut rng = SplitMix64::new(23);
        let (g, d, s) = (2, 16, 200);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let q = random_fp16(&mut rng, g * d);
        let k = random_fp16(&mut rng, s * d);
        let v = random_fp16(&mut rng, s * d);
        let x = PlusInputs {
            q: &q,
            q_approx: &q,
            k: &k,
            k_approx: &k,
            v: &v,
        };
        let p = SparseParams {
            r: 4,
            k: 8,
            local: 2,
        };
        let never = Guard {
            alpha_min_milli: 0,
            k_cap: 1000,
        };
        let base = sparf_plus_group(x, shape, p, None).unwrap();
        assert_eq!(sparf_plus_group(x, shape, p, Some(never)).unwrap(), base);
        for cap in [8, 20, 57, 200, 5000] {
            let always = Guard {
                alpha_min_milli: 1000,
                k_cap: cap,
            };
            let w = sparf_plus_group(x, shape, p, Some(always)).unwrap();
            assert_eq!(w.tokens.len(), cap.clamp(8, s), "cap {cap}");
            // The widened set contains the nominal one.
            assert!(base.tokens.iter().all(|t| w.tokens.contains(t)));
        }
        // A moderate threshold stops as soon as every head reaches it.
        let mid = Guard {
            alpha_min_milli: 500,
            k_cap: s,
        };
        let w = sparf_plus_group(x, shape, p, Some(mid)).unwrap();
        assert!(
            w.alphas
                .iter()
                .all(|&a| a >= crate::engine::alpha_threshold(500))
        );
        let half = SparseParams {
            k: w.tokens.len() / 2,
            ..p
        };
        let before = sparf_plus_group(x, shape, half, None).unwrap();
        assert!(
            before
                .alphas
                .iter()
                .any(|&a| a < crate::engine::alpha_threshold(500))
        );
    }

    #[test]
    fn single_token_returns_its_value() {
        let shape = GroupShape {
            group: 2,
            head_dim: 4,
        };
        let q = [0x3C00u16; 8];
        let k = [0x4000u16; 4];
        let v = [0x3C00u16, 0xC000, 0x3800, 0x0000];
        let out = dense_group(&q, &k, &v, shape).unwrap();
        let want = [1 << 14, -(2 << 14), 1 << 13, 0];
        assert_eq!(out[..4], want);
        assert_eq!(out[4..], want);
        let sp = sparf_group(
            &q,
            &k,
            &v,
            shape,
            SparseParams {
                r: 1,
                k: 1,
                local: 0,
            },
        )
        .unwrap();
        assert_eq!(sp.out, out);
    }

    #[test]
    fn local_tokens_are_always_selected() {
        let mut rng = SplitMix64::new(3);
        let (g, d, s) = (2, 16, 40);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        // Both heads share one query; token 0's key is 3·q: by far the top
        // approximate score on any dims.
        let q_h: Vec<f32> = (0..d).map(|_| rng.normal()).collect();
        let q: Vec<u16> = q_h
            .iter()
            .chain(&q_h)
            .map(|&x| f32_to_f16_bits(x))
            .collect();
        let mut k = random_fp16(&mut rng, s * d);
        for (slot, &x) in k.iter_mut().zip(&q_h) {
            *slot = f32_to_f16_bits(3.0 * x);
        }
        let v = random_fp16(&mut rng, s * d);
        let p = SparseParams {
            r: 4,
            k: 6,
            local: 5,
        };
        let sp = sparf_group(&q, &k, &v, shape, p).unwrap();
        assert_eq!(sp.tokens, [0, 35, 36, 37, 38, 39]);
        assert_eq!(sp.dims.len(), 4);
        assert!(sp.alphas.iter().all(|&a| a < P_ONE && a > 0));
        // k = local: only the recent tokens.
        let p = SparseParams {
            r: 4,
            k: 5,
            local: 5,
        };
        let sp = sparf_group(&q, &k, &v, shape, p).unwrap();
        assert_eq!(sp.tokens, [35, 36, 37, 38, 39]);
    }

    #[test]
    fn rejects_inconsistent_inputs() {
        let shape = GroupShape {
            group: 1,
            head_dim: 4,
        };
        let p = SparseParams {
            r: 2,
            k: 2,
            local: 0,
        };
        assert_eq!(
            dense_group(&[0; 4], &[], &[], shape),
            Err(AttentionError::EmptySequence)
        );
        assert!(matches!(
            dense_group(&[0; 3], &[0; 4], &[0; 4], shape),
            Err(AttentionError::LengthMismatch { what: "q", .. })
        ));
        assert!(matches!(
            sparf_group(&[0; 4], &[0; 8], &[0; 4], shape, p),
            Err(AttentionError::LengthMismatch { what: "v", .. })
        ));
        assert!(matches!(
            sparf_group(&[0; 4], &[0; 8], &[0; 8], shape, SparseParams { r: 5, ..p }),
            Err(AttentionError::InvalidSparse { .. })
        ));
    }
}
