//! The systems compared, on the host side: where the KV cache lives, what
//! each decode step moves over which link, and how the moves overlap GPU
//! compute. The CSD's own time comes from [`super::csd`], measured.
//!
//! Per decode step of batch b at context s (every formula below is the
//! model, not a measurement):
//!
//! - GPU, non-attention work: `max(2·P·b / (F·e), W / B_gpu)` (P
//!   parameters, F fp16 rate, e efficiency, W weight bytes, B_gpu memory
//!   bandwidth): a small batch is bound by reading the weights.
//! - **Ideal host SSD offload**: all KV of the step comes from the SSD
//!   through host memory to the GPU at `min(SSD read, PCIe Gen4 x4, PCIe
//!   Gen4 x16)`, the new token's KV goes back at the SSD's write rate;
//!   load, compute and store overlap perfectly, so the step is the largest
//!   of the three: the SSD's datasheet rate, with nothing in the way.
//!   Batch is capped at 64: the paper reports FlexGen out of GPU memory at
//!   128 (taken from the paper, not modelled); the cap applies to every
//!   SSD-offload line.
//! - **Ideal host SSD offload + SparQ** at compression c: SparQ reads
//!   r = c·d dims of K for every token and then k = c·s/2 whole K and V
//!   rows; on the SSD's token-major layout the r dims of a token cost its
//!   whole K row, so a step reads `s·d + 2·k·d` values per head instead of
//!   `2·s·d`.
//! - **FlexGen as published** and its placement options: [`super::flexgen`]
//!   (its memory-mapped files, copy threads and per-layer sync).
//! - **DeepSpeed** (ZeRO-inference style): KV in host memory, fetched over
//!   PCIe Gen4 x16 layer by layer, overlapped with compute. When the
//!   batch's KV at the end of generation exceeds the host memory left for
//!   it, the excess is read through swap at the swap rate: the cliff.
//! - **InstInfer**: attention runs in the CSDs (KV heads split evenly);
//!   the GPU sends q and the new KV and gets the outputs over the CSDs'
//!   PCIe Gen3 x4 links (peer to peer). The GPU and the CSDs work on two
//!   sub-batches in turn (InstInfer's pipeline), so the shorter side hides
//!   behind the longer one but for half of it: `max(g, c) + min(g, c)/2`.
//!
//! Each system's **limit** ([`limit_throughput`]): the same job if its
//! busiest link or the GPU were its only cost. Host systems: the KV bytes
//! over their slowest link (SSD, measured disk → host, swap, PCIe x16) or
//! the GPU's work, whichever is longer. InstInfer: each CSD's decode at the
//! bound of its busiest resource ([`super::bound`]), the rest as modelled.
//! The prefill counts the same in both (it is already the longer of its
//! compute and its store link).
//!
//! Prefill: GPU compute `2·P·b·prompt / (F·e)`; the prompt's KV goes to the
//! KV store (SSD at its write rate, host memory over PCIe, or the CSDs'
//! measured append time), overlapped layer by layer with compute.
//!
//! Throughput = b · output tokens / (prefill + Σ decode steps), the steps
//! taken at 16 context lengths across the output and averaged.

use super::csd::{CsdPoint, CsdProfile};
use super::flexgen::{self, FlexGen};
use super::hw::{Hardware, ModelShape};

/// The largest batch of the SSD-offload lines (the paper: FlexGen out of
/// GPU memory at 128).
pub const FLEXGEN_MAX_BATCH: usize = 64;
/// Sub-batches InstInfer's pipeline alternates between GPU and CSDs.
pub const SUB_BATCHES: f64 = 2.0;

/// A system of the comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum System {
    /// KV in host memory (DeepSpeed-style).
    DeepSpeed,
    /// KV on one SSD at its datasheet rate, perfect overlap.
    IdealSsd,
    /// The ideal host SSD offload with SparQ at this compression.
    IdealSsdSparq(f64),
    /// FlexGen as published, or one of its options.
    FlexGen(FlexGen),
    /// KV and attention in `csds` CSDs; SparF at a compression or dense.
    InstInfer {
        /// `None` dense.
        compression: Option<f64>,
        /// CSDs sharing the heads.
        csds: usize,
    },
}

impl System {
    /// KV offloaded to an SSD through the host (capped at
    /// [`FLEXGEN_MAX_BATCH`]).
    pub fn offloads_to_ssd(&self) -> bool {
        matches!(
            self,
            Self::IdealSsd | Self::IdealSsdSparq(_) | Self::FlexGen(_)
        )
    }

