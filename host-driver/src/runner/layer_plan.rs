//! Per-layer token budgets planned from the prompt (`--per-layer`): some
//! layers' attention is harder for SparF's approximate stage than
//! others'. After each layer's prefill, the queries of the prompt's last
//! positions are run through SparF's selection at the nominal k over that
//! layer's prompt keys, and the exact attention mass the chosen tokens
//! capture (their recall) is measured. Each layer's k is then scaled by its
//! missed mass relative to the mean, clamped to [1/2, 2] and renormalised
//! so that the mean over layers stays at most 1: the same bytes per step,
//! moved to the layers that miss most. r is unchanged; the drive needs
//! nothing new (k travels in every DECODE_SUBMIT).
//!
//! The page selection (`pages`) is planned the same way with its page
//! budget in place of k: a layer's recall is the exact mass that the
//! group's best `max_pages` pages (by exact mass, in the placement the
//! drive gives the prompt: `engine::layout_order`), the pinned sinks and
//! the tail past the last full page hold — what even a perfect page score
//! would miss in that layer.

use attention::engine;
use attention::reference;
use attention::shape::{GroupShape, Method, PagesParams, SparseParams};

use crate::backend::{ModelShape, to_f16_bits};

/// Smallest and largest scale of a layer's k.
const CLAMP: (f64, f64) = (0.5, 2.0);

/// The plan of one sequence.
#[derive(Debug, Default, Clone)]
pub struct LayerPlan {
    /// Prompt keys per layer, `[kv_heads][n][d]`, until its queries come.
    keys: Vec<Vec<f32>>,
    /// Recall of each planned layer.
    recall: Vec<Option<f64>>,
    /// The scales, once every layer is planned.
    scales: Option<Vec<f64>>,
}

impl LayerPlan {
    /// Nothing planned yet for `layers` layers.
    pub fn new(layers: usize) -> Self {
        Self {
            keys: vec![Vec::new(); layers],
            recall: vec![None; layers],
            scales: None,
        }
    }

    /// Keeps `layer`'s prompt keys (its first prefill only).
    pub fn keys(&mut self, layer: usize, k: &[f32]) {
        if let Some(slot) = self.keys.get_mut(layer).filter(|s| s.is_empty()) {
            *slot = k.to_vec();
        }
    }

    /// Measures `layer`'s recall from the prompt's last queries `q`
    /// (`[m][q_heads][d]`) under `method` (SparF's or SparF+'s r and k,
    /// or the page selection's budget; other methods plan nothing).
    pub fn queries(&mut self, layer: usize, q: &[f32], shape: ModelShape, method: Method) {
        if !matches!(
            method,
            Method::SparF(_) | Method::SparFPlus(_) | Method::Pages(_)
        ) {
            return;
        }
        let Some(k) = self.keys.get_mut(layer).map(std::mem::take) else {
            return;
        };
        let recall = match method {
            Method::SparF(p) => sparf_recall(q, &k, shape, p),
            Method::SparFPlus(o) => sparf_recall(q, &k, shape, o.p),
            Method::Pages(p) => pages_recall(q, &k, shape, p),
            _ => None,
        };
        if let Some(r) = recall {
            self.planned(layer, r);
        }
    }

    /// Records `layer`'s recall; with the last layer's, the scales.
    fn planned(&mut self, layer: usize, recall: f64) {
        if let Some(slot) = self.recall.get_mut(layer) {
            *slot = Some(recall);
        }
        if self.recall.iter().all(Option::is_some) {
            let recall: Vec<f64> = self.recall.iter().flatten().copied().collect();
            self.scales = Some(scales(&recall));
        }
    }

    /// `method` with `layer`'s k scaled (unchanged until every layer is
    /// planned, and for methods without a k).
    pub fn apply(&self, layer: usize, method: Method, s: usize) -> Method {
        let Some(w) = self.scales.as_ref().and_then(|w| w.get(layer)) else {
            return method;
        };
        let scale = |p: SparseParams| {
            let k = ((p.k as f64 * w).round() as usize).clamp(1, s.max(1));
            let local = ((p.local as f64 * w).round() as usize).min(k);
            SparseParams { k, local, ..p }
        };
        match method {
            Method::SparF(p) => Method::SparF(scale(p)),
            Method::SparFPlus(mut o) => {
                o.p = scale(o.p);
                if let Some(g) = o.guard.as_mut() {
                    g.k_cap = g.k_cap.max(o.p.k);
                }
                Method::SparFPlus(o)
            }
            Method::Pages(p) => {
                // The scales shared out over the nominal total and rounded
                // on their running sum, so that the layers' pages add up
                // to it exactly (pages are few: rounding each layer alone
                // loses some).
                let all = self.scales.as_deref().unwrap_or_default();
                let total = all.iter().sum::<f64>().max(f64::MIN_POSITIVE);
                let nominal = (all.len() * p.max_pages) as f64;
                let upto =
                    |l: usize| -> f64 { (all[..l].iter().sum::<f64>() / total * nominal).round() };
                let share = (upto(layer + 1) - upto(layer)).max(0.0) as usize;
                let full = (s / p.page_tokens.max(1)).max(1);
                let max_pages = share.clamp(1, full);
                let local_pages = p.local_pages.min(max_pages);
                Method::Pages(PagesParams {
                    max_pages,
                    local_pages,
                    ..p
                })
            }
            m => m,
        }
    }

