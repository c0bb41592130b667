//! Decode commands in batches: DECODE_SUBMITs that wait in the submission
//! queue one after another are admitted together while their working sets
//! fit the device DRAM set aside for decoding
//! ([`crate::DeviceConfig::decode_dram_bytes`]), and run as one batch with
//! every head of every command in flight ([`crate::scheduler`]), so that
//! sequences and layers overlap on the flash and the engine.
//!
//! Back-pressure: a command that would not fit stays in the submission
//! queue (or, once fetched, is the first served after the batch), so
//! nothing waits in device memory but what runs. A command larger than the
//! whole budget runs alone. Two commands on the same layer of the same
//! sequence never share a batch (the second may append a token the first
//! must not see). Completions are posted in submission order. A board
//! whose host interface cannot fetch ahead (a board link, whose fetch waits
//! for the host) runs batches of one.

use crate::dispatch::{Handled, decode_prepare};
use crate::error::Fail;
use crate::hal::{Clock, Engine, HostInterface, Nand, Submission};
use crate::scheduler::{self, Command, HeadJob, MethodParams};
use crate::sequence::DecodeResult;
use crate::state::State;
use alloc::vec::Vec;
use proto::{DecodeReport, DecodeSubmit, Method, Status, VendorCommand};

/// A checked DECODE_SUBMIT whose payload is in and whose new token is
/// stored: all its decode needs.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub seq: u32,
    pub layer: usize,
    /// `[q_heads][d]` fixed-point queries.
    pub q: Vec<i32>,
    /// The same for SparF's approximate stage in a rotated sequence (q̃);
    /// `None` where that stage takes `q` itself.
    pub q_approx: Option<Vec<i32>>,
    pub method: MethodParams,
}

/// The DECODE_SUBMIT in `sub`, if it is one the batch path serves.
pub(crate) fn submit_of(st: &State, sub: &Submission) -> Option<DecodeSubmit> {
    if sub.queue == 0 {
        return None;
    }
    match VendorCommand::parse(&sub.sqe) {
        Ok(VendorCommand::DecodeSubmit(c)) if !st.lost.contains(&c.seq) => Some(c),
        _ => None,
    }
}

/// Device DRAM the decode of `c` holds while it runs (bytes; an upper
/// bound): per KV head the logits and probabilities of every query head
/// over the tokens it attends, its value rows, its accumulators, and for
/// SparF the chosen dims' rows and the approximate scores.
pub(crate) fn working_bytes(st: &State, c: &DecodeSubmit) -> u64 {
    let Ok(seq) = st.sequences.get(c.seq) else {
        return 0;
    };
    let Ok(layer) = seq.layer(c.layer) else {
        return 0;
    };
    let s = u64::from(seq.len[layer]) + u64::from(c.flags.append_kv());
    let (g, d) = (seq.group() as u64, seq.d() as u64);
    let per_head = match c.method {
        Method::SPARF => {
            let n = if c.flags.guard() {
                s
            } else {
                s.min(u64::from(c.k))
            };
            8 * g * s + 2 * s * u64::from(c.r) + 8 * g * n + 2 * n * d
        }
        Method::PAGES => {
            // Bound logits and probabilities per page and query head, the
            // bound rows, then the exact pass over at most k pages, one
            // partial page and the pinned sinks.
            let t = seq.page_index(layer, 0).page_tokens() as u64;
            let pages = s / t.max(1);
            let n = s.min((u64::from(c.k) + 1) * t + u64::from(seq.shape.placement.sink));
            8 * g * pages + 2 * pages * d + 8 * g * n + 2 * n * d
        }
        _ => 8 * g * s + 2 * s * d,
    };
    seq.kv_heads() as u64 * (per_head + 8 * g * d)
}

/// A command prepared for decoding, or its early failure.
type Entry = (Submission, Result<Admitted, Fail>);

