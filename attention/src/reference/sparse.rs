//! Sparse attention references: SparF (InstInfer Algorithm 1, one choice of
//! dims and tokens per KV group) and SparQ (one choice per query head).

use alloc::vec;
use alloc::vec::Vec;

use super::common::{argtopk, dot, softmax};
use super::dense::weighted_sum;
use super::trace::TokenTrace;
use crate::error::AttentionError;
use crate::math::sqrt;
use crate::shape::{GroupShape, SparseParams};

/// Cap of the approximate scale, as in the engine (16).
const APPROX_SCALE_MAX: f64 = 16.0;

/// SparF with its choices, for comparing selections with the engine.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseTrace {
    /// `[g][d]` output.
    pub out: Vec<f32>,
    /// The `r` chosen dims, ascending.
    pub dims: Vec<u16>,
    /// The chosen tokens, ascending.
    pub tokens: Vec<u32>,
    /// α per query head (exactly 1.0 when every token is selected).
    pub alphas: Vec<f64>,
}

/// SparF of one KV group; see [`sparf_traced`].
pub fn sparf(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: SparseParams,
) -> Result<Vec<f32>, AttentionError> {
    sparf_traced(q, k, v, shape, p).map(|t| t.out)
}

/// SparF of one KV group, grouped-query form of InstInfer Algorithm 1:
///
/// 1. `dims` = top-r of Σ_h |q_h| (ties → lower index).
/// 2. `ŝ_h = softmax(q_h[dims]·K[:, dims]ᵀ / √(d·‖q_h[dims]‖₁/‖q_h‖₁))`.
/// 3. `key_j = Σ_h ŝ_h[j] + (g + 1 if j ≥ S − local)`; `tokens` = top-k.
/// 4. `α_h = Σ_{j ∈ tokens} ŝ_h[j]` (exactly 1 when all S are selected).
/// 5. `out_h = α_h·softmax(q_h·K[tokens]ᵀ/√d)·V[tokens] + (1 − α_h)·v̄`,
///    v̄ = mean of all S value rows.
///
/// With r = d and k ≥ S this is [`super::dense`] up to rounding.
pub fn sparf_traced(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: SparseParams,
) -> Result<SparseTrace, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    let sel = sparf_select(q, k, shape, p)?;
    Ok(exact_pass(q, k, v, s, shape, sel))
}

/// SparF's exact pass over a selection: the chosen value rows, v̄ over all
/// `s` of them, and [`sparf_finish`].
fn exact_pass(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: usize,
    shape: GroupShape,
    sel: SparseSelection,
) -> SparseTrace {
    let d = shape.head_dim;
    let vbar = weighted_sum(&vec![1.0 / s as f64; s], v.chunks_exact(d), d);
    let rows: Vec<f32> = sel
        .tokens
        .iter()
        .flat_map(|&j| row(v, j, d).iter().copied())
        .collect();
    sparf_finish(q, k, &rows, &vbar, shape, sel)
}

/// SparF steps 1–4 (see [`sparf_traced`]): the dims, the tokens (ascending)
/// and each query head's α, from q and K alone — what a store needs before
/// it reads the chosen tokens' value rows.
pub fn sparf_select(
    q: &[f32],
    k: &[f32],
    shape: GroupShape,
    p: SparseParams,
) -> Result<SparseSelection, AttentionError> {
    sparf_select_guarded(q, k, shape, p, None)
}

