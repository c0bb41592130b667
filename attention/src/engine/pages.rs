//! Flash-aware selection ("pages"): the drive reads whole flash pages, so
//! this method chooses pages, not tokens, and lays the tokens out so that
//! the pages it chooses hold the tokens attention needs.
//!
//! * **Placement** ([`layout_order`]): at prefill the keys of one KV head
//!   are grouped by similarity (integer k-means on the centred keys) and
//!   written cluster by cluster, so a page holds keys that are alike; the
//!   most recent tokens keep their order at the end (they are the local
//!   window). Attention is a sum over tokens, so the order in which the
//!   drive stores them does not change any result.
//! * **Page summaries** ([`summarize`]): per full page of `T` tokens, the
//!   element-wise minimum and maximum of its keys (fp16 bits, `2·d`
//!   values), kept in device DRAM: `4·d` bytes per `T` tokens, 1/32 of the
//!   K and V bytes at T = 32.
//! * **Page scores** ([`page_logits`]): Quest's bound q·k ≤ Σ_i max(q_i·min_i,
//!   q_i·max_i) for every key of the page. The row that reaches it picks
//!   max_i where q_i ≥ 0 and min_i elsewhere ([`bound_row`]: a multiplexer
//!   in front of the GeMV lanes), so the bound is an ordinary logit.
//! * **Choice** ([`select_pages`]): softmax of the bound logits per query
//!   head, page key = Σ over the group (+ [`LOCAL_BONUS`] for the
//!   `local_pages` most recent full pages), argtopk of `max_pages`, then
//!   the mass budget: in key order, pages are kept while the mass before
//!   them is below `mass_milli`/1000 of the group's (forced pages always).
//! * **Exact pass** ([`pages_group`]): every token of the chosen pages and
//!   every token not yet in a full page (the DRAM tail), exact logits,
//!   softmax over them, weighted sum; no blend (α = 1).
//!
//! Every step is integer and order-independent, so the firmware (which
//! scores pages on the GeMV lanes and streams the chosen pages through the
//! exact pass as they arrive) matches [`pages_group`] bit for bit. The
//! exact pass is dense's arithmetic on a subset of tokens, so its error
//! against the real-valued attention over the same tokens is dense's bound
//! ([`crate::engine::DENSE_EPS`]); what the selection leaves out is the
//! method's approximation, measured as perplexity, not bounded.

use alloc::vec;
use alloc::vec::Vec;

use super::fixed::{dense_scale, f32_to_f16_bits, fx, fx_to_f32, isqrt, logit};
use super::kernels::{accumulate, finish};
use super::softmax::{P_ONE, softmax};
use super::topk::{LOCAL_BONUS, argtopk};
use crate::error::AttentionError;
use crate::shape::{GroupShape, PageScore, PagesParams};

/// k-means rounds of the placement.
pub const LAYOUT_ROUNDS: usize = 6;

/// Right shift from Q14 to the Q8 keys the placement clusters: |x| < 2^24,
/// so squared norms and dot products over d ≤ 256 dims stay below 2^57
/// and sums over 2^6 … 2^31 tokens stay in i64 where it matters.
const LAYOUT_SHIFT: u32 = 6;

/// The placement of `n = k.len() / d` keys (fp16, `n × d`) on pages of `t`
/// tokens: returns `order`, slot → index into `k`. The first `sink` keys
/// keep their slots (the attention sinks, pinned in DRAM); the keys up to
/// slot e = ⌊(n − keep_recent) / t⌋ · t are grouped by similarity
/// ([`LAYOUT_ROUNDS`] rounds of k-means with ⌈(e − sink) / t⌉ clusters on
/// the centred Q8 keys, farthest-first seeds, clusters chained
/// nearest-first, each cluster's tokens in index order); the keys from e
/// on keep their order at the end (the recent window).
///
/// Deterministic: integer arithmetic throughout, ties to the lower index.
pub fn layout_order(k: &[u16], d: usize, t: usize, sink: usize, keep_recent: usize) -> Vec<u32> {
    let n = k.len().checked_div(d).unwrap_or(0);
    let end = n
        .saturating_sub(keep_recent)
        .checked_div(t)
        .map_or(0, |p| p * t);
    let lo = sink.min(end);
    let clusters = (end - lo).div_ceil(t.max(1));
    let mut order: Vec<u32> = Vec::with_capacity(n);
    order.extend(0..lo as u32);
    if clusters >= 2 {
        let region = &k[lo * d..end * d];
        let assign = kmeans(region, d, clusters);
        let (chain, _) = chain_clusters(region, d, &assign, clusters);
        for c in chain {
            order.extend(
                assign
                    .iter()
                    .zip(lo as u32..)
                    .filter(|&(&a, _)| a == c)
                    .map(|(_, j)| j),
            );
        }
    } else {
        order.extend(lo as u32..end as u32);
    }
    order.extend(end as u32..n as u32);
    order
}

fn q8(b: u16) -> i64 {
    i64::from(fx(b) >> LAYOUT_SHIFT)
}

/// Centred Q8 keys, `m × d`.
fn centred(k: &[u16], d: usize) -> Vec<i64> {
    let m = k.len() / d;
    let mut mean = vec![0i64; d];
    for row in k.chunks_exact(d) {
        for (s, &b) in mean.iter_mut().zip(row) {
            *s += q8(b);
        }
    }
    for s in &mut mean {
        *s = s.div_euclid(m.max(1) as i64);
    }
    k.chunks_exact(d)
        .flat_map(|row| row.iter().zip(&mean).map(|(&b, &mu)| q8(b) - mu))
        .collect()
}

