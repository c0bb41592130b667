//! Baselines that keep a subset of the tokens: a local window (the most
//! recent `window` tokens) and H2O (heavy hitters by accumulated attention
//! plus a recent window, with permanent eviction).

use alloc::vec::Vec;

use super::common::{dot, softmax};
use super::dense::weighted_sum;
use super::trace::TokenTrace;
use crate::error::AttentionError;
use crate::math::sqrt;
use crate::shape::{GroupShape, H2oParams};

/// Dense attention over the last `window` tokens only.
pub fn local(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    window: usize,
) -> Result<Vec<f32>, AttentionError> {
    local_traced(q, k, v, shape, window).map(|t| t.out)
}

/// [`local`] with the tokens it attended: the last `window` (at least
/// one, at most all).
pub fn local_traced(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: GroupShape,
    window: usize,
) -> Result<TokenTrace, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    let d = shape.head_dim;
    let first = s.saturating_sub(window.max(1));
    let out = super::dense(q, &k[first * d..], &v[first * d..], shape)?;
    Ok(TokenTrace {
        out,
        tokens: (first as u32..s as u32).collect(),
    })
}

/// H2O's state for one KV group: the accumulated attention of every token
/// seen so far and which tokens are still cached.
#[derive(Clone, Debug, Default)]
pub struct H2o {
    scores: Vec<f64>,
    alive: Vec<bool>,
}

impl H2o {
    /// A state that has seen no token yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tokens still cached.
    pub fn cached(&self) -> usize {
        self.alive.iter().filter(|&&a| a).count()
    }

    /// One decode step over the `S` tokens stored so far (tokens the state
    /// has not seen join the cache with score 0): attends over the cached
    /// tokens, adds the group's attention probabilities to their scores,
    /// then evicts down to `heavy + recent` tokens — the `recent` newest
    /// always stay, of the others the `heavy` with the largest accumulated
    /// score. Evicted tokens never come back. The first step after a
    /// prompt therefore sees the whole prompt, as H2O's prefill does.
    pub fn step(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        shape: GroupShape,
        p: H2oParams,
    ) -> Result<Vec<f32>, AttentionError> {
        self.step_traced(q, k, v, shape, p).map(|t| t.out)
    }

    /// [`Self::step`] with the tokens it attended: those cached when the
    /// step began (eviction happens after).
    pub fn step_traced(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        shape: GroupShape,
        p: H2oParams,
    ) -> Result<TokenTrace, AttentionError> {
        let s = shape.check_inputs(q.len(), k.len(), v.len())?;
        p.validate()?;
        self.scores.resize(s, 0.0);
        self.alive.resize(s, true);
        let d = shape.head_dim;
        let kept: Vec<usize> = (0..s).filter(|&j| self.alive[j]).collect();
        let scale = 1.0 / sqrt(d as f64);
        let mut out = Vec::with_capacity(q.len());
        for q_h in q.chunks_exact(d) {
            let logits: Vec<f64> = kept
                .iter()
                .map(|&j| dot(q_h, &k[j * d..(j + 1) * d]) * scale)
                .collect();
            let probs = softmax(&logits);
            for (&j, &pj) in kept.iter().zip(&probs) {
                self.scores[j] += pj;
            }
            let rows = kept.iter().map(|&j| &v[j * d..(j + 1) * d]);
            out.extend(weighted_sum(&probs, rows, d).iter().map(|&x| x as f32));
        }
        self.evict(s, p);
        Ok(TokenTrace {
            out,
            tokens: kept.iter().filter_map(|&j| u32::try_from(j).ok()).collect(),
        })
    }

