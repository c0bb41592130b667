//! PAGES' selection for one head, from the page index in device DRAM: the
//! page scores (bound, mean or key sketch), the choice on the argtopk unit
//! and, with fill, the stand-ins for the pages not read
//! (`attention::engine::pages_group`, bit for bit).

use super::{HeadJob, softmax_heads};
use crate::hal::{Engine, LogitJob};
use crate::pages::PageIndex;
use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;
use attention::shape::{PageScore, PagesParams};
use core::ops::Range;
use proto::Status;

/// What PAGES attends for one head: `sel` (tokens, ascending), of which
/// the first `pinned` are sink rows in DRAM, and with fill the unread
/// pages' stand-ins (mean K rows, mean V rows, ln of their row counts).
pub(super) struct PagesChoice {
    pub sel: Vec<u32>,
    pub pinned: usize,
    pub virt: Option<(Vec<u16>, Vec<u16>, Vec<i32>)>,
}

/// PAGES for one head: page keys from the chosen score → argtopk and the
/// mass budget → the tokens of the chosen pages, sinks and tail, and the
/// stand-ins of the rest.
pub(super) fn select_pages<B: Engine>(
    board: &mut B,
    job: &HeadJob<'_>,
    params: PagesParams,
) -> Result<PagesChoice, Status> {
    let ix = job.index;
    let (s, g, d) = (job.s, job.g, job.d);
    let t = ix.page_tokens();
    let full = s / t;
    let pages = match params.score {
        PageScore::Bound | PageScore::Mean => {
            let logits = page_logits(board, job, params.score, full)?;
            choose(board, &logits, g, params)
        }
        PageScore::Sketch {
            bits,
            shortlist,
            bound,
        } => {
            if u32::from(bits) != ix.sketch_bits() {
                return Err(Status::INTERNAL_ERROR);
            }
            // The shortlist, if any: argtopk of the mean score's share of
            // `shortlist · max_pages` (and of the bound's share, merged),
            // the local pages forced in each.
            let wide = usize::from(shortlist).saturating_mul(params.max_pages);
            let short = if shortlist == 0 || wide >= full {
                None
            } else {
                let (by_mean, by_bound) = model::shortlist_split(wide, bound);
                let ml = page_logits(board, job, PageScore::Mean, full)?;
                let mut listed = choose(board, &ml, g, model::shortlist_params(params, by_mean));
                if by_bound > 0 {
                    let bl = page_logits(board, job, PageScore::Bound, full)?;
                    let more = choose(board, &bl, g, model::shortlist_params(params, by_bound));
                    listed = model::shortlist_union(listed, &more);
                }
                Some((listed, ml))
            };
            // The listed pages' tokens (or all) on the GeMV lanes through
            // the SketchRow multiplexer, sinks and tail exact; unlisted
            // pages as their mean logits; one softmax per query head.
            let listed = short.as_ref().map(|(l, _)| l.as_slice());
            let (rows, spans) = sketch_keys(ix, s, full, listed)?;
            let stand = match listed {
                Some(l) => model::shortlist_stand_ins(l, full, t, ix.sink()),
                None => Vec::new(),
            };
            let n = rows.len() / d.max(1) + stand.len();
            let mut logits = vec![0i32; g * n];
            board.logits(LogitJob {
                queries: job.q,
                scales: &vec![model::dense_scale(d); g],
                rows: &rows,
                width: d,
                out: &mut logits,
                out_stride: n,
                out_offset: 0,
            });
            if let Some((_, ml)) = &short {
                for (l, m) in logits.chunks_exact_mut(n).zip(ml.chunks_exact(full)) {
                    for (x, &pg) in l[n - stand.len()..].iter_mut().zip(&stand) {
                        *x = m[pg];
                    }
                }
            }
            let probs = softmax_heads(board, &logits, g, n);
            let keys = model::span_masses(&probs, n, full, &spans);
            model::select_pages_from_keys(keys, g, params, |keys, k, out| {
                board.argtopk(keys, k, out)
            })
        }
        PageScore::Gauss | PageScore::Exact => return Err(Status::INTERNAL_ERROR),
    };
    let pinned = ix.sink().min(full * t).min(ix.pinned());
    let unread = (0..full).filter(|pg| pages.binary_search(&(*pg as u32)).is_err());
    // With fill, one stand-in per unread page: mean key, mean value,
    // ln n (whatever scored the pages).
    let virt = if params.fill {
        let (mut kb, mut vb, mut ln) = (Vec::new(), Vec::new(), Vec::new());
        for pg in unread {
            let rows = *ix.mean_rows.get(pg).ok_or(Status::INTERNAL_ERROR)?;
            if rows == 0 {
                // Every slot pinned: no stand-in.
                continue;
            }
            kb.extend_from_slice(mean_k(ix, pg, d)?);
            vb.extend_from_slice(mean_v(ix, pg, d)?);
            ln.push(model::ln_q16(rows as usize));
        }
        Some((kb, vb, ln))
    } else {
        None
    };
    Ok(PagesChoice {
        sel: model::page_tokens(&pages, t, s, pinned),
        pinned,
        virt,
    })
}