fn dot64(a: &[i64], b: &[i64]) -> i64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Cluster index of each of the `m` keys.
fn kmeans(k: &[u16], d: usize, clusters: usize) -> Vec<u32> {
    let x = centred(k, d);
    let m = x.len() / d;
    // Seeds: farthest-first (the key farthest from the mean, then each
    // time the key farthest from every seed so far; ties to the lower
    // index), so separated families each get one.
    let mut cent: Vec<i64> = Vec::with_capacity(clusters * d);
    let mut near: Vec<i64> = x.chunks_exact(d).map(|r| dot64(r, r)).collect();
    for _ in 0..clusters {
        let mut far = (i64::MIN, 0usize);
        for (j, &n) in near.iter().enumerate() {
            if n > far.0 {
                far = (n, j);
            }
        }
        let seed = &x[far.1 * d..(far.1 + 1) * d];
        cent.extend_from_slice(seed);
        for (n, row) in near.iter_mut().zip(x.chunks_exact(d)) {
            let dist: i64 = row.iter().zip(seed).map(|(a, b)| (a - b) * (a - b)).sum();
            *n = (*n).min(dist);
        }
    }
    let mut assign = vec![0u32; m];
    let mut sums = vec![0i64; clusters * d];
    let mut counts = vec![0i64; clusters];
    for _ in 0..LAYOUT_ROUNDS {
        // argmin ‖x − c‖² = argmax x·c − ‖c‖²/2 (exact: both sides × 2).
        let half: Vec<i64> = cent.chunks_exact(d).map(|c| dot64(c, c)).collect();
        for (a, row) in assign.iter_mut().zip(x.chunks_exact(d)) {
            let mut best = (i64::MIN, 0u32);
            for (c, (cv, &h)) in cent.chunks_exact(d).zip(&half).enumerate() {
                let score = 2 * dot64(row, cv) - h;
                if score > best.0 {
                    best = (score, c as u32);
                }
            }
            *a = best.1;
        }
        sums.fill(0);
        counts.fill(0);
        for (&a, row) in assign.iter().zip(x.chunks_exact(d)) {
            let a = a as usize;
            counts[a] += 1;
            for (s, &v) in sums[a * d..(a + 1) * d].iter_mut().zip(row) {
                *s += v;
            }
        }
        for (c, &n) in counts.iter().enumerate() {
            if n > 0 {
                for (cv, &s) in cent[c * d..(c + 1) * d]
                    .iter_mut()
                    .zip(&sums[c * d..(c + 1) * d])
                {
                    *cv = s.div_euclid(n);
                }
            }
        }
    }
    assign
}

/// The clusters in chain order (from cluster 0, each next one the nearest
/// unvisited centroid) and the centroids.
fn chain_clusters(k: &[u16], d: usize, assign: &[u32], clusters: usize) -> (Vec<u32>, Vec<i64>) {
    let x = centred(k, d);
    let mut cent = vec![0i64; clusters * d];
    let mut counts = vec![0i64; clusters];
    for (&a, row) in assign.iter().zip(x.chunks_exact(d)) {
        let a = a as usize;
        counts[a] += 1;
        for (s, &v) in cent[a * d..(a + 1) * d].iter_mut().zip(row) {
            *s += v;
        }
    }
    for (c, &n) in counts.iter().enumerate() {
        for s in &mut cent[c * d..(c + 1) * d] {
            *s = s.div_euclid(n.max(1));
        }
    }
    let mut seen = vec![false; clusters];
    let mut chain = Vec::with_capacity(clusters);
    let mut at = 0usize;
    for _ in 0..clusters {
        seen[at] = true;
        chain.push(at as u32);
        let here = &cent[at * d..(at + 1) * d];
        let mut best = (i64::MAX, usize::MAX);
        for (c, cv) in cent.chunks_exact(d).enumerate() {
            if seen[c] {
                continue;
            }
            let dist: i64 = here.iter().zip(cv).map(|(a, b)| (a - b) * (a - b)).sum();
            if dist < best.0 {
                best = (dist, c);
            }
        }
        if best.1 == usize::MAX {
            break;
        }
        at = best.1;
    }
    (chain, cent)
}

/// Element-wise minimum and maximum (by value; the first on ties) of the
/// `T × d` fp16 rows of one page, as fp16 bits; `out` gets `min ‖ max`
/// (`2·d` values).
pub fn summarize(rows: &[u16], d: usize, out: &mut Vec<u16>) {
    out.clear();
    out.resize(2 * d, 0);
    if d == 0 {
        return;
    }
    let mut first = true;
    for row in rows.chunks_exact(d) {
        for (i, &b) in row.iter().enumerate() {
            if first || fx(b) < fx(out[i]) {
                out[i] = b;
            }
            if first || fx(b) > fx(out[d + i]) {
                out[d + i] = b;
            }
        }
        first = false;
    }
}

/// The key row that reaches the bound for query `q_h` (Fx): `max_i` where
/// `q_i ≥ 0`, `min_i` elsewhere, from a `min ‖ max` summary.
pub fn bound_row(q_h: &[i32], summary: &[u16], out: &mut [u16]) {
    let d = q_h.len();
    for (i, (o, &q)) in out.iter_mut().zip(q_h).enumerate() {
        let at = if q >= 0 { d + i } else { i };
        *o = summary.get(at).copied().unwrap_or(0);
    }
}

/// Bound logits, `g × pages` head-major: [`logit`] of each query head
/// against each page's [`bound_row`], with the dense scale.
pub fn page_logits(qf: &[i32], g: usize, d: usize, summaries: &[u16], out: &mut Vec<i32>) {
    if d == 0 {
        out.clear();
        return;
    }
    let pages = summaries.len() / (2 * d).max(1);
    let c = dense_scale(d);
    out.clear();
    out.resize(g * pages, 0);
    let mut row = vec![0u16; d];
    for (h, q_h) in qf.chunks_exact(d).take(g).enumerate() {
        for (p, summary) in summaries.chunks_exact(2 * d).enumerate() {
            bound_row(q_h, summary, &mut row);
            out[h * pages + p] = logit(q_h, &row, c);
        }
    }
}

/// The pages to read, ascending, from the bound logits (`g × pages`):
/// softmax per head, key = Σ_h p + [`LOCAL_BONUS`] on the last
/// `local_pages`, argtopk of `max_pages` (via `topk`, the argtopk unit),
/// then in key order (ties to the lower index) pages are kept while the
/// mass kept before them is below `mass_milli`/1000 · g · 2^30; forced
/// pages are always kept.
pub fn select_pages_with(
    logits: &[i32],
    g: usize,
    p: PagesParams,
    topk: impl FnMut(&[u64], usize, &mut Vec<u32>),
) -> Vec<u32> {
    let pages = logits.len() / g.max(1);
    let mut probs = vec![0u32; g * pages];
    if pages > 0 {
        for (l, pr) in logits
            .chunks_exact(pages)
            .zip(probs.chunks_exact_mut(pages))
        {
            softmax(l, pr);
        }
    }
    select_pages_from_probs(&probs, g, p, topk)
}

