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