/// The pages `params` chooses from page logits (`g × full`): a softmax
/// per query head on the engine, then argtopk of the group's sums
/// (`model::select_pages_from_probs`).
fn choose<B: Engine>(board: &mut B, logits: &[i32], g: usize, params: PagesParams) -> Vec<u32> {
    let full = logits.len() / g.max(1);
    let probs = softmax_heads(board, logits, g, full);
    model::select_pages_from_probs(&probs, g, params, |keys, k, out| {
        board.argtopk(keys, k, out)
    })
}

/// Page logits (`g × full`) for the bound and mean scores.
fn page_logits<B: Engine>(
    board: &mut B,
    job: &HeadJob<'_>,
    score: PageScore,
    full: usize,
) -> Result<Vec<i32>, Status> {
    let (ix, g, d) = (job.index, job.g, job.d);
    let mut logits = vec![0i32; g * full];
    let scale = model::dense_scale(d);
    if score == PageScore::Bound {
        // Bound rows from min/max (the `bound_row` multiplexer) per head.
        let summaries = ix
            .summaries
            .get(..full * 2 * d)
            .ok_or(Status::INTERNAL_ERROR)?;
        let mut rows = vec![0u16; full * d];
        for h in 0..g {
            let q_h = &job.q[h * d..(h + 1) * d];
            for (row, summary) in rows.chunks_exact_mut(d).zip(summaries.chunks_exact(2 * d)) {
                model::bound_row(q_h, summary, row);
            }
            board.logits(LogitJob {
                queries: q_h,
                scales: &[scale],
                rows: &rows,
                width: d,
                out: &mut logits[h * full..(h + 1) * full],
                out_stride: full,
                out_offset: 0,
            });
        }
    } else {
        // Every query head against the mean keys, then + ln n per page.
        let means = ix.mean_k.get(..full * d).ok_or(Status::INTERNAL_ERROR)?;
        let rows = ix.mean_rows.get(..full).ok_or(Status::INTERNAL_ERROR)?;
        board.logits(LogitJob {
            queries: job.q,
            scales: &vec![scale; g],
            rows: means,
            width: d,
            out: &mut logits,
            out_stride: full,
            out_offset: 0,
        });
        for l in logits.chunks_exact_mut(full.max(1)) {
            for (x, &n) in l.iter_mut().zip(rows) {
                *x = x.saturating_add(model::ln_q16(n as usize));
            }
        }
    }
    Ok(logits)
}

/// The keys as the sketch score sees them, in slot order: the pinned
/// sink rows, the rows of every full page (or of the `listed` ones)
/// decoded from its codes and level table, the current page's rows; and
/// where each decoded page's rows lie in them.
#[allow(clippy::type_complexity)]
fn sketch_keys(
    ix: &PageIndex,
    s: usize,
    full: usize,
    listed: Option<&[u32]>,
) -> Result<(Vec<u16>, Vec<(u32, Range<usize>)>), Status> {
    let (t, d, bits) = (ix.page_tokens(), ix.head_dim(), ix.sketch_bits());
    let stride = ix.code_stride();
    let mut rows = Vec::with_capacity(s * d);
    rows.extend_from_slice(&ix.sink_k);
    let mut spans = Vec::new();
    let mut row = vec![0u16; d];
    for pg in 0..full {
        if listed.is_some_and(|l| l.binary_search(&(pg as u32)).is_err()) {
            continue;
        }
        let codes = ix
            .codes
            .get(pg * stride..(pg + 1) * stride)
            .ok_or(Status::INTERNAL_ERROR)?;
        let levels = ix
            .levels
            .get(pg * ix.level_stride()..(pg + 1) * ix.level_stride())
            .ok_or(Status::INTERNAL_ERROR)?;
        let at = rows.len() / d.max(1);
        let n = model::page_span(pg, t, ix.sink()).len();
        for r in 0..n {
            // The SketchRow multiplexer in front of the GeMV lanes.
            model::sketch_row(codes, levels, r, bits, &mut row);
            rows.extend_from_slice(&row);
        }
        spans.push((pg as u32, at..at + n));
    }
    rows.extend_from_slice(ix.current_keys());
    let covered = ix.pinned() + spans.iter().map(|(_, r)| r.len()).sum::<usize>();
    if (listed.is_none() && rows.len() != s * d) || covered > s {
        return Err(Status::INTERNAL_ERROR);
    }
    Ok((rows, spans))
}

fn mean_k(ix: &PageIndex, pg: usize, d: usize) -> Result<&[u16], Status> {
    ix.mean_k
        .get(pg * d..(pg + 1) * d)
        .ok_or(Status::INTERNAL_ERROR)
}

fn mean_v(ix: &PageIndex, pg: usize, d: usize) -> Result<&[u16], Status> {
    ix.mean_v
        .get(pg * d..(pg + 1) * d)
        .ok_or(Status::INTERNAL_ERROR)
}