/// [`select_pages_with`] after the softmax: `probs` is `g × pages`.
pub fn select_pages_from_probs(
    probs: &[u32],
    g: usize,
    p: PagesParams,
    topk: impl FnMut(&[u64], usize, &mut Vec<u32>),
) -> Vec<u32> {
    let pages = probs.len() / g.max(1);
    if pages == 0 {
        return Vec::new();
    }
    let mut keys = vec![0u64; pages];
    for pr in probs.chunks_exact(pages) {
        for (k, &x) in keys.iter_mut().zip(pr) {
            *k += u64::from(x);
        }
    }
    select_pages_from_keys(keys, g, p, topk)
}

/// The choice from page keys (Σ over the group of Q0.30 masses): the
/// recency bonus, argtopk of `max_pages`, the mass budget.
pub fn select_pages_from_keys(
    mut keys: Vec<u64>,
    g: usize,
    p: PagesParams,
    mut topk: impl FnMut(&[u64], usize, &mut Vec<u32>),
) -> Vec<u32> {
    let pages = keys.len();
    let first_local = pages.saturating_sub(p.local_pages);
    for k in &mut keys[first_local..] {
        *k += LOCAL_BONUS;
    }
    let mut chosen = Vec::new();
    topk(&keys, p.max_pages.min(pages), &mut chosen);
    if p.mass_milli >= 1000 {
        return chosen;
    }
    let mut ranked: Vec<(u64, u32)> = chosen
        .iter()
        .map(|&j| (keys.get(j as usize).copied().unwrap_or(0), j))
        .collect();
    ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let want = u64::from(p.mass_milli) * g as u64 * u64::from(P_ONE) / 1000;
    let mut mass = 0u64;
    let mut kept: Vec<u32> = Vec::with_capacity(ranked.len());
    for (key, j) in ranked {
        let forced = key >= LOCAL_BONUS;
        if forced || mass < want {
            kept.push(j);
            mass += key % LOCAL_BONUS;
        }
    }
    kept.sort_unstable();
    kept
}

/// [`select_pages_with`] on the model's argtopk.
pub fn select_pages(logits: &[i32], g: usize, p: PagesParams) -> Vec<u32> {
    select_pages_with(logits, g, p, argtopk)
}

/// The tokens a choice of pages attends: the `sink` first slots (pinned
/// in DRAM), every slot of each chosen page, then the tail
/// `full_pages · t .. s`, ascending.
pub fn page_tokens(pages: &[u32], t: usize, s: usize, sink: usize) -> Vec<u32> {
    let full = s / t.max(1);
    let pinned = sink.min(full * t);
    let mut out: Vec<u32> = (0..pinned as u32).collect();
    for &p in pages {
        let p = p as usize;
        if p < full {
            let lo = (p * t).max(pinned);
            out.extend(lo as u32..((p + 1) * t) as u32);
        }
    }
    out.extend((full * t) as u32..s as u32);
    out
}

/// Slots of full page `p` that its summary covers (pinned sinks excluded).
pub fn page_span(p: usize, t: usize, sink: usize) -> core::ops::Range<usize> {
    let hi = (p + 1) * t;
    (p * t).max(sink).min(hi)..hi
}

/// The result of [`pages_group`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagesOutput {
    /// `g × d` output, Fx.
    pub out: Vec<i32>,
    /// The chosen full pages, ascending.
    pub pages: Vec<u32>,
    /// Tokens attended (chosen pages and the tail).
    pub tokens: usize,
}

/// The method on one KV group whose `K` and `V` (`S × d` fp16) are in slot
/// order (as placed on flash): summaries of the ⌊S / T⌋ full pages, page
/// choice, exact pass. See the module docs.
pub fn pages_group(
    q: &[u16],
    k: &[u16],
    v: &[u16],
    shape: GroupShape,
    p: PagesParams,
) -> Result<PagesOutput, AttentionError> {
    let s = shape.check_inputs(q.len(), k.len(), v.len())?;
    p.validate()?;
    let (g, d, t) = (shape.group, shape.head_dim, p.page_tokens);
    let qf: Vec<i32> = q.iter().map(|&b| fx(b)).collect();
    let full = s / t;
    let pages = match p.score {
        PageScore::Bound => select_pages(&bound_page_logits(&qf, k, g, d, full, t, p.sink), g, p),
        PageScore::Mean => select_pages(&mean_page_logits(&qf, k, d, full, t, p.sink), g, p),
        PageScore::Gauss => {
            let mut logits = vec![0i32; g * full];
            for pg in 0..full {
                let r = page_span(pg, t, p.sink);
                let rows = &k[r.start * d..r.end * d];
                let (m, sd) = (mean_row(rows, d), sd_row(rows, d));
                for (h, q_h) in qf.chunks_exact(d).enumerate() {
                    logits[h * full + pg] = gauss_logit(q_h, &m, &sd, r.len());
                }
            }
            select_pages(&logits, g, p)
        }
        PageScore::Exact => {
            select_pages_from_keys(mass_keys(&qf, k, d, full, t, p.sink), g, p, argtopk)
        }
        PageScore::Sketch {
            bits,
            shortlist,
            bound,
        } => {
            // The mean score (and with `bound` Quest's bound) shortlists
            // `wide` pages (every page when the shortlist is 0 or covers
            // them all); only those are decoded from the sketch, the rest
            // stand in as their mean logits.
            let wide = usize::from(shortlist).saturating_mul(p.max_pages);
            let (listed, ml) = if shortlist == 0 || wide >= full {
                ((0..full as u32).collect(), Vec::new())
            } else {
                let ml = mean_page_logits(&qf, k, d, full, t, p.sink);
                let (by_mean, by_bound) = shortlist_split(wide, bound);
                let listed = select_pages(&ml, g, shortlist_params(p, by_mean));
                let listed = if by_bound > 0 {
                    let bl = bound_page_logits(&qf, k, g, d, full, t, p.sink);
                    let more = select_pages(&bl, g, shortlist_params(p, by_bound));
                    shortlist_union(listed, &more)
                } else {
                    listed
                };
                (listed, ml)
            };
            let approx = sketched(k, d, &listed, t, p.sink, bits);
            let (rows, spans) = shortlist_rows(&approx, d, &listed, full, t, p.sink);
            let stand = shortlist_stand_ins(&listed, full, t, p.sink);
            let extra: Vec<i32> = ml
                .chunks_exact(full.max(1))
                .flat_map(|l| stand.iter().map(|&pg| l[pg]))
                .collect();
            let probs = head_probs(&qf, &rows, &extra, stand.len(), d);
            let n = rows.len() / d.max(1) + stand.len();
            select_pages_from_keys(span_masses(&probs, n, full, &spans), g, p, argtopk)
        }
    };
    let tokens = page_tokens(&pages, t, s, p.sink);
    let out = if p.fill {
        // Unread full pages as T copies of their mean key and value:
        // logit(q, k̄) + ln T, one softmax over tokens and pages.
        let unread: Vec<usize> = (0..full)
            .filter(|pg| pages.binary_search(&(*pg as u32)).is_err())
            .collect();
        // Pages whose every slot is pinned have no stand-in.
        let spans: Vec<_> = unread
            .iter()
            .map(|&pg| page_span(pg, t, p.sink))
            .filter(|r| !r.is_empty())
            .collect();
        let kbar: Vec<Vec<u16>> = spans
            .iter()
            .map(|r| mean_row(&k[r.start * d..r.end * d], d))
            .collect();
        let vbar: Vec<Vec<u16>> = spans
            .iter()
            .map(|r| mean_row(&v[r.start * d..r.end * d], d))
            .collect();
        let ln_n: Vec<i32> = spans.iter().map(|r| ln_q16(r.len())).collect();
        // Gauss: the stand-in carries the spread term too (added to ln n).
        let ln_n: Vec<Vec<i32>> = if p.score == PageScore::Gauss {
            qf.chunks_exact(d)
                .map(|q_h| {
                    spans
                        .iter()
                        .zip(&ln_n)
                        .map(|(r, &ln)| {
                            let sd = sd_row(&k[r.start * d..r.end * d], d);
                            ln.saturating_add(spread_term(q_h, &sd, dense_scale(d)))
                        })
                        .collect()
                })
                .collect()
        } else {
            vec![ln_n; g]
        };
        filled(&qf, k, v, d, &tokens, &kbar, &vbar, &ln_n)
    } else {
        exact_all(&qf, k, v, d, &tokens)
    };
    Ok(PagesOutput {
        out,
        pages,
        tokens: tokens.len(),
    })
}