    /// A short name for tables and plots.
    pub fn name(&self) -> String {
        match self {
            Self::DeepSpeed => "DeepSpeed".into(),
            Self::IdealSsd => "ideal host SSD offload".into(),
            Self::IdealSsdSparq(c) => {
                format!("ideal host SSD offload + SparQ 1/{}", (1.0 / c).round())
            }
            Self::FlexGen(f) => f.name(),
            Self::InstInfer { compression, csds } => {
                let n = if *csds > 1 {
                    format!("-{csds}")
                } else {
                    String::new()
                };
                match compression {
                    None => format!("InstI{n}"),
                    Some(c) => format!("InstI{n}-SparF 1/{}", (1.0 / c).round()),
                }
            }
        }
    }
}

/// The job: batch, prompt and output tokens per sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Sequences decoded together.
    pub batch: usize,
    /// Prompt tokens.
    pub prompt: usize,
    /// Generated tokens.
    pub output: usize,
}

/// One decode step, split.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTime {
    /// GPU compute (s).
    pub compute_s: f64,
    /// KV access: moving or reading the KV the step needs (s).
    pub kv_s: f64,
    /// The step, with overlap (s).
    pub total_s: f64,
}

/// A whole job.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JobTime {
    /// Tokens generated per second (0 when infeasible).
    pub tokens_per_s: f64,
    /// Prefill (s).
    pub prefill_s: f64,
    /// All decode steps (s).
    pub decode_s: f64,
    /// KV access summed over the decode steps (s).
    pub kv_s: f64,
    /// GPU compute summed over the decode steps (s).
    pub compute_s: f64,
    /// The system cannot run this batch (FlexGen's GPU memory limit).
    pub infeasible: bool,
}

impl JobTime {
    /// KV access's share of KV access + compute in the decode.
    pub fn kv_share(&self) -> f64 {
        self.kv_s / (self.kv_s + self.compute_s).max(f64::MIN_POSITIVE)
    }
}

fn gpu_step(hw: &Hardware, m: &ModelShape, b: usize) -> f64 {
    let flops = 2.0 * m.params * b as f64 / (hw.gpu_flops.value * hw.gpu_efficiency.value);
    flops.max(m.weight_bytes() / hw.gpu_mem_bw.value)
}

/// How a step is costed: as modelled, or at the system's own limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cost {
    Modelled,
    Limit,
}

/// One decode step of `sys` at batch `b` and context `s`; `None` if the
/// CSD profile lacks the point.
pub fn step(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    b: usize,
    s: usize,
    w: &Workload,
) -> Option<StepTime> {
    step_costed(sys, hw, m, csd, b, s, w, Cost::Modelled)
}

/// A CSD's decode of one sequence's layer at its busiest-resource bound.
fn bound_s_per_seq(p: &CsdPoint) -> f64 {
    p.bound().ns as f64 * 1e-9 / p.seqs.max(1) as f64
}

