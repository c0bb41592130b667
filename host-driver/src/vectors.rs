//! The end-to-end vectors every device runs the same way: the simulated
//! board, the firmware under QEMU, the C ABI. Several sequences of
//! structured KV (GQA), prefilled with `KV_APPEND`, then interleaved dense
//! and SparF decodes, some appending their token's KV, then a close. What
//! comes back — the Q14 outputs and the decode reports — must be the same
//! bits on every device that runs the same firmware.

use attention::shape::{Method, SparseParams};
use attention::testdata::{structured_kv, structured_query};
use proto::{DecodeReport, SeqShape};

use crate::csd::{Csd, CsdError};
use crate::transport::Transport;

/// One decode's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorResult {
    /// Which decode (sequence, step, method).
    pub name: String,
    /// The output in the device's Q14 fixed point.
    pub raw: Vec<i32>,
    /// The device's report.
    pub report: DecodeReport,
}

fn bits(x: &[f32]) -> Vec<u16> {
    x.iter()
        .map(|&f| attention::engine::f32_to_f16_bits(f))
        .collect()
}

/// Runs the vectors on `csd` and returns every decode's result, in order.
///
/// Three sequences (2 KV heads × 3 query heads, d = 64; 300, 517 and 96
/// prompt tokens; dim group m = 1, 2, 1), two decode steps each with dense
/// and SparF (r = d/4, k = S/4, local = k/4), the second step appending the
/// new token's KV, decodes of different sequences in flight together.
pub fn run<T: Transport>(csd: &mut Csd<T>) -> Result<Vec<VectorResult>, CsdError> {
    let (kv_heads, group, d) = (2usize, 3usize, 64usize);
    let seqs: [(u32, usize, u8); 3] = [(11, 300, 1), (12, 517, 2), (13, 96, 1)];
    let mut kv = Vec::new();
    for &(seq, s, m) in &seqs {
        let (k, v) = structured_kv(u64::from(seq), kv_heads, s + 1, d);
        let (k, v) = (bits(&k), bits(&v));
        let shape = SeqShape {
            layers: 1,
            kv_heads: kv_heads as u8,
            group: group as u8,
            head_dim: d as u16,
            dim_group: m,
            rotated: false,
            placement: proto::Placement::TIME,
        };
        csd.open(seq, shape)?;
        // Prefill: the first s tokens of every head ([head][token][d]).
        let take = |x: &[u16]| -> Vec<u16> {
            x.chunks_exact((s + 1) * d)
                .flat_map(|h| h[..s * d].iter().copied())
                .collect()
        };
        csd.append(seq, 0, 0, &take(&k), &take(&v))?;
        kv.push((k, v));
    }
    let mut out = Vec::new();
    for step in 0..2usize {
        for method_i in 0..2 {
            let mut tickets = Vec::new();
            let mut names = Vec::new();
            for (i, &(seq, s, _)) in seqs.iter().enumerate() {
                let pos = s - 1 + step;
                let method = if method_i == 0 {
                    Method::Dense
                } else {
                    let k = (pos + 1) / 4;
                    Method::SparF(SparseParams {
                        r: d / 4,
                        k,
                        local: k / 4,
                    })
                };
                let q = bits(&structured_query(
                    u64::from(seq) * 100 + (step * 2 + method_i) as u64,
                    kv_heads * group,
                    d,
                    kv_heads,
                ));
                // Step 1 appends token s (the first decode of the step).
                let (k, v) = &kv[i];
                let row = |x: &[u16]| -> Vec<u16> {
                    x.chunks_exact((s + 1) * d)
                        .flat_map(|h| h[s * d..(s + 1) * d].iter().copied())
                        .collect()
                };
                let new = (step == 1 && method_i == 0).then(|| (row(k), row(v)));
                let t = csd.submit_decode(
                    seq,
                    0,
                    pos as u32,
                    &q,
                    new.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())),
                    method,
                )?;
                tickets.push(t);
                names.push(format!(
                    "seq {seq} step {step} {}",
                    if method_i == 0 { "dense" } else { "sparf" }
                ));
            }
            for (o, name) in csd.fetch_many(tickets)?.into_iter().zip(names) {
                out.push(VectorResult {
                    name,
                    raw: o.raw,
                    report: o.report,
                });
            }
        }
    }
    for &(seq, _, _) in &seqs {
        csd.close(seq)?;
    }
    Ok(out)
}