/// Page keys from token masses: per query head, exact logits of `rows`
/// (`S × d`, the keys or their sketch) against all S tokens, softmax,
/// then [`span_masses`] over every full page.
fn mass_keys(qf: &[i32], rows: &[u16], d: usize, full: usize, t: usize, sink: usize) -> Vec<u64> {
    let spans: Vec<_> = (0..full)
        .map(|pg| (pg as u32, page_span(pg, t, sink)))
        .collect();
    let probs = head_probs(qf, rows, &[], 0, d);
    span_masses(&probs, rows.len() / d.max(1), full, &spans)
}

/// Per query head (`g × n`, Q0.30): the softmax of the logits of `rows`
/// followed by `extra` (`g × m` more logits, head-major).
fn head_probs(qf: &[i32], rows: &[u16], extra: &[i32], m: usize, d: usize) -> Vec<u32> {
    let c = dense_scale(d);
    let n = rows.len() / d.max(1) + m;
    let mut probs = vec![0u32; qf.len() / d.max(1) * n];
    let mut l = vec![0i32; n];
    for (h, (q_h, pr)) in qf
        .chunks_exact(d)
        .zip(probs.chunks_exact_mut(n.max(1)))
        .enumerate()
    {
        for (x, row) in l.iter_mut().zip(rows.chunks_exact(d)) {
            *x = logit(q_h, row, c);
        }
        l[n - m..].copy_from_slice(&extra[h * m..(h + 1) * m]);
        softmax(&l, pr);
    }
    probs
}

/// Page keys from per-head probabilities (`g × n`, Q0.30) of rows whose
/// pages are `spans` (page, rows): each page's probabilities summed over
/// its rows and the group; pages not in `spans` 0.
pub fn span_masses(
    probs: &[u32],
    n: usize,
    full: usize,
    spans: &[(u32, core::ops::Range<usize>)],
) -> Vec<u64> {
    let mut keys = vec![0u64; full];
    if n == 0 {
        return keys;
    }
    for pr in probs.chunks_exact(n) {
        for (pg, r) in spans {
            keys[*pg as usize] += pr[r.clone()].iter().map(|&x| u64::from(x)).sum::<u64>();
        }
    }
    keys
}

/// Page logits of Quest's bound (`g × full`) from each page's min/max.
fn bound_page_logits(
    qf: &[i32],
    k: &[u16],
    g: usize,
    d: usize,
    full: usize,
    t: usize,
    sink: usize,
) -> Vec<i32> {
    let mut summaries = Vec::with_capacity(full * 2 * d);
    let mut one = Vec::new();
    for pg in 0..full {
        let r = page_span(pg, t, sink);
        summarize(&k[r.start * d..r.end * d], d, &mut one);
        summaries.extend_from_slice(&one);
    }
    let mut logits = Vec::new();
    page_logits(qf, g, d, &summaries, &mut logits);
    logits
}

/// A shortlist of `wide` pages: how many the mean score picks and how
/// many the bound picks (`bound`: ⌈wide/2⌉ and ⌊wide/2⌋; else all by the
/// mean).
pub fn shortlist_split(wide: usize, bound: bool) -> (usize, usize) {
    if bound {
        (wide.div_ceil(2), wide / 2)
    } else {
        (wide, 0)
    }
}

/// The page choice's parameters for one part of a shortlist: `n` pages,
/// the whole part read (no mass budget), the local pages still forced.
pub fn shortlist_params(p: PagesParams, n: usize) -> PagesParams {
    PagesParams {
        max_pages: n,
        mass_milli: 1000,
        ..p
    }
}

/// Two ascending page lists as one, ascending, each page once.
pub fn shortlist_union(mut a: Vec<u32>, b: &[u32]) -> Vec<u32> {
    a.extend_from_slice(b);
    a.sort_unstable();
    a.dedup();
    a
}

/// Page logits of the mean score (`g × full`): logit(q, k̄) + ln n per
/// page.
fn mean_page_logits(
    qf: &[i32],
    k: &[u16],
    d: usize,
    full: usize,
    t: usize,
    sink: usize,
) -> Vec<i32> {
    let c = dense_scale(d);
    let means: Vec<Vec<u16>> = (0..full)
        .map(|pg| {
            let r = page_span(pg, t, sink);
            mean_row(&k[r.start * d..r.end * d], d)
        })
        .collect();
    let mut logits = vec![0i32; qf.len() / d.max(1) * full];
    for (h, q_h) in qf.chunks_exact(d).enumerate() {
        for (pi, m) in means.iter().enumerate() {
            let n = page_span(pi, t, sink).len();
            logits[h * full + pi] = mean_logit(q_h, m, n, c);
        }
    }
    logits
}