#[allow(clippy::too_many_arguments)]
fn step_costed(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    b: usize,
    s: usize,
    w: &Workload,
    cost: Cost,
) -> Option<StepTime> {
    let g = gpu_step(hw, m, b);
    let kv_all = b as f64 * s as f64 * m.kv_bytes_per_token();
    let new_kv = b as f64 * m.kv_bytes_per_token();
    let ssd_path = hw
        .ssd_read
        .value
        .min(hw.pcie_ssd.value)
        .min(hw.pcie_gpu.value);
    Some(match sys {
        System::IdealSsd | System::IdealSsdSparq(_) => {
            let c = match sys {
                System::IdealSsdSparq(c) => Some(c),
                _ => None,
            };
            let load = kv_all * flexgen::sparq_bytes_factor(c, s) / ssd_path;
            let store = new_kv / hw.ssd_write.value;
            // Perfect overlap: the ideal line is its own limit.
            StepTime {
                compute_s: g,
                kv_s: load + store,
                total_s: g.max(load).max(store),
            }
        }
        System::FlexGen(fg) => {
            let st = flexgen::step(&fg, hw, m, g, b, s, w.prompt + w.output - 1);
            let layers = m.layers as f64;
            let io = st.pin_s + st.host_link_s.max(st.disk_s).max(st.store_s);
            StepTime {
                compute_s: layers * st.compute_s,
                kv_s: layers * io,
                total_s: match cost {
                    Cost::Modelled => layers * st.layer_s,
                    Cost::Limit => flexgen::limit_step(&st, hw, m),
                },
            }
        }
        System::DeepSpeed => {
            let end_kv = b as f64 * (w.prompt + w.output) as f64 * m.kv_bytes_per_token();
            let spilled = (end_kv - hw.host_kv_capacity.value).max(0.0) / end_kv;
            let (link, swap) = (
                kv_all / hw.pcie_gpu.value,
                kv_all * spilled / hw.swap_bw.value,
            );
            let kv = link * (1.0 - spilled) + swap;
            StepTime {
                compute_s: g,
                kv_s: kv,
                total_s: match cost {
                    Cost::Modelled => g.max(kv),
                    // Every byte crosses PCIe; the spilled ones also swap.
                    Cost::Limit => g.max(link).max(swap),
                },
            }
        }
        System::InstInfer { compression, csds } => {
            let heads = m.heads.div_ceil(csds.max(1));
            let per_seq_layer = match cost {
                Cost::Modelled => csd.at(heads, compression, s, |p| p.decode_s_per_seq())?,
                Cost::Limit => csd.at(heads, compression, s, bound_s_per_seq)?,
            };
            let attn = per_seq_layer * (m.layers * b) as f64;
            // q (fp16) and the new K, V (fp16) in, outputs (Q14 i32) out,
            // over each CSD's own link.
            let per_head = (m.head_dim as f64) * (2.0 + 4.0 + 4.0);
            let link = (b * m.layers * heads) as f64 * per_head / hw.pcie_csd.value;
            let c = attn + link;
            StepTime {
                compute_s: g,
                kv_s: c,
                total_s: g.max(c) + g.min(c) / SUB_BATCHES,
            }
        }
    })
}

/// What sets `sys`'s limit at batch `b` and context `s`: the link or unit
/// whose time is the longest when each works alone (InstInfer: its CSDs,
/// see [`super::bound`]).
pub fn limit_set_by(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    b: usize,
    s: usize,
    w: &Workload,
) -> &'static str {
    let g = gpu_step(hw, m, b);
    let kv_all = b as f64 * s as f64 * m.kv_bytes_per_token();
    let longest = |c: &[(&'static str, f64)]| {
        c.iter()
            .fold(("", 0.0), |a, &x| if x.1 > a.1 { x } else { a })
            .0
    };
    match sys {
        System::IdealSsd | System::IdealSsdSparq(_) => {
            let c = match sys {
                System::IdealSsdSparq(c) => Some(c),
                _ => None,
            };
            let path = hw.ssd_read.value.min(hw.pcie_ssd.value);
            let load = kv_all * flexgen::sparq_bytes_factor(c, s);
            longest(&[
                ("GPU", g),
                ("SSD read", load / path),
                ("PCIe x16", load / hw.pcie_gpu.value),
                (
                    "SSD write",
                    b as f64 * m.kv_bytes_per_token() / hw.ssd_write.value,
                ),
            ])
        }
        System::FlexGen(fg) => {
            let st = flexgen::step(&fg, hw, m, g, b, s, w.prompt + w.output - 1);
            let layers = m.layers as f64;
            let disk = st.disk_s - st.disk_bytes_per_layer / hw.pcie_gpu.value;
            let pcie = (st.disk_bytes_per_layer + st.host_bytes_per_layer) / hw.pcie_gpu.value;
            longest(&[
                ("GPU", layers * st.compute_s),
                ("disk -> host", layers * disk),
                ("PCIe x16", layers * pcie),
            ])
        }
        System::DeepSpeed => {
            let end_kv = b as f64 * (w.prompt + w.output) as f64 * m.kv_bytes_per_token();
            let spilled = (end_kv - hw.host_kv_capacity.value).max(0.0) / end_kv;
            longest(&[
                ("GPU", g),
                ("PCIe x16", kv_all / hw.pcie_gpu.value),
                ("swap", kv_all * spilled / hw.swap_bw.value),
            ])
        }
        System::InstInfer { .. } => "CSD busiest resource",
    }
}

fn prefill(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    w: &Workload,
) -> Option<f64> {
    let b = w.batch as f64;
    let compute =
        2.0 * m.params * b * w.prompt as f64 / (hw.gpu_flops.value * hw.gpu_efficiency.value);
    let kv = b * w.prompt as f64 * m.kv_bytes_per_token();
    let store = match sys {
        System::IdealSsd | System::IdealSsdSparq(_) => kv / hw.ssd_write.value,
        System::FlexGen(fg) => {
            flexgen::prefill_store(&fg, hw, m, w.batch, w.prompt, w.prompt + w.output - 1)
        }
        System::DeepSpeed => kv / hw.pcie_gpu.value,
        System::InstInfer { compression, csds } => {
            let heads = m.heads.div_ceil(csds.max(1));
            let per = csd.at(heads, compression, w.prompt, |p| p.append_s_per_seq())?;
            per * (m.layers * w.batch) as f64
        }
    };
    Some(compute.max(store))
}