    /// The scales, once planned.
    pub fn scales(&self) -> Option<&[f64]> {
        self.scales.as_deref()
    }
}

/// A layer's recall under SparF's selection: per KV head and each of the
/// last queries (`q`: `[m][q_heads][d]`), the exact mass per query head on
/// the tokens SparF chooses from the prompt keys (`k`:
/// `[kv_heads][n][d]`); the mean. `None` when there is nothing to measure.
fn sparf_recall(q: &[f32], k: &[f32], shape: ModelShape, p: SparseParams) -> Option<f64> {
    let (g, d, kvh) = (shape.group(), shape.head_dim, shape.kv_heads);
    let n = k.len() / (kvh * d).max(1);
    if n == 0 || q.is_empty() {
        return None;
    }
    let group = GroupShape {
        group: g,
        head_dim: d,
    };
    let (mut sum, mut count) = (0.0f64, 0usize);
    for q_pos in q.chunks_exact(shape.q_heads * d) {
        for h in 0..kvh {
            let q_g = &q_pos[h * g * d..(h + 1) * g * d];
            let k_h = &k[h * n * d..(h + 1) * n * d];
            if let Ok(sel) = reference::sparf_select(q_g, k_h, group, p) {
                for q_h in q_g.chunks_exact(d) {
                    sum += recall(q_h, k_h, &sel.tokens, d);
                    count += 1;
                }
            }
        }
    }
    (count > 0).then(|| sum / count as f64)
}

/// A layer's recall under the page selection: per KV head, the prompt
/// keys (`k`: `[kv_heads][n][d]`) placed as the drive places them, and for
/// each of the last queries (`q`: `[m][q_heads][d]`) the exact mass per
/// query head on the group's best `max_pages` full pages (by the group's
/// summed exact mass), the pinned sinks and the tail; the mean over query
/// heads and positions. `None` when there is nothing to measure.
fn pages_recall(q: &[f32], k: &[f32], shape: ModelShape, p: PagesParams) -> Option<f64> {
    let (g, d, kvh) = (shape.group(), shape.head_dim, shape.kv_heads);
    let t = p.page_tokens.max(1);
    let n = k.len() / (kvh * d).max(1);
    if n == 0 || q.is_empty() || d == 0 {
        return None;
    }
    let keep = if p.similar {
        p.local_pages * t
    } else {
        usize::MAX
    };
    let full = n / t;
    let sink = p.sink.min(full * t);
    let (mut sum, mut count) = (0.0f64, 0usize);
    for h in 0..kvh {
        let k_h = &k[h * n * d..(h + 1) * n * d];
        let order = engine::layout_order(&to_f16_bits(k_h), d, t, sink, keep);
        let placed: Vec<f32> = order
            .iter()
            .flat_map(|&j| k_h[j as usize * d..(j as usize + 1) * d].iter().copied())
            .collect();
        for q_pos in q.chunks_exact(shape.q_heads * d) {
            let q_g = &q_pos[h * g * d..(h + 1) * g * d];
            let probs: Vec<Vec<f64>> = q_g
                .chunks_exact(d)
                .map(|q_h| softmax(q_h, &placed, d))
                .collect();
            let page_mass =
                |pr: &[f64], pg: usize| -> f64 { pr[engine::page_span(pg, t, sink)].iter().sum() };
            let mut pages: Vec<(f64, usize)> = (0..full)
                .map(|pg| (probs.iter().map(|pr| page_mass(pr, pg)).sum(), pg))
                .collect();
            // Most mass first, ties to the lower page.
            pages.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let chosen = &pages[..p.max_pages.min(full)];
            for pr in &probs {
                let outside: f64 =
                    pr[..sink].iter().sum::<f64>() + pr[full * t..].iter().sum::<f64>();
                let inside: f64 = chosen.iter().map(|&(_, pg)| page_mass(pr, pg)).sum();
                sum += outside + inside;
                count += 1;
            }
        }
    }
    (count > 0).then(|| sum / count as f64)
}