/// The PAGES vectors: a sequence placed by similarity (2 KV heads × 3
/// query heads, d = 64, 700 prompt tokens, 4 sinks pinned, the last page of
/// the prompt in time order, a 2-bit key sketch), decoded with the bound
/// score, then the mean score and the sketch score with fill (a quarter of
/// the pages), the second step appending its token; then a second such
/// sequence whose sketch shortlist is picked half by the bound, decoded
/// with the sketch score. Same bits on every device that runs the same
/// firmware.
pub fn run_pages<T: Transport>(csd: &mut Csd<T>) -> Result<Vec<VectorResult>, CsdError> {
    use attention::shape::PageScore;
    let sketch = |bound| PageScore::Sketch {
        bits: 2,
        shortlist: 2,
        bound,
    };
    let mut out = pages_sequence(
        csd,
        21,
        &[
            (PageScore::Bound, false),
            (PageScore::Mean, true),
            (sketch(false), true),
        ],
    )?;
    out.extend(pages_sequence(csd, 22, &[(sketch(true), true)])?);
    Ok(out)
}

/// One sequence of [`run_pages`], opened for `scores`' sketch shortlist.
fn pages_sequence<T: Transport>(
    csd: &mut Csd<T>,
    seq: u32,
    scores: &[(attention::shape::PageScore, bool)],
) -> Result<Vec<VectorResult>, CsdError> {
    use attention::shape::{PageScore, PagesParams};
    let (kv_heads, group, d, s) = (2usize, 3usize, 64usize, 700usize);
    let shortlist_bound = scores
        .iter()
        .any(|(p, _)| matches!(p, PageScore::Sketch { bound: true, .. }));
    let placement = proto::Placement {
        similar: true,
        sink: 4,
        recent_pages: 1,
        sketch_bits: 2,
        sketch_shortlist: 2,
        shortlist_bound,
    };
    let shape = SeqShape {
        layers: 1,
        kv_heads: kv_heads as u8,
        group: group as u8,
        head_dim: d as u16,
        dim_group: 1,
        rotated: false,
        placement,
    };
    let (k, v) = structured_kv(u64::from(seq), kv_heads, s + 1, d);
    let (k, v) = (bits(&k), bits(&v));
    csd.open(seq, shape)?;
    let take = |x: &[u16], t0: usize, t1: usize| -> Vec<u16> {
        x.chunks_exact((s + 1) * d)
            .flat_map(|h| h[t0 * d..t1 * d].iter().copied())
            .collect()
    };
    csd.append(seq, 0, 0, &take(&k, 0, s), &take(&v, 0, s))?;
    let t = csd.info().caps.page_size as usize / (2 * d);
    let mut out = Vec::new();
    for step in 0..2usize {
        for (i, &(score, fill)) in scores.iter().enumerate() {
            let pos = s - 1 + step;
            let full = (pos + 1) / t;
            let method = Method::Pages(PagesParams {
                page_tokens: t,
                max_pages: (full / 4).max(2),
                local_pages: 1,
                mass_milli: 1000,
                score,
                similar: true,
                fill,
                sink: 4,
            });
            let q = bits(&structured_query(
                u64::from(seq) * 100 + (step * 3 + i) as u64,
                kv_heads * group,
                d,
                kv_heads,
            ));
            let (kn, vn) = (take(&k, s, s + 1), take(&v, s, s + 1));
            let new = (step == 1 && i == 0).then_some((kn.as_slice(), vn.as_slice()));
            let ticket = csd.submit_decode(seq, 0, pos as u32, &q, new, method)?;
            for o in csd.fetch_many(vec![ticket])? {
                out.push(VectorResult {
                    name: format!("pages seq {seq} step {step} {score:?} fill {fill}"),
                    raw: o.raw,
                    report: o.report,
                });
            }
        }
    }
    csd.close(seq)?;
    Ok(out)
}

/// The first difference between two runs, if any.
pub fn first_difference(a: &[VectorResult], b: &[VectorResult]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{} results vs {}", a.len(), b.len()));
    }
    a.iter().zip(b).find_map(|(x, y)| {
        if x.name != y.name {
            Some(format!("{} vs {}", x.name, y.name))
        } else if x.raw != y.raw {
            let i = x.raw.iter().zip(&y.raw).position(|(p, q)| p != q);
            Some(format!("{}: outputs differ (first at {i:?})", x.name))
        } else if x.report != y.report {
            Some(format!(
                "{}: reports differ: {:?} vs {:?}",
                x.name, x.report, y.report
            ))
        } else {
            None
        }
    })
}