/// Serves `first` and the DECODE_SUBMITs right behind it that fit;
/// returns every command's outcome in submission order.
pub(crate) fn serve<B>(
    st: &mut State,
    board: &mut B,
    first: Submission,
    c: DecodeSubmit,
) -> Vec<(Submission, Handled)>
where
    B: HostInterface + Nand + Engine + Clock,
{
    let budget = st.config.decode_dram_bytes;
    let mut entries = Vec::new();
    let mut layers: Vec<(u32, u16)> = Vec::new();
    let mut used = 0u64;
    let (mut sub, mut c) = (first, c);
    loop {
        used += working_bytes(st, &c);
        layers.push((c.seq, c.layer));
        let prepared = decode_prepare(st, board, &sub.sqe, &c);
        entries.push((sub, prepared));
        if !board.fetch_ahead() {
            break;
        }
        // A fetch failure ends the batch; the next poll reports it.
        let Ok(next) = board.fetch() else {
            break;
        };
        match submit_of(st, &next) {
            Some(n)
                if !layers.contains(&(n.seq, n.layer))
                    && used.saturating_add(working_bytes(st, &n)) <= budget =>
            {
                st.counters.commands += 1;
                (sub, c) = (next, n);
            }
            _ => {
                st.next = Some(next);
                break;
            }
        }
    }
    run(st, board, entries)
}

/// Decodes every prepared entry in one batch and stores the results.
fn run<B>(st: &mut State, board: &mut B, entries: Vec<Entry>) -> Vec<(Submission, Handled)>
where
    B: Nand + Engine,
{
    // Per entry: its decode's outcome, `None` where it was not prepared or
    // its sequence is gone (it fails alone).
    let mut decoded: Vec<Option<Result<scheduler::Decoded, Status>>> = {
        let State {
            ftl,
            sequences,
            scratch,
            counters,
            ..
        } = &mut *st;
        let (at, cmds): (Vec<usize>, Vec<Command<'_>>) = entries
            .iter()
            .enumerate()
            .filter_map(|(i, (_, e))| {
                let a = e.as_ref().ok()?;
                let seq = sequences.get(a.seq).ok()?;
                let (kvh, g, d) = (seq.kv_heads(), seq.group(), seq.d());
                let s = seq.len[a.layer] as usize;
                let jobs = (0..kvh)
                    .map(|h| HeadJob {
                        stream: seq.stream(a.layer, h),
                        s,
                        g,
                        d,
                        q: &a.q[h * g * d..(h + 1) * g * d],
                        q_approx: &a.q_approx.as_deref().unwrap_or(&a.q)
                            [h * g * d..(h + 1) * g * d],
                        vsum: seq.vsum(a.layer, h),
                        index: seq.page_index(a.layer, h),
                    })
                    .collect();
                Some((
                    i,
                    Command {
                        jobs,
                        method: a.method,
                    },
                ))
            })
            .unzip();
        let mut cx = scheduler::Ctx {
            board,
            ftl,
            scratch,
            counters,
        };
        let mut out: Vec<_> = entries.iter().map(|_| None).collect();
        for (i, r) in at.into_iter().zip(scheduler::decode_batch(&mut cx, &cmds)) {
            out[i] = Some(r);
        }
        out
    };
    let mut out = Vec::with_capacity(entries.len());
    for ((sub, e), d) in entries.into_iter().zip(&mut decoded) {
        let r = e.and_then(|a| {
            d.take()
                .unwrap_or(Err(Status::INTERNAL_ERROR))
                .map_err(Fail::from)
                .and_then(|d| store(st, &a, d))
        });
        out.push((sub, r));
    }
    out
}

/// Keeps a decoded command's outputs and report for its DECODE_FETCH.
fn store(st: &mut State, a: &Admitted, d: scheduler::Decoded) -> Handled {
    let cost = d.cost;
    st.counters.decodes += 1;
    st.counters.pages_skipped += cost.pages_skipped;
    st.counters.engine_bytes += cost.engine_bytes;
    st.counters.elements_filtered += cost.elements_filtered;
    let seq = st.sequences.get_mut(a.seq)?;
    let s = seq.len[a.layer];
    let report = DecodeReport {
        tokens_attended: s,
        pages_read: cost.pages_read as u32,
        pages_skipped: cost.pages_skipped as u32,
        guard_widened: cost.guard_widened as u32,
        engine_bytes: cost.engine_bytes,
        elements_filtered: cost.elements_filtered,
    };
    seq.results[a.layer] = Some(DecodeResult { out: d.out, report });
    Ok(s)
}