/// The rows the shortlisted sketch score attends, in slot order: every
/// slot outside the full pages not listed (sinks and tail exact, listed
/// pages as their sketch in `approx`); and where each listed page's
/// rows lie in them.
pub fn shortlist_rows(
    approx: &[u16],
    d: usize,
    listed: &[u32],
    full: usize,
    t: usize,
    sink: usize,
) -> (Vec<u16>, Vec<(u32, core::ops::Range<usize>)>) {
    let s = approx.len() / d.max(1);
    let mut rows = Vec::new();
    let mut spans = Vec::new();
    let mut j = 0;
    for pg in 0..full {
        let r = page_span(pg, t, sink);
        rows.extend_from_slice(&approx[j * d..r.start * d]);
        if listed.binary_search(&(pg as u32)).is_ok() {
            let at = rows.len() / d.max(1);
            rows.extend_from_slice(&approx[r.start * d..r.end * d]);
            spans.push((pg as u32, at..at + r.len()));
        }
        j = r.end;
    }
    rows.extend_from_slice(&approx[j.min(s) * d..s * d]);
    (rows, spans)
}

/// The unlisted full pages that stand in for their tokens in the
/// shortlisted sketch score (those with rows), ascending.
pub fn shortlist_stand_ins(listed: &[u32], full: usize, t: usize, sink: usize) -> Vec<usize> {
    (0..full)
        .filter(|&pg| {
            listed.binary_search(&(pg as u32)).is_err() && !page_span(pg, t, sink).is_empty()
        })
        .collect()
}

/// The sketch level `code` of `L = 2^bits` between `lo` and `hi` (fp16
/// bits): the centre of bin `code` of `L` equal bins,
/// lo + ⌊(hi − lo) · (2·code + 1) / (2L)⌋ in Fx, to fp16.
pub fn sketch_level(lo: u16, hi: u16, code: u8, bits: u32) -> u16 {
    let bins = 1i64 << bits;
    let span = i64::from(fx(hi)) - i64::from(fx(lo));
    let x = i64::from(fx(lo)) + (span * (2 * i64::from(code) + 1)).div_euclid(2 * bins);
    f32_to_f16_bits(fx_to_f32(x as i32))
}

/// The `bits`-bit code of `x` between `lo` and `hi` (fp16 bits): its bin
/// of `2^bits` equal bins, ⌊L · (x − lo) / (hi − lo)⌋ clamped to L − 1; 0
/// when hi ≤ lo.
pub fn sketch_code(x: u16, lo: u16, hi: u16, bits: u32) -> u8 {
    let bins = 1i64 << bits;
    let span = i64::from(fx(hi)) - i64::from(fx(lo));
    if span <= 0 {
        return 0;
    }
    let num = (i64::from(fx(x)) - i64::from(fx(lo))) * bins;
    num.div_euclid(span).clamp(0, bins - 1) as u8
}

/// Packs the codes of `rows` (one page's `n × d` keys, `summary` its
/// [`summarize`]) at `bits` per element, element `e` (row-major) at bit
/// `e · bits` of `out` (little-endian within a byte): the page's sketch as
/// device DRAM holds it, `⌈n · d · bits / 8⌉` bytes.
pub fn sketch_pack(rows: &[u16], summary: &[u16], d: usize, bits: u32, out: &mut Vec<u8>) {
    out.clear();
    out.resize((rows.len() * bits as usize).div_ceil(8), 0);
    if d == 0 {
        return;
    }
    for (e, &x) in rows.iter().enumerate() {
        let i = e % d;
        let code = sketch_code(x, summary[i], summary[d + i], bits);
        let at = e * bits as usize;
        out[at / 8] |= code << (at % 8);
    }
}

/// A page's sketch level table: for each code `c < 2^bits` the `d`
/// levels [`sketch_level`] of its elements, code-major (`levels[c·d + i]`),
/// from the page's [`summarize`]. Device DRAM keeps it beside the codes,
/// so decoding is a multiplexer per element (`hdl::SketchRow`).
pub fn sketch_levels(summary: &[u16], d: usize, bits: u32, out: &mut Vec<u16>) {
    out.clear();
    for c in 0..1u8 << bits {
        out.extend((0..d).map(|i| sketch_level(summary[i], summary[d + i], c, bits)));
    }
}

/// Row `r` of a packed page sketch, decoded through its level table
/// ([`sketch_levels`]) into `out` (`d` values): element i takes
/// `levels[code·d + i]`.
pub fn sketch_row(codes: &[u8], levels: &[u16], r: usize, bits: u32, out: &mut [u16]) {
    let d = out.len();
    let mask = (1u8 << bits) - 1;
    for (i, o) in out.iter_mut().enumerate() {
        let at = (r * d + i) * bits as usize;
        let code = codes.get(at / 8).map_or(0, |&b| (b >> (at % 8)) & mask);
        *o = levels.get(usize::from(code) * d + i).copied().unwrap_or(0);
    }
}

/// `rows` (one page's `n × d` keys) through the sketch: packed against
/// the page's [`summarize`] and decoded again, in place.
pub fn sketch_rows(rows: &mut [u16], d: usize, bits: u32) {
    if d == 0 {
        return;
    }
    let (mut summary, mut codes, mut levels) = (Vec::new(), Vec::new(), Vec::new());
    summarize(rows, d, &mut summary);
    sketch_pack(rows, &summary, d, bits, &mut codes);
    sketch_levels(&summary, d, bits, &mut levels);
    for (r, row) in rows.chunks_exact_mut(d).enumerate() {
        sketch_row(&codes, &levels, r, bits, row);
    }
}

/// The keys as the scorer sees them: the tokens of the `listed` full
/// pages (pinned sinks excluded) through the sketch, every other row exact.
fn sketched(k: &[u16], d: usize, listed: &[u32], t: usize, sink: usize, bits: u8) -> Vec<u16> {
    let mut approx = k.to_vec();
    for &pg in listed {
        let r = page_span(pg as usize, t, sink);
        sketch_rows(&mut approx[r.start * d..r.end * d], d, u32::from(bits));
    }
    approx
}