/// InstInfer's data movement between GPU and CSDs, peer to peer (what
/// the paper's system does) against a bounce through host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DataPaths {
    /// Prefill with the KV sent peer to peer (s).
    pub prefill_p2p_s: f64,
    /// Prefill with the KV copied GPU → host, then host → CSDs (s).
    pub prefill_bounce_s: f64,
    /// Host DRAM bytes of the prefill's KV, peer to peer (0) and bounced
    /// (written by the copy, read by the CSDs: twice the KV).
    pub prefill_dram_bounce_bytes: f64,
    /// Decode step at the prompt length, peer to peer (s).
    pub step_p2p_s: f64,
    /// The same with q, the new KV and the outputs bounced (s).
    pub step_bounce_s: f64,
}

/// [`DataPaths`] of InstInfer on `w`. The bounce model: the prefill's KV is
/// copied layer by layer on the GPU link (one copy per layer, overlapped
/// with the CSDs storing the previous layer: the longer of the two, plus
/// one layer's copy to fill the pipeline); a decode step copies q and the
/// new KV to host memory and the outputs back, one copy each way per layer,
/// before and after the CSDs' work.
pub fn instinfer_data_paths(
    compression: Option<f64>,
    csds: usize,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    w: &Workload,
) -> Option<DataPaths> {
    let sys = System::InstInfer { compression, csds };
    let b = w.batch as f64;
    let layers = m.layers as f64;
    let compute =
        2.0 * m.params * b * w.prompt as f64 / (hw.gpu_flops.value * hw.gpu_efficiency.value);
    let kv = b * w.prompt as f64 * m.kv_bytes_per_token();
    let heads = m.heads.div_ceil(csds.max(1));
    let store = csd.at(heads, compression, w.prompt, |p| p.append_s_per_seq())?
        * (m.layers * w.batch) as f64;
    let copy = kv / hw.pcie_gpu.value + layers * hw.bounce_copy_latency.value;
    let prefill_p2p_s = compute.max(store);
    let prefill_bounce_s = compute.max(store.max(copy) + copy / layers);
    let p2p = step(sys, hw, m, csd, w.batch, w.prompt, w)?;
    // q (fp16), new K and V (fp16) in, outputs (f32) out, for every head.
    let per_step = b * layers * m.heads as f64 * m.head_dim as f64 * (2.0 + 4.0 + 4.0);
    let extra = per_step / hw.pcie_gpu.value + 2.0 * layers * hw.bounce_copy_latency.value;
    let g = p2p.compute_s;
    let c = p2p.kv_s + extra;
    Some(DataPaths {
        prefill_p2p_s,
        prefill_bounce_s,
        prefill_dram_bounce_bytes: 2.0 * kv,
        step_p2p_s: p2p.total_s,
        step_bounce_s: g.max(c) + g.min(c) / SUB_BATCHES,
    })
}

/// Context lengths the decode is sampled at.
const STEP_SAMPLES: usize = 16;

/// The whole job of `sys` on `w`; `None` if the CSD profile lacks a point.
pub fn throughput(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    w: &Workload,
) -> Option<JobTime> {
    job(sys, hw, m, csd, w, Cost::Modelled)
}

/// The whole job of `sys` on `w` at its own limit (see the module doc);
/// `None` if the CSD profile lacks a point.
pub fn limit_throughput(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    w: &Workload,
) -> Option<JobTime> {
    job(sys, hw, m, csd, w, Cost::Limit)
}