/// The exact softmax of `q_h` over `k` (`[n][d]`), f64.
fn softmax(q_h: &[f32], k: &[f32], d: usize) -> Vec<f64> {
    let c = 1.0 / (d as f64).sqrt();
    let logits: Vec<f64> = k
        .chunks_exact(d)
        .map(|row| {
            c * row
                .iter()
                .zip(q_h)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum::<f64>()
        })
        .collect();
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logits.iter().map(|x| (x - max).exp()).collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

/// The exact softmax mass of `q_h` over `k` (`[n][d]`) on `tokens`.
fn recall(q_h: &[f32], k: &[f32], tokens: &[u32], d: usize) -> f64 {
    let p = softmax(q_h, k, d);
    tokens.iter().filter_map(|&j| p.get(j as usize)).sum()
}

/// Per-layer scales of k from the layers' recalls: proportional to the
/// missed mass, clamped, mean at most 1.
fn scales(recall: &[f64]) -> Vec<f64> {
    let miss: Vec<f64> = recall.iter().map(|r| (1.0 - r).max(1e-3)).collect();
    let mean = miss.iter().sum::<f64>() / miss.len().max(1) as f64;
    let mut w: Vec<f64> = miss
        .iter()
        .map(|m| (m / mean).clamp(CLAMP.0, CLAMP.1))
        .collect();
    let mean_w = w.iter().sum::<f64>() / w.len().max(1) as f64;
    if mean_w > 1.0 {
        for x in &mut w {
            *x /= mean_w;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_follow_the_missed_mass_and_keep_the_mean() {
        let w = scales(&[0.9, 0.8, 0.6, 0.99]);
        let mean = w.iter().sum::<f64>() / 4.0;
        assert!(mean <= 1.0 + 1e-12, "{w:?}");
        assert!(w[2] > w[1] && w[1] > w[0] && w[0] > w[3], "{w:?}");
        assert!(w.iter().all(|&x| x <= CLAMP.1 && x >= CLAMP.0 / 2.0));
        // Equal layers: unchanged.
        assert_eq!(scales(&[0.7, 0.7, 0.7]), vec![1.0; 3]);
    }

    /// Two layers of one KV head with two query heads of 4 dims.
    const TWO_LAYERS: ModelShape = ModelShape {
        layers: 2,
        q_heads: 2,
        kv_heads: 1,
        head_dim: 4,
    };

    #[test]
    fn plans_every_layer_then_scales_k() {
        let shape = TWO_LAYERS;
        let p = SparseParams {
            r: 2,
            k: 4,
            local: 1,
        };
        let m = Method::SparF(p);
        let mut plan = LayerPlan::new(2);
        let k: Vec<f32> = (0..16 * 4)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0)
            .collect();
        // One sharp layer (a query matching one key), one flat one.
        let sharp: Vec<f32> = k[8..12].iter().chain(&k[8..12]).map(|x| 4.0 * x).collect();
        let flat = vec![0.01f32; 8];
        plan.keys(0, &k);
        plan.keys(1, &k);
        plan.queries(0, &sharp, shape, m);
        assert!(plan.scales().is_none());
        assert_eq!(plan.apply(0, m, 16), m);
        plan.queries(1, &flat, shape, m);
        let w = plan.scales().unwrap().to_vec();
        assert!(w[1] > w[0], "{w:?}");
        let Method::SparF(p1) = plan.apply(1, m, 16) else {
            panic!()
        };
        assert!(p1.k > p.k && p1.k <= 8);
        // Dense plans nothing.
        assert_eq!(plan.apply(1, Method::Dense, 16), Method::Dense);
    }

    #[test]
    fn plans_page_budgets_toward_the_layer_whose_mass_is_spread() {
        let shape = TWO_LAYERS;
        let p = PagesParams {
            page_tokens: 4,
            max_pages: 2,
            local_pages: 0,
            mass_milli: 1000,
            score: attention::shape::PageScore::Mean,
            similar: true,
            fill: true,
            sink: 1,
        };
        let m = Method::Pages(p);
        let k: Vec<f32> = (0..32 * 4)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0)
            .collect();
        // A query that picks out one key: a few pages hold its mass. A
        // flat query spreads it over all 8 pages.
        let sharp: Vec<f32> = k[40..44]
            .iter()
            .chain(&k[40..44])
            .map(|x| 6.0 * x)
            .collect();
        let flat = vec![0.01f32; 8];
        let recall_sharp = pages_recall(&sharp, &k, shape, p).unwrap();
        let recall_flat = pages_recall(&flat, &k, shape, p).unwrap();
        assert!(recall_sharp > 0.8, "{recall_sharp}");
        // Near flat: the sink and two whole pages, 9 tokens of 32.
        assert!((recall_flat - 9.0 / 32.0).abs() < 0.02, "{recall_flat}");
        let mut plan = LayerPlan::new(2);
        plan.keys(0, &k);
        plan.keys(1, &k);
        plan.queries(0, &sharp, shape, m);
        assert_eq!(
            plan.apply(0, m, 32),
            m,
            "unchanged until every layer is planned"
        );
        plan.queries(1, &flat, shape, m);
        let (Method::Pages(p0), Method::Pages(p1)) = (plan.apply(0, m, 32), plan.apply(1, m, 32))
        else {
            panic!()
        };
        assert!(
            p1.max_pages > p.max_pages && p0.max_pages < p.max_pages,
            "{p0:?} {p1:?}"
        );
        assert_eq!(
            p0.max_pages + p1.max_pages,
            2 * p.max_pages,
            "the total is kept"
        );
        // Never more pages than the context has.
        let Method::Pages(short) = plan.apply(1, m, 9) else {
            panic!()
        };
        assert_eq!(short.max_pages, 2);
    }
}