/// The mean of a page's rows, rounded to fp16 ([`mean_from_sums`]).
fn mean_row(page: &[u16], d: usize) -> Vec<u16> {
    let n = page.len() / d.max(1);
    let mut sums = vec![0i64; d];
    for row in page.chunks_exact(d) {
        for (s, &b) in sums.iter_mut().zip(row) {
            *s += i64::from(fx(b));
        }
    }
    let mut out = Vec::new();
    mean_from_sums(&sums, n, &mut out);
    out
}

/// Per-dim standard deviation of a page's rows ([`sd_from_sums`]).
fn sd_row(page: &[u16], d: usize) -> Vec<u16> {
    let n = page.len() / d.max(1);
    let mut sums = vec![0i64; d];
    let mut squares = vec![0i128; d];
    for row in page.chunks_exact(d) {
        for ((s, q), &b) in sums.iter_mut().zip(squares.iter_mut()).zip(row) {
            let x = i64::from(fx(b));
            *s += x;
            *q += i128::from(x) * i128::from(x);
        }
    }
    let mut out = Vec::new();
    sd_from_sums(&sums, &squares, n, &mut out);
    out
}

/// fp16 bits of the population standard deviation of `n` rows with Fx
/// sums `sums` and sums of squares `squares` (Q28): isqrt((n·Σx² −
/// (Σx)²) / n²) in Fx; zeros when n = 0.
pub fn sd_from_sums(sums: &[i64], squares: &[i128], n: usize, out: &mut Vec<u16>) {
    out.clear();
    let nn = n.max(1) as i128;
    out.extend(sums.iter().zip(squares).map(|(&s, &q)| {
        let var = ((nn * q - i128::from(s) * i128::from(s)) / (nn * nn)).max(0);
        let sd = isqrt(var as u128).min(i32::MAX as u128) as i32;
        f32_to_f16_bits(fx_to_f32(sd))
    }));
}

/// ½·c²·Σ(q_i·σ_i)² in Q16 (saturating): the log-mass a page's spread adds
/// to its mean logit under a Gaussian model of its keys.
pub fn spread_term(q_h: &[i32], sd: &[u16], c: u32) -> i32 {
    let s: u128 = q_h
        .iter()
        .zip(sd)
        .map(|(&q, &b)| {
            // Q14 · Q14 = Q28, back to Q14, squared: Q28.
            let t = (i64::from(q) * i64::from(fx(b))) >> 14;
            (t.unsigned_abs() as u128).saturating_mul(t.unsigned_abs() as u128)
        })
        .fold(0u128, u128::saturating_add);
    // Q28 · Q32 (c²) = Q60; Q16 and the half: >> 45.
    let c2 = u128::from(c) * u128::from(c);
    (s.saturating_mul(c2) >> 45).min(i32::MAX as u128) as i32
}

/// A page's score from its mean key: logit(q, k̄) + ln n (the log-mass of
/// n tokens at the mean logit; 0 rows score as one).
pub fn mean_logit(q_h: &[i32], mean: &[u16], n: usize, c: u32) -> i32 {
    logit(q_h, mean, c).saturating_add(ln_q16(n))
}

/// The Gaussian log-mass logit of a page: logit(q, k̄) + spread + ln n.
pub fn gauss_logit(q_h: &[i32], mean: &[u16], sd: &[u16], n: usize) -> i32 {
    let c = dense_scale(q_h.len());
    logit(q_h, mean, c)
        .saturating_add(spread_term(q_h, sd, c))
        .saturating_add(ln_q16(n))
}

/// fp16 bits of the mean of `n` rows whose Fx sums are `sums`:
/// ⌊Σ / n⌋ (floor) in Fx, then to fp16 (nearest even); zeros when n = 0.
pub fn mean_from_sums(sums: &[i64], n: usize, out: &mut Vec<u16>) {
    out.clear();
    let n = n.max(1) as i64;
    out.extend(
        sums.iter()
            .map(|&s| f32_to_f16_bits(fx_to_f32(s.div_euclid(n) as i32))),
    );
}

/// ln(n) in Q16, rounded (n ≤ 2^16).
pub fn ln_q16(n: usize) -> i32 {
    // ln n = log2 n · ln 2: integer part from the bit length, fraction by
    // bisection on the squares (16 bits), all integer.
    let n = n.clamp(1, 1 << 16) as u64;
    let int = 63 - n.leading_zeros() as u64;
    // x in Q32: n / 2^int in [1, 2).
    let mut x: u128 = (u128::from(n) << 32) >> int;
    let mut frac: u64 = 0;
    for bit in (0..16).rev() {
        x = (x * x) >> 32;
        if x >= 2 << 32 {
            x >>= 1;
            frac |= 1 << bit;
        }
    }
    let log2_q16 = (int << 16) | frac;
    // ln 2 in Q16 = 45426.
    ((log2_q16 * 45426 + (1 << 15)) >> 16) as i32
}

/// [`exact_all`] with the unread pages in the softmax as virtual tokens:
/// logit(q, k̄_p) + ln n_p (`ln_n`, Q16), value v̄_p.
#[allow(clippy::too_many_arguments)]
fn filled(
    qf: &[i32],
    k: &[u16],
    v: &[u16],
    d: usize,
    tokens: &[u32],
    kbar: &[Vec<u16>],
    vbar: &[Vec<u16>],
    ln_n: &[Vec<i32>],
) -> Vec<i32> {
    let c = dense_scale(d);
    let n = tokens.len() + kbar.len();
    let mut out = vec![0i32; qf.len()];
    let mut logits = vec![0i32; n];
    let mut probs = vec![0u32; n];
    let mut acc = vec![0i64; d];
    for ((q_h, out_h), ln_n) in qf.chunks_exact(d).zip(out.chunks_exact_mut(d)).zip(ln_n) {
        for (l, &j) in logits.iter_mut().zip(tokens) {
            let j = j as usize;
            *l = logit(q_h, &k[j * d..(j + 1) * d], c);
        }
        for ((l, kb), &ln) in logits[tokens.len()..].iter_mut().zip(kbar).zip(ln_n) {
            *l = logit(q_h, kb, c).saturating_add(ln);
        }
        softmax(&logits, &mut probs);
        acc.fill(0);
        for (&pr, &j) in probs.iter().zip(tokens) {
            let j = j as usize;
            accumulate(&mut acc, pr, &v[j * d..(j + 1) * d]);
        }
        for (&pr, vb) in probs[tokens.len()..].iter().zip(vbar) {
            accumulate(&mut acc, pr, vb);
        }
        finish(&acc, P_ONE, &[], out_h);
    }
    out
}