fn job(
    sys: System,
    hw: &Hardware,
    m: &ModelShape,
    csd: &CsdProfile,
    w: &Workload,
    cost: Cost,
) -> Option<JobTime> {
    if sys.offloads_to_ssd() && w.batch > FLEXGEN_MAX_BATCH {
        return Some(JobTime {
            infeasible: true,
            ..JobTime::default()
        });
    }
    let pre = prefill(sys, hw, m, csd, w)?;
    let (mut total, mut kv, mut compute) = (0.0, 0.0, 0.0);
    for i in 0..STEP_SAMPLES {
        let s = w.prompt + (w.output * (2 * i + 1)) / (2 * STEP_SAMPLES);
        let st = step_costed(sys, hw, m, csd, w.batch, s, w, cost)?;
        total += st.total_s;
        kv += st.kv_s;
        compute += st.compute_s;
    }
    let scale = w.output as f64 / STEP_SAMPLES as f64;
    let decode = total * scale;
    Some(JobTime {
        tokens_per_s: (w.batch * w.output) as f64 / (pre + decode),
        prefill_s: pre,
        decode_s: decode,
        kv_s: kv * scale,
        compute_s: compute * scale,
        infeasible: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::csd::CsdPoint;
    use crate::cost::flexgen::FlexGen;

    fn profile(decode_ns: u64) -> CsdProfile {
        let pt = |s| CsdPoint {
            s,
            append_ns: 1_000_000,
            ..CsdPoint::idle(decode_ns * s as u64 / 1024)
        };
        CsdProfile {
            points: vec![pt(1024), pt(2048)],
        }
    }

    const W: Workload = Workload {
        batch: 64,
        prompt: 1024,
        output: 1024,
    };

    #[test]
    fn the_ideal_offload_is_bound_by_the_ssd_and_capped_at_64() {
        let (hw, m) = (Hardware::default(), ModelShape::OPT_13B);
        let p = profile(1_000_000);
        let st = step(System::IdealSsd, &hw, &m, &p, 64, 1536, &W).unwrap();
        // 64 × 1536 × 800 KiB at 7 GB/s ≈ 11.5 s, far above the GPU's 34 ms.
        assert!(st.kv_s > 10.0 && st.kv_s < 13.0, "{st:?}");
        // Load, compute and store overlap: the step is the load.
        assert!(
            st.total_s < st.kv_s && st.total_s > 0.99 * st.kv_s,
            "{st:?}"
        );
        let big = Workload { batch: 128, ..W };
        assert!(
            throughput(System::IdealSsd, &hw, &m, &p, &big)
                .unwrap()
                .infeasible
        );
    }

    #[test]
    fn sparq_reads_less_than_dense_but_more_than_its_compression() {
        let (hw, m) = (Hardware::default(), ModelShape::OPT_13B);
        let p = profile(1_000_000);
        let dense = step(System::IdealSsd, &hw, &m, &p, 64, 2048, &W).unwrap();
        let sparq = step(System::IdealSsdSparq(0.125), &hw, &m, &p, 64, 2048, &W).unwrap();
        let ratio = sparq.kv_s / dense.kv_s;
        assert!(ratio > 0.5 && ratio < 0.6, "{ratio}");
    }

    /// FlexGen at the SSD's own rate.
    fn flexgen_at_the_ssd_rate(hw: &Hardware) -> Hardware {
        Hardware {
            flexgen_disk_measured: hw.ssd_read,
            ..*hw
        }
    }

    #[test]
    fn flexgen_as_published_is_slower_than_the_ideal_line_at_the_same_rate() {
        let hw = flexgen_at_the_ssd_rate(&Hardware::default());
        let (m, p) = (ModelShape::OPT_13B, profile(1_000_000));
        let fg = System::FlexGen(FlexGen::PUBLISHED);
        for b in [4, 16, 64] {
            let ideal = step(System::IdealSsd, &hw, &m, &p, b, 1536, &W).unwrap();
            let published = step(fg, &hw, &m, &p, b, 1536, &W).unwrap();
            // Disk → pinned → GPU in series: above the SSD-only time by the
            // PCIe x16 share (7 / 25).
            let r = published.total_s / ideal.total_s;
            assert!(r > 1.25 && r < 1.35, "batch {b}: {r}");
        }
        let w = Workload { batch: 64, ..W };
        let (ti, tp) = (
            throughput(System::IdealSsd, &hw, &m, &p, &w).unwrap(),
            throughput(fg, &hw, &m, &p, &w).unwrap(),
        );
        assert!(tp.tokens_per_s < ti.tokens_per_s);
    }

    #[test]
    fn flexgen_step_grows_with_batch_as_its_io_does() {
        let (hw, m, p) = (Hardware::default(), ModelShape::OPT_13B, profile(1_000_000));
        let fg = System::FlexGen(FlexGen::PUBLISHED);
        let st = |b| step(fg, &hw, &m, &p, b, 1536, &W).unwrap();
        for (a, b) in [(8, 16), (16, 32), (32, 64)] {
            let (sa, sb) = (st(a), st(b));
            assert!((sb.kv_s / sa.kv_s - 2.0).abs() < 0.01, "{sa:?} {sb:?}");
            let r = sb.total_s / sa.total_s;
            assert!(r > 1.95 && r < 2.0, "{a} → {b}: {r}");
        }
        // At the fitted 0.473 GB/s it is slower still.
        let fitted = System::FlexGen(FlexGen::PUBLISHED.fitted());
        let hw_fast = Hardware {
            flexgen_disk_measured: crate::cost::Param {
                value: 1.0e9,
                source: "test",
            },
            ..hw
        };
        let a = step(fg, &hw_fast, &m, &p, 16, 1536, &W).unwrap();
        let f = step(fitted, &hw_fast, &m, &p, 16, 1536, &W).unwrap();
        assert!(f.total_s > 2.0 * a.total_s);
    }

    #[test]
    fn each_limit_bounds_its_system() {
        let (hw, m, p) = (Hardware::default(), ModelShape::OPT_13B, profile(1_000_000));
        let w = Workload { batch: 32, ..W };
        let fg = FlexGen::PUBLISHED;
        for sys in [
            System::IdealSsd,
            System::FlexGen(fg),
            System::FlexGen(FlexGen {
                home: crate::cost::flexgen::KvHome::HostWhileFits,
                ..fg
            }),
            System::DeepSpeed,
            System::InstInfer {
                compression: None,
                csds: 1,
            },
        ] {
            let t = throughput(sys, &hw, &m, &p, &w).unwrap().tokens_per_s;
            let l = limit_throughput(sys, &hw, &m, &p, &w).unwrap().tokens_per_s;
            assert!(l >= t, "{}: {t} over its limit {l}", sys.name());
        }
        // The ideal line is its own limit; FlexGen's series copies are not.
        let ratio = |sys| {
            throughput(sys, &hw, &m, &p, &w).unwrap().tokens_per_s
                / limit_throughput(sys, &hw, &m, &p, &w).unwrap().tokens_per_s
        };
        assert!((ratio(System::IdealSsd) - 1.0).abs() < 1e-12);
        assert!(ratio(System::FlexGen(fg)) < 0.99);
    }

    #[test]
    fn instinfer_limit_is_each_csd_at_its_busiest_resource() {
        let (hw, m) = (Hardware::default(), ModelShape::OPT_13B);
        let mut p = profile(4_000_000);
        // The arrays would take a quarter of the measured decode.
        for pt in &mut p.points {
            pt.flash_busy_ns = pt.decode_ns / 4 * pt.dies as u64;
        }
        let sys = System::InstInfer {
            compression: None,
            csds: 1,
        };
        let t = throughput(sys, &hw, &m, &p, &W).unwrap();
        let l = limit_throughput(sys, &hw, &m, &p, &W).unwrap();
        let r = t.decode_s / l.decode_s;
        assert!(r > 3.0 && r < 4.0, "{r}");
    }

    #[test]
    fn deepspeed_falls_off_a_cliff_when_kv_spills() {
        let (hw, m) = (Hardware::default(), ModelShape::OPT_13B);
        let p = profile(1_000_000);
        let t = |b| {
            throughput(System::DeepSpeed, &hw, &m, &p, &Workload { batch: b, ..W })
                .unwrap()
                .tokens_per_s
        };
        assert!(t(16) > 5.0 * t(32), "{} vs {}", t(16), t(32));
    }

    #[test]
    fn a_bounce_never_beats_peer_to_peer() {
        let (hw, m) = (Hardware::default(), ModelShape::OPT_13B);
        let d = instinfer_data_paths(None, 1, &hw, &m, &profile(2_000_000), &W).unwrap();
        assert!(d.prefill_bounce_s >= d.prefill_p2p_s);
        assert!(d.step_bounce_s > d.step_p2p_s);
        assert_eq!(
            d.prefill_dram_bounce_bytes,
            2.0 * 64.0 * 1024.0 * m.kv_bytes_per_token()
        );
    }

    #[test]
    fn instinfer_follows_the_measured_csd_time() {
        let (hw, m) = (Hardware::default(), ModelShape::OPT_13B);
        let sys = System::InstInfer {
            compression: None,
            csds: 1,
        };
        let slow = throughput(sys, &hw, &m, &profile(4_000_000), &W).unwrap();
        let fast = throughput(sys, &hw, &m, &profile(1_000_000), &W).unwrap();
        assert!(fast.tokens_per_s > 2.0 * slow.tokens_per_s);
        assert!(step(sys, &hw, &m, &CsdProfile::default(), 64, 1024, &W).is_none());
    }
}