/// [`sparf_select`] with the adaptive guardrail: while some query head's
/// α is below `guard.alpha_min_milli / 1000` and k is below the cap, k
/// doubles (capped). The approximate scores are computed once; widening
/// only reads more token rows.
pub fn sparf_select_guarded(
    q: &[f32],
    k: &[f32],
    shape: GroupShape,
    p: SparseParams,
    guard: Option<crate::shape::Guard>,
) -> Result<SparseSelection, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), k.len())?;
    p.validate(shape.head_dim)?;
    let (g, d) = (shape.group, shape.head_dim);

    let mut dim_keys = vec![0.0f64; d];
    for q_h in q.chunks_exact(d) {
        for (key, &x) in dim_keys.iter_mut().zip(q_h) {
            *key += f64::from(x.abs());
        }
    }
    let dims: Vec<u16> = argtopk(&dim_keys, p.r)
        .into_iter()
        .filter_map(|i| u16::try_from(i).ok())
        .collect();

    let approx: Vec<Vec<f64>> = q
        .chunks_exact(d)
        .map(|q_h| approx_probs(q_h, k, &dims, d))
        .collect();

    let bonus = (g + 1) as f64;
    let first_local = s.saturating_sub(p.local);
    let token_keys: Vec<f64> = (0..s)
        .map(|j| {
            let sum: f64 = approx.iter().map(|sh| sh[j]).sum();
            if j >= first_local { sum + bonus } else { sum }
        })
        .collect();
    let mut k_now = p.k;
    let (tokens, all, alphas) = loop {
        let tokens = argtopk(&token_keys, k_now);
        let all = tokens.len() == s;
        let alphas: Vec<f64> = approx
            .iter()
            .map(|sh| {
                if all {
                    1.0
                } else {
                    tokens.iter().map(|&j| sh[j as usize]).sum::<f64>().min(1.0)
                }
            })
            .collect();
        let low = guard.filter(|g| {
            let min = alphas.iter().copied().fold(f64::INFINITY, f64::min);
            min * 1000.0 < f64::from(g.alpha_min_milli) && k_now < g.k_cap.min(s)
        });
        match low {
            Some(g) => k_now = (2 * k_now).min(g.k_cap.min(s)),
            None => break (tokens, all, alphas),
        }
    };
    Ok(SparseSelection {
        dims,
        tokens,
        alphas,
        all,
    })
}

/// What [`sparf_select`] chose.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseSelection {
    /// The `r` chosen dims, ascending.
    pub dims: Vec<u16>,
    /// The chosen tokens, ascending.
    pub tokens: Vec<u32>,
    /// α per query head.
    pub alphas: Vec<f64>,
    /// Every token was chosen (α = 1, v̄ unused).
    pub all: bool,
}

/// SparF step 5: exact attention over the chosen tokens (`v_rows`: their
/// value rows, in `sel.tokens` order) blended with `vbar`, the mean of all
/// value rows.
pub fn sparf_finish(
    q: &[f32],
    k: &[f32],
    v_rows: &[f32],
    vbar: &[f64],
    shape: GroupShape,
    sel: SparseSelection,
) -> SparseTrace {
    let d = shape.head_dim;
    let scale = 1.0 / sqrt(d as f64);
    let mut out = Vec::with_capacity(q.len());
    for (q_h, &alpha) in q.chunks_exact(d).zip(&sel.alphas) {
        let logits: Vec<f64> = sel
            .tokens
            .iter()
            .map(|&j| dot(q_h, row(k, j, d)) * scale)
            .collect();
        let probs = softmax(&logits);
        let o = weighted_sum(&probs, v_rows.chunks_exact(d), d);
        out.extend(o.iter().zip(vbar).map(|(&oi, &vb)| {
            let vb = if sel.all { 0.0 } else { vb };
            (alpha * oi + (1.0 - alpha) * vb) as f32
        }));
    }
    SparseTrace {
        out,
        dims: sel.dims,
        tokens: sel.tokens,
        alphas: sel.alphas,
    }
}

/// SparF with its options ([`crate::shape::SparfPlus`]): the
/// approximate stage in `basis` — q in the basis (`basis.rotate_query`),
/// the r dims chosen among the basis directions and scored against
/// `k_basis` (K in the basis, `basis.rotate_key(k)`, as the store keeps
/// it) — and the guardrail; the exact pass uses the unrotated q, K and V,
/// so the basis changes only the selection. Pass the identity basis and
/// `k_basis = k` for the raw dims.
#[allow(clippy::too_many_arguments)]
pub fn sparf_plus(
    q: &[f32],
    k: &[f32],
    k_basis: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: SparseParams,
    guard: Option<crate::shape::Guard>,
    basis: &super::Basis,
) -> Result<SparseTrace, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    if k_basis.len() != k.len() || basis.dim() != shape.head_dim {
        return Err(AttentionError::LengthMismatch {
            what: "K in the basis",
            expected: k.len(),
            actual: k_basis.len(),
        });
    }
    let sel = sparf_select_guarded(&basis.rotate_query(q), k_basis, shape, p, guard)?;
    Ok(exact_pass(q, k, v, s, shape, sel))
}

/// The selection oracle: the `k` tokens with the largest exact attention
/// probability summed over the group's query heads, then exact attention
/// over them (no blend). It reads all of K to score, so it is a bound on
/// what a better approximate stage could reach, not a method with a
/// budget.
pub fn oracle(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    k_tokens: usize,
) -> Result<Vec<f32>, AttentionError> {
    oracle_traced(q, k, v, shape, k_tokens).map(|t| t.out)
}