/// Per query head: exact logits over `tokens`, softmax, Σ p·V, finish
/// with α = 1.
fn exact_all(qf: &[i32], k: &[u16], v: &[u16], d: usize, tokens: &[u32]) -> Vec<i32> {
    let c = dense_scale(d);
    let mut out = vec![0i32; qf.len()];
    let mut logits = vec![0i32; tokens.len()];
    let mut probs = vec![0u32; tokens.len()];
    let mut acc = vec![0i64; d];
    for (q_h, out_h) in qf.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        for (l, &j) in logits.iter_mut().zip(tokens) {
            let j = j as usize;
            *l = logit(q_h, &k[j * d..(j + 1) * d], c);
        }
        softmax(&logits, &mut probs);
        acc.fill(0);
        for (&pr, &j) in probs.iter().zip(tokens) {
            let j = j as usize;
            accumulate(&mut acc, pr, &v[j * d..(j + 1) * d]);
        }
        finish(&acc, P_ONE, &[], out_h);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dense_group;
    use crate::engine::fixed::f32_to_f16_bits;
    use crate::testdata::SplitMix64;

    fn draw(rng: &mut SplitMix64, n: usize) -> Vec<u16> {
        (0..n).map(|_| f32_to_f16_bits(rng.normal())).collect()
    }

    /// One query head of d = 16 ones against 64 keys of small noise.
    fn one_head(seed: u64) -> (GroupShape, Vec<u16>, Vec<u16>, SplitMix64) {
        let mut rng = SplitMix64::new(seed);
        let (d, s) = (16, 64);
        let q: Vec<u16> = (0..d).map(|_| f32_to_f16_bits(1.0)).collect();
        let k: Vec<u16> = (0..s * d)
            .map(|_| f32_to_f16_bits(0.1 * rng.normal()))
            .collect();
        let shape = GroupShape {
            group: 1,
            head_dim: d,
        };
        (shape, q, k, rng)
    }

    fn params(max_pages: usize) -> PagesParams {
        PagesParams {
            page_tokens: 8,
            max_pages,
            local_pages: 1,
            mass_milli: 1000,
            score: PageScore::Bound,
            similar: true,
            fill: false,
            sink: 0,
        }
    }

    #[test]
    fn layout_is_a_permutation_that_keeps_the_recent_tokens_last() {
        let mut rng = SplitMix64::new(3);
        let (n, d, t) = (70, 16, 8);
        let k = draw(&mut rng, n * d);
        let order = layout_order(&k, d, t, 0, 10);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        // m = ⌊60 / 8⌋ · 8 = 56 clustered; the last 14 in order.
        assert_eq!(order[56..], (56..70).collect::<Vec<u32>>()[..]);
        assert_eq!(layout_order(&k, d, t, 0, 10), order, "deterministic");
        let pinned = layout_order(&k, d, t, 3, 10);
        assert_eq!(pinned[..3], [0, 1, 2]);
    }

    #[test]
    fn layout_groups_alike_keys_on_the_same_page() {
        // Four well-separated families of keys, interleaved in time.
        let (d, t, per) = (16, 8, 8);
        let mut rng = SplitMix64::new(5);
        let mut k = Vec::new();
        let family = |f: usize, i: usize| if i % 4 == f { 4.0 } else { 0.0 };
        for j in 0..4 * per {
            let f = j % 4;
            for i in 0..d {
                k.push(f32_to_f16_bits(family(f, i) + 0.05 * rng.normal()));
            }
        }
        let order = layout_order(&k, d, t, 0, 0);
        for page in order.chunks_exact(t) {
            let f0 = page[0] as usize % 4;
            assert!(
                page.iter().all(|&j| j as usize % 4 == f0),
                "page mixes families: {page:?}"
            );
        }
    }

    #[test]
    fn bound_is_at_least_every_logit_of_the_page() {
        let mut rng = SplitMix64::new(9);
        let (t, d) = (8, 32);
        let rows = draw(&mut rng, t * d);
        let q: Vec<i32> = draw(&mut rng, d).into_iter().map(fx).collect();
        let mut s = Vec::new();
        summarize(&rows, d, &mut s);
        let mut row = vec![0u16; d];
        bound_row(&q, &s, &mut row);
        let c = dense_scale(d);
        let ub = logit(&q, &row, c);
        for r in rows.chunks_exact(d) {
            assert!(logit(&q, r, c) <= ub);
        }
    }

    #[test]
    fn all_pages_is_dense() {
        let mut rng = SplitMix64::new(1);
        let (g, d, s) = (3, 16, 45);
        let shape = GroupShape {
            group: g,
            head_dim: d,
        };
        let (q, k, v) = (
            draw(&mut rng, g * d),
            draw(&mut rng, s * d),
            draw(&mut rng, s * d),
        );
        let got = pages_group(&q, &k, &v, shape, params(100)).unwrap();
        assert_eq!(got.out, dense_group(&q, &k, &v, shape).unwrap());
        assert_eq!(got.pages, (0..5).collect::<Vec<u32>>());
        assert_eq!(got.tokens, s);
    }

    #[test]
    fn chooses_the_page_of_the_heavy_token_and_the_local_page() {
        let (shape, q, mut k, mut rng) = one_head(2);
        let (d, s) = (shape.head_dim, 64);
        for x in &mut k[19 * d..20 * d] {
            *x = f32_to_f16_bits(2.0);
        }
        let v = draw(&mut rng, s * d);
        let got = pages_group(&q, &k, &v, shape, params(2)).unwrap();
        assert_eq!(got.pages, vec![2, 7]);
        assert_eq!(got.tokens, 16);
    }

    #[test]
    fn a_sketch_level_is_within_half_a_bin() {
        let mut rng = SplitMix64::new(11);
        for bits in [1u32, 2, 4] {
            for _ in 0..2000 {
                let (a, b) = (rng.normal() * 3.0, rng.normal() * 3.0);
                let (lo, hi) = (a.min(b), a.max(b));
                let (lo, hi) = (f32_to_f16_bits(lo), f32_to_f16_bits(hi));
                let x =
                    fx_to_f32(fx(lo)) + rng.next_f32() * (fx_to_f32(fx(hi)) - fx_to_f32(fx(lo)));
                let x = f32_to_f16_bits(x);
                let level = sketch_level(lo, hi, sketch_code(x, lo, hi, bits), bits);
                let span = fx_to_f32(fx(hi)) - fx_to_f32(fx(lo));
                let err = (fx_to_f32(fx(level)) - fx_to_f32(fx(x))).abs();
                // Half a bin, plus fp16 rounding of the level and of x.
                let tol = span / (2 << bits) as f32 + 2.0 * 1e-3 * fx_to_f32(fx(hi)).abs().max(1.0);
                assert!(err <= tol, "bits {bits}: {err} > {tol}");
            }
        }
    }

    #[test]
    fn a_packed_sketch_decodes_to_the_levels_of_its_codes() {
        let mut rng = SplitMix64::new(12);
        let (n, d) = (5, 12);
        let rows = draw(&mut rng, n * d);
        let mut summary = Vec::new();
        summarize(&rows, d, &mut summary);
        for bits in [1u32, 2, 4] {
            let mut codes = Vec::new();
            sketch_pack(&rows, &summary, d, bits, &mut codes);
            assert_eq!(codes.len(), (n * d * bits as usize).div_ceil(8));
            let (mut row, mut levels) = (vec![0u16; d], Vec::new());
            sketch_levels(&summary, d, bits, &mut levels);
            assert_eq!(levels.len(), d << bits);
            for r in 0..n {
                sketch_row(&codes, &levels, r, bits, &mut row);
                for i in 0..d {
                    let (lo, hi) = (summary[i], summary[d + i]);
                    let code = sketch_code(rows[r * d + i], lo, hi, bits);
                    assert_eq!(
                        row[i],
                        sketch_level(lo, hi, code, bits),
                        "bits {bits} row {r} dim {i}"
                    );
                }
            }
            // Element e sits at bit e·bits, little-endian in its byte.
            let first = sketch_code(rows[0], summary[0], summary[d], bits);
            assert_eq!(codes[0] & ((1u8 << bits) - 1), first);
        }
        // The extremes of each element code to the first and last bins.
        let mut codes = Vec::new();
        sketch_pack(&summary[..d], &summary, d, 2, &mut codes);
        assert!(codes.iter().all(|&b| b == 0), "the minima are bin 0");
        sketch_pack(&summary[d..], &summary, d, 2, &mut codes);
        assert!(codes.iter().all(|&b| b == 0xFF), "the maxima are bin 3");
    }

    #[test]
    fn the_sketch_finds_a_heavy_token_the_page_mean_hides() {
        // Page 2's other tokens point away from q: its mean key scores
        // low, the sketch of token 19 does not.
        let (shape, q, mut k, mut rng) = one_head(2);
        let (d, s) = (shape.head_dim, 64);
        for (j, x) in k[16 * d..24 * d].iter_mut().enumerate() {
            *x = f32_to_f16_bits(if j / d == 3 { 2.0 } else { -1.0 });
        }
        let v = draw(&mut rng, s * d);
        let mean = PagesParams {
            score: PageScore::Mean,
            ..params(2)
        };
        assert!(
            !pages_group(&q, &k, &v, shape, mean)
                .unwrap()
                .pages
                .contains(&2)
        );
        for bits in [1, 2, 4] {
            for fill in [false, true] {
                let p = PagesParams {
                    score: PageScore::Sketch {
                        bits,
                        shortlist: 0,
                        bound: false,
                    },
                    fill,
                    ..params(2)
                };
                let got = pages_group(&q, &k, &v, shape, p).unwrap();
                assert_eq!(got.pages, vec![2, 7], "bits {bits} fill {fill}");
            }
        }
        // A shortlist of 4 pages: the mean score alone leaves page 2 out,
        // so the sketch never sees it; the bound's half brings it in.
        for (bound, found) in [(false, false), (true, true)] {
            let p = PagesParams {
                score: PageScore::Sketch {
                    bits: 2,
                    shortlist: 2,
                    bound,
                },
                ..params(2)
            };
            let got = pages_group(&q, &k, &v, shape, p).unwrap();
            assert_eq!(
                got.pages.contains(&2),
                found,
                "bound {bound}: {:?}",
                got.pages
            );
        }
    }

    #[test]
    fn a_shortlist_splits_and_merges() {
        assert_eq!(shortlist_split(8, false), (8, 0));
        assert_eq!(shortlist_split(8, true), (4, 4));
        assert_eq!(shortlist_split(5, true), (3, 2));
        assert_eq!(shortlist_split(1, true), (1, 0));
        assert_eq!(
            shortlist_union(vec![1, 4, 9], &[0, 4, 10]),
            vec![0, 1, 4, 9, 10]
        );
        assert_eq!(shortlist_union(Vec::new(), &[]), Vec::<u32>::new());
    }

    #[test]
    fn mass_budget_reads_fewer_pages_when_mass_is_concentrated() {
        let (shape, q, mut k, mut rng) = one_head(4);
        let (d, s) = (shape.head_dim, 64);
        for x in &mut k[3 * d..4 * d] {
            *x = f32_to_f16_bits(3.0);
        }
        let v = draw(&mut rng, s * d);
        let p = PagesParams {
            mass_milli: 900,
            local_pages: 0,
            ..params(4)
        };
        let got = pages_group(&q, &k, &v, shape, p).unwrap();
        assert_eq!(got.pages, vec![0]);
    }

    #[test]
    fn zero_width_rows_are_empty_not_a_panic() {
        let mut out = vec![1u16; 3];
        summarize(&[1, 2, 3], 0, &mut out);
        assert!(out.is_empty());
        let mut l = vec![1i32];
        page_logits(&[], 1, 0, &[1, 2], &mut l);
        assert!(l.is_empty());
    }

    #[test]
    fn ln_q16_is_ln() {
        for n in [1usize, 2, 3, 8, 32, 100, 128, 1000, 65536] {
            let want = (n as f64).ln() * 65536.0;
            assert!((f64::from(ln_q16(n)) - want).abs() <= 2.0, "{n}");
        }
    }

    #[test]
    fn page_tokens_cover_pages_and_tail() {
        assert_eq!(page_tokens(&[1], 4, 10, 0), vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(page_tokens(&[], 4, 3, 0), vec![0, 1, 2]);
        assert_eq!(page_tokens(&[0, 9], 4, 8, 0), vec![0, 1, 2, 3]);
        assert_eq!(page_tokens(&[1], 4, 10, 2), vec![0, 1, 4, 5, 6, 7, 8, 9]);
        assert_eq!(page_tokens(&[0], 4, 10, 2), vec![0, 1, 2, 3, 8, 9]);
    }
}