/// The decode workload every transport runs the same way: `seqs`
/// sequences of SmolLM2's attention shape on 2 layers (9 query / 3 KV
/// heads, d = 64), a `prompt`-token prefill, then decode steps of all
/// sequences together, each appending its token's KV; SparF steps use
/// r = d/8, k = S/8, local = k/4. Inputs are seeded: two devices that run
/// the same firmware return the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeWorkload {
    /// Sequences decoded together.
    pub seqs: u32,
    /// Prompt tokens per sequence.
    pub prompt: usize,
    /// The attention shape.
    pub shape: crate::backend::ModelShape,
}

fn normal(seed: u64, n: usize) -> Vec<f32> {
    let mut r = attention::testdata::SplitMix64::new(seed);
    (0..n).map(|_| r.normal()).collect()
}

impl DecodeWorkload {
    /// SmolLM2-135M's attention shape on 2 layers.
    pub fn new(seqs: u32, prompt: usize) -> Self {
        Self {
            seqs,
            prompt,
            shape: crate::backend::ModelShape {
                layers: 2,
                q_heads: 9,
                kv_heads: 3,
                head_dim: 64,
            },
        }
    }

    /// Opens every sequence and appends its prompt's KV.
    pub fn prefill(
        &self,
        b: &mut dyn crate::backend::AttentionBackend,
    ) -> Result<(), crate::backend::BackendError> {
        let sh = self.shape;
        for seq in 0..self.seqs {
            b.open(seq, sh)?;
            for layer in 0..sh.layers {
                let n = sh.kv_heads * self.prompt * sh.head_dim;
                let seed = u64::from(seq) * 100 + layer as u64;
                b.append(seq, layer, &normal(seed, n), &normal(seed + 50, n))?;
            }
        }
        Ok(())
    }

    /// Decode step `step` (every layer, every sequence); its outputs.
    pub fn step(
        &self,
        b: &mut dyn crate::backend::AttentionBackend,
        step: usize,
        sparf: bool,
    ) -> Result<Vec<f32>, crate::backend::BackendError> {
        use crate::backend::DecodeStep;
        let sh = self.shape;
        let s = self.prompt + step + 1;
        let method = if sparf {
            let k = (s / 8).max(1);
            Method::SparF(SparseParams {
                r: sh.head_dim / 8,
                k,
                local: k / 4,
            })
        } else {
            Method::Dense
        };
        let mut out = Vec::new();
        for layer in 0..sh.layers {
            let inputs: Vec<_> = (0..self.seqs)
                .map(|seq| {
                    let seed = 10_000 + step as u64 * 1000 + u64::from(seq) * 10 + layer as u64;
                    (
                        normal(seed, sh.q_heads * sh.head_dim),
                        normal(seed + 1, sh.kv_heads * sh.head_dim),
                        normal(seed + 2, sh.kv_heads * sh.head_dim),
                    )
                })
                .collect();
            let batch: Vec<DecodeStep<'_>> = inputs
                .iter()
                .enumerate()
                .map(|(seq, (q, k, v))| DecodeStep {
                    seq: seq as u32,
                    layer,
                    q,
                    kv_new: Some((k, v)),
                    method,
                })
                .collect();
            for o in b.decode(&batch)? {
                out.extend_from_slice(&o);
            }
        }
        Ok(out)
    }

    /// Closes every sequence.
    pub fn close(
        &self,
        b: &mut dyn crate::backend::AttentionBackend,
    ) -> Result<(), crate::backend::BackendError> {
        (0..self.seqs).try_for_each(|seq| b.close(seq))
    }
}

/// [`DecodeWorkload`] on `array`: prefill, `steps` steps alternating
/// dense and SparF, close; every output in order.
pub fn decode_loop<T: Transport>(
    array: crate::array::CsdArray<T>,
    seqs: u32,
    prompt: usize,
    steps: usize,
) -> Result<Vec<f32>, crate::backend::BackendError> {
    let w = DecodeWorkload::new(seqs, prompt);
    let mut b = crate::backend::InStorage::new(array, 1);
    w.prefill(&mut b)?;
    let mut out = Vec::new();
    for step in 0..steps {
        out.extend(w.step(&mut b, step, step % 2 == 1)?);
    }
    w.close(&mut b)?;
    Ok(out)
}