    fn evict(&mut self, s: usize, p: H2oParams) {
        let budget = p.heavy + p.recent;
        let first_recent = s.saturating_sub(p.recent);
        let mut older: Vec<usize> = (0..first_recent).filter(|&j| self.alive[j]).collect();
        let recent_alive = (first_recent..s).filter(|&j| self.alive[j]).count();
        let room = budget.saturating_sub(recent_alive);
        if older.len() <= room {
            return;
        }
        // Keep the `room` largest scores (ties → the older token stays).
        older.sort_by(|&a, &b| self.scores[b].total_cmp(&self.scores[a]).then(a.cmp(&b)));
        for &j in &older[room..] {
            self.alive[j] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::dense;
    use alloc::vec;

    fn shape() -> GroupShape {
        GroupShape {
            group: 1,
            head_dim: 2,
        }
    }

    #[test]
    fn local_window_is_dense_on_the_tail() {
        let q = [1.0, 0.5];
        let k = [1.0, 0.0, 0.0, 1.0, 2.0, 2.0, -1.0, 0.5];
        let v = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0];
        let got = local(&q, &k, &v, shape(), 2).unwrap();
        assert_eq!(got, dense(&q, &k[4..], &v[4..], shape()).unwrap());
        assert_eq!(
            local(&q, &k, &v, shape(), 99).unwrap(),
            dense(&q, &k, &v, shape()).unwrap()
        );
        let t = local_traced(&q, &k, &v, shape(), 2).unwrap();
        assert_eq!(t.tokens, [2, 3]);
        assert_eq!(t.out, got);
        assert_eq!(
            local_traced(&q, &k, &v, shape(), 99).unwrap().tokens,
            [0, 1, 2, 3]
        );
        assert_eq!(local_traced(&q, &k, &v, shape(), 0).unwrap().tokens, [3]);
    }

    #[test]
    fn h2o_keeps_heavy_hitters_and_recent_tokens() {
        // Token 1 aligns with q and collects attention; tokens 0 and 2 do
        // not. With one heavy and one recent slot, token 1 and the newest
        // survive.
        let q = [4.0, 0.0];
        let mut k = vec![0.0, 1.0, 1.0, 0.0, 0.0, -1.0];
        let mut v = vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0];
        let mut st = H2o::new();
        let p = H2oParams {
            heavy: 1,
            recent: 1,
        };
        let first = st.step(&q, &k, &v, shape(), p).unwrap();
        assert_eq!(first, dense(&q, &k, &v, shape()).unwrap());
        assert_eq!(st.cached(), 2);
        assert!(st.alive[1] && st.alive[2] && !st.alive[0]);
        // A new token arrives: attention only over tokens 1, 2, 3.
        k.extend_from_slice(&[0.0, 0.5]);
        v.extend_from_slice(&[3.0, 3.0]);
        let second = st.step(&q, &k, &v, shape(), p).unwrap();
        let kept_k = [1.0, 0.0, 0.0, -1.0, 0.0, 0.5];
        let kept_v = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0];
        let want = dense(&q, &kept_k, &kept_v, shape()).unwrap();
        assert!((second[0] - want[0]).abs() < 1e-6);
        assert_eq!(st.cached(), 2);
        assert!(st.alive[1] && st.alive[3]);
        // The traced step attends the same tokens with the same bits: a
        // twin state run traced reports the cached tokens of each step.
        let mut twin = H2o::new();
        let t1 = twin.step_traced(&q, &k[..6], &v[..6], shape(), p).unwrap();
        assert_eq!(t1.tokens, [0, 1, 2]);
        assert_eq!(t1.out, first);
        let t2 = twin.step_traced(&q, &k, &v, shape(), p).unwrap();
        assert_eq!(t2.tokens, [1, 2, 3]);
        assert_eq!(t2.out, second);
    }

    #[test]
    fn h2o_rejects_an_empty_budget() {
        let mut st = H2o::new();
        let p = H2oParams {
            heavy: 0,
            recent: 0,
        };
        assert!(
            st.step(&[1.0, 0.0], &[1.0, 0.0], &[1.0, 0.0], shape(), p)
                .is_err()
        );
    }
}