/// [`oracle`] with the tokens it chose (and attended).
pub fn oracle_traced(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    k_tokens: usize,
) -> Result<TokenTrace, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    let d = shape.head_dim;
    let scale = 1.0 / sqrt(d as f64);
    let mut keys = vec![0.0f64; s];
    for q_h in q.chunks_exact(d) {
        let logits: Vec<f64> = k.chunks_exact(d).map(|r| dot(q_h, r) * scale).collect();
        for (key, p) in keys.iter_mut().zip(softmax(&logits)) {
            *key += p;
        }
    }
    let tokens = argtopk(&keys, k_tokens.clamp(1, s));
    let gather = |x: &[f32]| -> Vec<f32> {
        tokens
            .iter()
            .flat_map(|&j| row(x, j, d).iter().copied())
            .collect()
    };
    let out = super::dense(q, &gather(k), &gather(v), shape)?;
    Ok(TokenTrace { out, tokens })
}

/// SparQ: every query head of the group independently picks its own r dims
/// and k tokens (SparF with a group of one, head by head).
pub fn sparq(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: SparseParams,
) -> Result<Vec<f32>, AttentionError> {
    Ok(sparq_traced(q, k, v, shape, p)?.out)
}

/// What a SparQ step of one KV group did.
#[derive(Clone, Debug, PartialEq)]
pub struct SparqTrace {
    /// `[g][d]` outputs.
    pub out: Vec<f32>,
    /// Dims chosen by at least one query head (the K columns the group
    /// reads for its approximate scores), ascending.
    pub dims: Vec<u16>,
    /// Tokens chosen by at least one query head (the K and V rows the
    /// group reads), ascending.
    pub tokens: Vec<u32>,
}

impl SparqTrace {
    /// K and V elements the group reads: `|dims|·S + 2·|tokens|·d`.
    pub fn read_elements(&self, s: usize, d: usize) -> usize {
        self.dims.len() * s + 2 * self.tokens.len() * d
    }
}

/// [`sparq`] with what it reads: with grouped-query attention each query
/// head reads its own dims and tokens of the shared KV head, so the group
/// reads the union of their choices.
pub fn sparq_traced(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    p: SparseParams,
) -> Result<SparqTrace, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    let single = GroupShape {
        group: 1,
        head_dim: shape.head_dim,
    };
    let mut out = Vec::with_capacity(q.len());
    let mut dims = vec![false; shape.head_dim];
    let mut tokens = vec![false; s];
    for q_h in q.chunks_exact(shape.head_dim) {
        let t = sparf_traced(q_h, k, v, single, p)?;
        for &i in &t.dims {
            dims[usize::from(i)] = true;
        }
        for &j in &t.tokens {
            tokens[j as usize] = true;
        }
        out.extend(t.out);
    }
    let chosen = |set: &[bool]| -> Vec<usize> { (0..set.len()).filter(|&i| set[i]).collect() };
    Ok(SparqTrace {
        out,
        dims: chosen(&dims)
            .into_iter()
            .filter_map(|i| u16::try_from(i).ok())
            .collect(),
        tokens: chosen(&tokens)
            .into_iter()
            .filter_map(|j| u32::try_from(j).ok())
            .collect(),
    })
}

/// ŝ of one head over all tokens, on the chosen dims.
fn approx_probs(q_h: &[f32], k: &[f32], dims: &[u16], d: usize) -> Vec<f64> {
    let l1 = |it: &mut dyn Iterator<Item = f32>| it.map(|x| f64::from(x.abs())).sum::<f64>();
    let total = l1(&mut q_h.iter().copied());
    let kept = l1(&mut dims.iter().map(|&i| q_h[usize::from(i)]));
    let scale = if kept > 0.0 {
        (1.0 / sqrt(d as f64 * kept / total)).min(APPROX_SCALE_MAX)
    } else {
        0.0
    };
    let logits: Vec<f64> = k
        .chunks_exact(d)
        .map(|k_j| {
            let s: f64 = dims
                .iter()
                .map(|&i| f64::from(q_h[usize::from(i)]) * f64::from(k_j[usize::from(i)]))
                .sum();
            s * scale
        })
        .collect();
    softmax(&logits)
}

fn row(m: &[f32], j: u32, d: usize) -> &[f32] {
    let start = j as usize * d;
    m.get(start..start + d).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::dense;
    use crate::testdata::SplitMix64;

    fn normals(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.normal()).collect()
    }

    #[test]
    fn rotation_changes_only_the_selection() {
        use crate::reference::Basis;
        use crate::testdata::{structured_kv, structured_query};
        let (s, d, g) = (300, 32, 3);
        let (k, v) = structured_kv(4, 1, s, d);
        let q = structured_query(4, g, d, 1);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let b = Basis::pca(&k, d);
        let k_rot = b.rotate_key(&k);
        // Every token chosen: the exact pass alone decides, and it is
        // unrotated, so the outputs are the same bits.
        let all = SparseParams {
            r: 4,
            k: s,
            local: 0,
        };
        let rot = sparf_plus(&q, &k, &k_rot, &v, shape, all, None, &b).unwrap();
        let plain = sparf_traced(&q, &k, &v, shape, all).unwrap();
        assert_eq!(rot.out, plain.out);
        // A partial choice: the exact pass over the rotated choice equals
        // the unrotated finish of that same choice.
        let p = SparseParams {
            r: 4,
            k: 40,
            local: 8,
        };
        let rot = sparf_plus(&q, &k, &k_rot, &v, shape, p, None, &b).unwrap();
        let sel = SparseSelection {
            dims: rot.dims.clone(),
            tokens: rot.tokens.clone(),
            alphas: rot.alphas.clone(),
            all: false,
        };
        let vbar = weighted_sum(&vec![1.0 / s as f64; s], v.chunks_exact(d), d);
        let rows: Vec<f32> = sel
            .tokens
            .iter()
            .flat_map(|&j| row(&v, j, d).to_vec())
            .collect();
        assert_eq!(sparf_finish(&q, &k, &rows, &vbar, shape, sel).out, rot.out);
        // The identity basis is plain SparF.
        let id = Basis::identity(d);
        let same = sparf_plus(&q, &k, &k, &v, shape, p, None, &id).unwrap();
        assert_eq!(same, sparf_traced(&q, &k, &v, shape, p).unwrap());
        // A wrong rotated copy is refused.
        assert!(sparf_plus(&q, &k, &k_rot[..d], &v, shape, p, None, &b).is_err());
    }

    #[test]
    fn the_guardrail_widens_k_within_its_cap() {
        use crate::shape::Guard;
        use crate::testdata::{structured_kv, structured_query};
        let (s, d, g) = (400, 32, 3);
        let (k, _) = structured_kv(6, 1, s, d);
        let q = structured_query(6, g, d, 1);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let p = SparseParams {
            r: 4,
            k: 8,
            local: 2,
        };
        let plain = sparf_select(&q, &k, shape, p).unwrap();
        for cap in [8, 20, 64, 1000] {
            for milli in [0, 500, 900, 1000] {
                let guard = Guard {
                    alpha_min_milli: milli,
                    k_cap: cap,
                };
                let sel = sparf_select_guarded(&q, &k, shape, p, Some(guard)).unwrap();
                // Never past the cap (nor the context), never below k.
                assert!(
                    sel.tokens.len() <= cap.max(p.k).min(s),
                    "cap {cap}: {}",
                    sel.tokens.len()
                );
                assert!(sel.tokens.len() >= p.k);
                let min = sel.alphas.iter().copied().fold(f64::INFINITY, f64::min);
                // Either satisfied or at the cap.
                assert!(
                    min * 1000.0 >= f64::from(milli) || sel.tokens.len() == cap.min(s),
                    "cap {cap} milli {milli}: α {min}, k {}",
                    sel.tokens.len()
                );
                if milli == 0 {
                    assert_eq!(sel, plain, "a guard that never fires changes nothing");
                }
            }
        }
    }

    #[test]
    fn the_oracle_with_every_token_is_dense() {
        let mut rng = SplitMix64::new(8);
        let (s, d, g) = (50, 16, 2);
        let (q, k, v) = (
            normals(&mut rng, g * d),
            normals(&mut rng, s * d),
            normals(&mut rng, s * d),
        );
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let all = oracle(&q, &k, &v, shape, s).unwrap();
        let want = dense(&q, &k, &v, shape).unwrap();
        let err = all
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-6, "{err}");
        let five = oracle_traced(&q, &k, &v, shape, 5).unwrap();
        assert_eq!(five.out, oracle(&q, &k, &v, shape, 5).unwrap());
        assert_eq!(five.tokens.len(), 5);
        assert!(five.tokens.windows(2).all(|w| w[0] < w[1]));
        // Dense over exactly the traced tokens.
        let gather = |x: &[f32]| -> Vec<f32> {
            five.tokens
                .iter()
                .flat_map(|&j| row(x, j, d).to_vec())
                .collect()
        };
        assert_eq!(
            five.out,
            dense(&q, &gather(&k), &gather(&v), shape).unwrap()
        );
        assert_eq!(oracle_traced(&q, &k, &v, shape, s).unwrap().tokens.len(), s);
    }

    #[test]
    fn full_selection_equals_dense() {
        let mut rng = SplitMix64::new(1);
        for (g, d, s) in [(1, 16, 1), (3, 64, 17), (2, 128, 200)] {
            let shape = GroupShape {
                group: g,
                head_dim: d,
            };
            let q = normals(&mut rng, g * d);
            let k = normals(&mut rng, s * d);
            let v = normals(&mut rng, s * d);
            let want = dense(&q, &k, &v, shape).unwrap();
            let p = SparseParams {
                r: d,
                k: s,
                local: 2,
            };
            let t = sparf_traced(&q, &k, &v, shape, p).unwrap();
            assert!(t.alphas.iter().all(|&a| a == 1.0));
            for (a, b) in t.out.iter().zip(&want) {
                assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
            }
            let q_out = sparq(&q, &k, &v, shape, SparseParams { k: s + 3, ..p }).unwrap();
            for (a, b) in q_out.iter().zip(&want) {
                assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn sparq_equals_sparf_for_group_one() {
        let mut rng = SplitMix64::new(2);
        let (d, s) = (32, 50);
        let shape = GroupShape {
            group: 1,
            head_dim: d,
        };
        let q = normals(&mut rng, d);
        let k = normals(&mut rng, s * d);
        let v = normals(&mut rng, s * d);
        let p = SparseParams {
            r: 8,
            k: 10,
            local: 3,
        };
        let a = sparq(&q, &k, &v, shape, p).unwrap();
        let b = sparf(&q, &k, &v, shape, p).unwrap();
        assert_eq!(a, b);
        let t = sparf_traced(&q, &k, &v, shape, p).unwrap();
        assert_eq!(t.tokens.len(), 10);
        assert!(t.tokens.ends_with(&[47, 48, 49]));
        assert!(t.alphas[0] > 0.0 && t.alphas[0] < 1.0);
    }

    #[test]
    fn sparq_heads_choose_independently() {
        // Two heads that each match a different token; k = 1 and no mass on
        // the other dims. SparQ gives each head its own token; SparF shares
        // one choice (token 0 for both, since head 0's match is stronger).
        let d = 4;
        let shape = GroupShape {
            group: 2,
            head_dim: d,
        };
        let q = [8.0, 0.0, 0.0, 0.0, 0.0, 6.0, 0.0, 0.0];
        let k = [8.0, 0.0, 0.0, 0.0, 0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let v = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let p = SparseParams {
            r: 1,
            k: 1,
            local: 0,
        };
        let sq = sparq(&q, &k, &v, shape, p).unwrap();
        let sf = sparf_traced(&q, &k, &v, shape, p).unwrap();
        assert_eq!(sf.tokens, [0]);
        assert_eq!(sf.dims, [0]);
        // SparQ head 1 attends mostly to token 1's value (dim 1).
        assert!(sq[4 + 1] > 0.5, "{sq:?}");
        // SparF head 1 only sees token 0 in the exact pass: its dim 1 comes
        // from (1 − α)·v̄ alone.
        assert!(sf.out[4 + 1] < 0.4, "{:?}", sf.out);
        assert!(sq[1] < 0.2 && sq[0] > 0.5);
        // The group reads the union: each head its own dim and token.
        let t = sparq_traced(&q, &k, &v, shape, p).unwrap();
        assert_eq!(t.out, sq);
        assert_eq!(t.dims, [0, 1]);
        assert_eq!(t.tokens, [0, 1]);
        assert_eq!(t.read_elements(3, d), 2 * 3 + 2 * 2 * d);
    }

    #[test]
    fn errors() {
        let shape = GroupShape {
            group: 1,
            head_dim: 2,
        };
        let p = SparseParams {
            r: 1,
            k: 1,
            local: 0,
        };
        assert_eq!(
            sparf(&[1.0, 1.0], &[], &[], shape, p),
            Err(AttentionError::EmptySequence)
        );
        assert!(
            sparq(
                &[1.0, 1.0],
                &[1.0; 2],
                &[1.0; 2],
                shape,
                SparseParams { r: 3, ..p }
            )
            .is_err()
        );
        assert!(sparf(&[1.0, 1.0], &[1.0; 2], &[1.0; 3], shape, p).is_err());
    }
}
