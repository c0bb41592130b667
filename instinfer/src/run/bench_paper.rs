//! `instinfer bench paper`: InstInfer's evaluation (OPT-13B, 1024 + 1024
//! tokens, one A6000) in the cost model of [`crate::cost`], with the CSD
//! side simulated. Each figure writes a CSV and a PNG into the output
//! folder and prints the paper's number next to ours with the ratio.
//!
//! Wall time here is only the time the simulation takes; every time in the
//! figures is modelled (host side) or virtual (the simulated CSD).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod headline;
mod pages;

use headline::headline;
use host_driver::policy::Selection;

use super::flexgen_probe::{ProbeShape, probe};
use super::plot::{Series, lines};
use super::{RunError, input};
use crate::cost::csd::{CsdSpec, Sample, profile_csd};
use crate::cost::systems::{JobTime, System, Workload, throughput};
use crate::cost::{
    CsdProfile, FlexGen, Hardware, KvHome, KvSource, ModelShape, Param, instinfer_data_paths,
};

/// Which figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Throughput vs batch size, every system.
    Throughput,
    /// Decode time split into KV access and compute, batch 64.
    Breakdown,
    /// One, two and twenty CSDs.
    Csds,
    /// SparF compression 1/2 … 1/16.
    Compression,
    /// Flash channel utilization during decode attention.
    Channels,
    /// Peer-to-peer GPU ↔ CSD transfers against a bounce through host memory.
    P2p,
    /// Sequences in flight on one CSD: time per sequence at 1, 2, 4, 8.
    Seqs,
    /// The flash-aware page selection beside SparF at 1/4, 1/8, 1/16.
    Pages,
}

impl Figure {
    /// Every figure.
    pub const ALL: [Figure; 8] = [
        Figure::Throughput,
        Figure::Breakdown,
        Figure::Csds,
        Figure::Compression,
        Figure::Channels,
        Figure::P2p,
        Figure::Seqs,
        Figure::Pages,
    ];

    /// Its name (file stem and CLI value).
    pub fn name(self) -> &'static str {
        match self {
            Self::Throughput => "throughput",
            Self::Breakdown => "breakdown",
            Self::Csds => "csds",
            Self::Compression => "compression",
            Self::Channels => "channels",
            Self::P2p => "p2p",
            Self::Seqs => "seqs",
            Self::Pages => "pages",
        }
    }

    /// By name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == s)
    }

    /// Every name, comma-separated (for help and errors).
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

/// Parameters of `bench paper`.
#[derive(Clone, Debug)]
pub struct PaperParams {
    /// Figures to make.
    pub figures: Vec<Figure>,
    /// Output folder.
    pub out: PathBuf,
    /// Sequences decoded together per simulated CSD point.
    pub seqs: usize,
    /// Flash page sizes of the simulated CSDs: every figure runs on the
    /// first; the channels figure and the point table also on the others.
    pub page_sizes: Vec<u32>,
    /// Context lengths simulated (sorted); the decode interpolates.
    pub contexts: Vec<usize>,
    /// Where the simulated keys, values and queries come from.
    pub source: KvSource,
    /// Bytes the FlexGen disk probe reads (0: no probe, FlexGen's fitted
    /// rate stands in for the measured one).
    pub probe_bytes: u64,
}

impl Default for PaperParams {
    fn default() -> Self {
        Self {
            figures: Figure::ALL.to_vec(),
            out: PathBuf::from("target/bench-paper"),
            seqs: 2,
            page_sizes: vec![4096],
            contexts: vec![1024, 1536, 2048],
            source: KvSource::Synthetic,
            probe_bytes: 256 << 20,
        }
    }
}

/// The paper's workload at batch `b`.
const fn workload(batch: usize) -> Workload {
    Workload {
        batch,
        prompt: 1024,
        output: 1024,
    }
}

const BATCHES: [usize; 7] = [4, 8, 16, 32, 64, 128, 256];
const SPARSE: f64 = 0.125;
const COMPRESSIONS: [f64; 4] = [0.5, 0.25, 0.125, 0.0625];
const CSD_COUNTS: [usize; 3] = [1, 2, 20];

/// FlexGen as published (the system the paper compared with), at the disk
/// rate measured in this run.
const FLEXGEN: System = System::FlexGen(FlexGen::PUBLISHED);
/// The same with SparQ at [`SPARSE`] (the paper's FlexGen-SparQ).
const FLEXGEN_SPARQ: System = System::FlexGen(FlexGen {
    sparq: Some(SPARSE),
    ..FlexGen::PUBLISHED
});
/// FlexGen with its KV in host memory while it fits.
const FLEXGEN_HOST: System = System::FlexGen(FlexGen {
    home: KvHome::HostWhileFits,
    ..FlexGen::PUBLISHED
});
/// FlexGen with its 4-bit KV.
const FLEXGEN_4BIT: System = System::FlexGen(FlexGen {
    four_bit: true,
    ..FlexGen::PUBLISHED
});
/// FlexGen as published at its own fitted disk rate.
const FLEXGEN_FIT: System = System::FlexGen(FlexGen::PUBLISHED.fitted());
/// The ideal host SSD offload with SparQ.
const IDEAL_SPARQ: System = System::IdealSsdSparq(SPARSE);

fn out_err(path: &Path, e: impl std::fmt::Display) -> RunError {
    RunError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn write(path: &Path, text: &str) -> Result<(), RunError> {
    std::fs::write(path, text).map_err(|e| out_err(path, e))
}

/// Adds `spec` to `v` unless it is there.
fn push_spec(v: &mut Vec<CsdSpec>, spec: CsdSpec) {
    if !v.contains(&spec) {
        v.push(spec);
    }
}

/// The CSD points the figures need.
fn specs(p: &PaperParams, m: &ModelShape) -> Vec<CsdSpec> {
    let mut v = Vec::new();
    let mut add = |heads: usize, compression: Option<f64>, contexts: &[usize]| {
        for &s in contexts {
            push_spec(&mut v, CsdSpec::new(heads, s, compression));
        }
    };
    let ends = [p.contexts[0], p.contexts[p.contexts.len() - 1]];
    for f in &p.figures {
        match f {
            Figure::Throughput | Figure::Breakdown | Figure::Channels => {
                add(m.heads, None, &p.contexts);
                add(m.heads, Some(SPARSE), &p.contexts);
                if *f == Figure::Breakdown {
                    add(m.heads.div_ceil(2), None, &ends);
                    add(m.heads.div_ceil(2), Some(SPARSE), &ends);
                }
            }
            Figure::Csds => {
                for n in CSD_COUNTS {
                    add(m.heads.div_ceil(n), None, &ends);
                    add(m.heads.div_ceil(n), Some(SPARSE), &ends);
                }
            }
            Figure::Compression => {
                add(m.heads, None, &ends);
                for c in COMPRESSIONS {
                    add(m.heads, Some(c), &ends);
                }
            }
            Figure::P2p => {
                add(m.heads, None, &ends);
                add(m.heads, Some(SPARSE), &ends);
                add(m.heads.div_ceil(2), Some(SPARSE), &ends);
            }
            // Its own samples (`bench_seqs`).
            Figure::Seqs => {}
            // Its own specs, beside dense and SparF's (below).
            Figure::Pages => {}
        }
    }
    if p.figures.contains(&Figure::Pages) {
        for spec in pages::specs(p, m) {
            push_spec(&mut v, spec);
        }
    }
    v
}

/// One simulated board and its points.
#[derive(Clone, Debug)]
pub struct Board {
    /// How its points sample the paper's batch.
    pub sample: Sample,
    /// Its points.
    pub profile: CsdProfile,
}

struct Ctx<'a> {
    hw: Hardware,
    m: ModelShape,
    csd: &'a CsdProfile,
    boards: &'a [Board],
    out: &'a Path,
    report: String,
}

impl Ctx<'_> {
    fn job(&self, sys: System, batch: usize) -> Result<JobTime, RunError> {
        throughput(sys, &self.hw, &self.m, self.csd, &workload(batch))
            .ok_or_else(|| input(format!("no simulated CSD point for {}", sys.name())))
    }

    fn compare(&mut self, what: &str, paper: f64, ours: f64, unit: &str) {
        let _ = writeln!(
            self.report,
            "  {what}: paper {paper:.2}{unit}, ours {ours:.2}{unit} (ours/paper {:.2})",
            ours / paper
        );
    }

    /// The same ratio against another baseline, printed under a comparison.
    fn beside(&mut self, against: System, ours: f64, unit: &str) {
        let _ = writeln!(
            self.report,
            "    beside it, against the {}: {ours:.2}{unit}",
            against.name()
        );
    }

    /// A system's best throughput over its feasible batches, and the batch.
    fn best_at(&self, sys: System) -> Result<(f64, usize), RunError> {
        let mut best = (0.0f64, 0);
        for b in BATCHES {
            let j = self.job(sys, b)?;
            if !j.infeasible && j.tokens_per_s > best.0 {
                best = (j.tokens_per_s, b);
            }
        }
        Ok(best)
    }

    /// A system's best throughput over its feasible batches.
    fn best(&self, sys: System) -> Result<f64, RunError> {
        self.best_at(sys).map(|(t, _)| t)
    }
}

fn inst(compression: Option<f64>, csds: usize) -> System {
    System::InstInfer { compression, csds }
}

fn fig_throughput(c: &mut Ctx<'_>) -> Result<(), RunError> {
    let systems = [
        System::DeepSpeed,
        System::IdealSsd,
        IDEAL_SPARQ,
        FLEXGEN,
        FLEXGEN_FIT,
        FLEXGEN_HOST,
        FLEXGEN_4BIT,
        FLEXGEN_SPARQ,
        inst(None, 1),
        inst(Some(SPARSE), 1),
    ];
    let mut csv =
        String::from("batch,system,tokens_per_s,prefill_s,decode_s,kv_share,infeasible\n");
    let mut series: Vec<Series> = Vec::new();
    for sys in systems {
        let mut pts = Vec::new();
        for b in BATCHES {
            let j = c.job(sys, b)?;
            let _ = writeln!(
                csv,
                "{b},{},{:.4},{:.3},{:.3},{:.4},{}",
                sys.name(),
                j.tokens_per_s,
                j.prefill_s,
                j.decode_s,
                j.kv_share(),
                j.infeasible
            );
            if !j.infeasible {
                pts.push((b as f64, j.tokens_per_s));
            }
        }
        // The chart has seven colours: the fitted-rate and SparQ baselines
        // are in the CSV only.
        if !matches!(sys, FLEXGEN_FIT | FLEXGEN_SPARQ | IDEAL_SPARQ) {
            series.push((sys.name(), pts));
        }
    }
    write(&c.out.join("throughput.csv"), &csv)?;
    lines(
        &c.out.join("throughput.png"),
        "OPT-13B, 1024+1024 tokens: throughput vs batch (modelled; CSD simulated)",
        "batch size",
        "tokens/s (log)",
        &series,
        true,
        true,
    )?;
    let inst64 = c.job(inst(None, 1), 64)?.tokens_per_s;
    let sparf256 = c.job(inst(Some(SPARSE), 1), 256)?.tokens_per_s;
    let _ = writeln!(
        c.report,
        "throughput (throughput.csv: every system; throughput.png: all but the fitted-rate and SparQ baselines); \
         the paper compared with FlexGen as published:"
    );
    for (sys, beside) in [(FLEXGEN, false), (System::IdealSsd, true)] {
        let ratio = inst64 / c.job(sys, 64)?.tokens_per_s;
        if beside {
            c.beside(sys, ratio, "x");
        } else {
            c.compare(
                &format!("InstI / {}, batch 64, dense", sys.name()),
                6.85,
                ratio,
                "x",
            );
        }
    }
    for (sys, beside) in [(FLEXGEN, false), (System::IdealSsd, true)] {
        let ratio = sparf256 / c.best(sys)?;
        if beside {
            c.beside(sys, ratio, "x");
        } else {
            c.compare(
                &format!(
                    "InstI-SparF 1/8 batch 256 / {} (its best batch)",
                    sys.name()
                ),
                11.1,
                ratio,
                "x",
            );
        }
    }
    let ds = |b| c.job(System::DeepSpeed, b).map(|j| j.tokens_per_s);
    let (ds16, ds32) = (ds(16)?, ds(32)?);
    c.compare(
        "DeepSpeed batch 16 / batch 32 (the spill)",
        32.6,
        ds16 / ds32,
        "x",
    );
    headline(c)
}

fn fig_breakdown(c: &mut Ctx<'_>) -> Result<(), RunError> {
    // The paper's shares are FlexGen's as published; the ideal lines are
    // shown beside them with no paper value.
    let systems = [
        (FLEXGEN, Some(98.9)),
        (System::IdealSsd, None),
        (inst(None, 1), Some(80.7)),
        (inst(None, 2), Some(76.4)),
        (FLEXGEN_SPARQ, Some(92.4)),
        (IDEAL_SPARQ, None),
        (inst(Some(SPARSE), 1), Some(82.3)),
        (inst(Some(SPARSE), 2), Some(74.0)),
    ];
    let mut csv = String::from("system,kv_access_s,compute_s,kv_share_pct,paper_kv_share_pct\n");
    let (mut ours, mut paper) = (Vec::new(), Vec::new());
    let _ = writeln!(
        c.report,
        "decode breakdown at batch 64 (breakdown.csv, breakdown.png):"
    );
    for (i, (sys, p)) in systems.iter().enumerate() {
        let j = c.job(*sys, 64)?;
        let share = 100.0 * j.kv_share();
        let _ = writeln!(
            csv,
            "{},{:.3},{:.3},{:.1},{}",
            sys.name(),
            j.kv_s,
            j.compute_s,
            share,
            p.map_or(String::new(), |p| p.to_string())
        );
        ours.push((i as f64, share));
        match p {
            Some(p) => {
                paper.push((i as f64, *p));
                c.compare(&format!("KV access share, {}", sys.name()), *p, share, "%");
            }
            None => {
                let _ = writeln!(
                    c.report,
                    "  KV access share, {}: ours {share:.2}% (no paper value)",
                    sys.name()
                );
            }
        }
    }
    let dense = c.job(inst(None, 1), 64)?.kv_s;
    let sparse = c.job(inst(Some(SPARSE), 1), 64)?.kv_s;
    for (what, paper, inst_kv) in [("dense", 88.1, dense), ("SparF", 94.0, sparse)] {
        let fg = c.job(FLEXGEN, 64)?.kv_s;
        c.compare(
            &format!("KV access time cut vs {}, InstI {what}", FLEXGEN.name()),
            paper,
            100.0 * (1.0 - inst_kv / fg),
            "%",
        );
        let ideal = c.job(System::IdealSsd, 64)?.kv_s;
        c.beside(System::IdealSsd, 100.0 * (1.0 - inst_kv / ideal), "%");
    }
    write(&c.out.join("breakdown.csv"), &csv)?;
    let names: Vec<String> = systems.iter().map(|(s, _)| s.name()).collect();
    lines(
        &c.out.join("breakdown.png"),
        &format!(
            "KV access share of decode, batch 64 (x: {})",
            names.join(", ")
        ),
        "system (index, as in the title)",
        "KV access share %",
        &[("ours".into(), ours), ("paper".into(), paper)],
        false,
        false,
    )
}

/// P2P vs bounce for InstInfer's prefill and decode (p2p.csv).
fn fig_p2p(c: &mut Ctx<'_>) -> Result<(), RunError> {
    let mut csv = String::from(
        "system,batch,prefill_p2p_s,prefill_bounce_s,prefill_host_dram_bounce_gb,step_p2p_ms,step_bounce_ms\n",
    );
    let _ = writeln!(
        c.report,
        "GPU <-> CSD data path, peer to peer vs bounce through host memory (p2p.csv; model, the CSD side simulated):"
    );
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (compression, csds) in [(None, 1), (Some(SPARSE), 1), (Some(SPARSE), 2)] {
        let name = inst(compression, csds).name();
        let (mut p2p_pts, mut bounce_pts) = (Vec::new(), Vec::new());
        for batch in [16usize, 64, 256] {
            let d = instinfer_data_paths(compression, csds, &c.hw, &c.m, c.csd, &workload(batch))
                .ok_or_else(|| input(format!("no simulated CSD point for {name}")))?;
            let _ = writeln!(
                csv,
                "{name},{batch},{:.3},{:.3},{:.1},{:.3},{:.3}",
                d.prefill_p2p_s,
                d.prefill_bounce_s,
                d.prefill_dram_bounce_bytes / 1e9,
                d.step_p2p_s * 1e3,
                d.step_bounce_s * 1e3
            );
            p2p_pts.push((batch as f64, d.prefill_p2p_s));
            bounce_pts.push((batch as f64, d.prefill_bounce_s));
            if batch == 64 {
                let _ = writeln!(
                    c.report,
                    "  {name}, batch 64: prefill {:.2} s P2P vs {:.2} s bounced (x{:.3}; {:.1} GB through host DRAM avoided), decode step {:.2} ms vs {:.2} ms (x{:.3})",
                    d.prefill_p2p_s,
                    d.prefill_bounce_s,
                    d.prefill_bounce_s / d.prefill_p2p_s,
                    d.prefill_dram_bounce_bytes / 1e9,
                    d.step_p2p_s * 1e3,
                    d.step_bounce_s * 1e3,
                    d.step_bounce_s / d.step_p2p_s
                );
            }
        }
        series.push((format!("{name} P2P"), p2p_pts));
        series.push((format!("{name} bounce"), bounce_pts));
    }
    write(&c.out.join("p2p.csv"), &csv)?;
    lines(
        &c.out.join("p2p.png"),
        "Prefill (1024 tokens), KV to the CSDs peer to peer vs bounced",
        "batch",
        "prefill s",
        &series,
        true,
        true,
    )
}

fn fig_csds(c: &mut Ctx<'_>) -> Result<(), RunError> {
    let mut csv = String::from("csds,method,tokens_per_s_batch256\n");
    let (mut dense_pts, mut sparse_pts) = (Vec::new(), Vec::new());
    for n in CSD_COUNTS {
        let d = c.job(inst(None, n), 256)?.tokens_per_s;
        let s = c.job(inst(Some(SPARSE), n), 256)?.tokens_per_s;
        let _ = writeln!(csv, "{n},dense,{d:.4}\n{n},sparf-1/8,{s:.4}");
        dense_pts.push((n as f64, d));
        sparse_pts.push((n as f64, s));
    }
    write(&c.out.join("csds.csv"), &csv)?;
    lines(
        &c.out.join("csds.png"),
        "InstInfer with 1, 2, 20 CSDs, batch 256",
        "CSDs",
        "tokens/s (log)",
        &[
            ("InstI dense".into(), dense_pts.clone()),
            ("InstI-SparF 1/8".into(), sparse_pts.clone()),
        ],
        true,
        true,
    )?;
    let _ = writeln!(c.report, "CSDs (csds.csv, csds.png):");
    for (what, paper, ours, published, ideal) in [
        ("dense", 10.5, dense_pts[1].1, FLEXGEN, System::IdealSsd),
        ("SparF", 3.11, sparse_pts[1].1, FLEXGEN_SPARQ, IDEAL_SPARQ),
    ] {
        c.compare(
            &format!("InstI-2 {what} batch 256 / {} best", published.name()),
            paper,
            ours / c.best(published)?,
            "x",
        );
        c.beside(ideal, ours / c.best(ideal)?, "x");
    }
    c.compare(
        "20 CSDs / 1, dense",
        8.99,
        dense_pts[2].1 / dense_pts[0].1,
        "x",
    );
    c.compare(
        "20 CSDs / 1, SparF",
        7.29,
        sparse_pts[2].1 / sparse_pts[0].1,
        "x",
    );
    Ok(())
}

fn fig_compression(c: &mut Ctx<'_>) -> Result<(), RunError> {
    let mut csv = String::from("compression,tokens_per_s_batch256\n");
    let dense = c.job(inst(None, 1), 256)?.tokens_per_s;
    let _ = writeln!(csv, "1,{dense:.4}");
    let mut pts = vec![(1.0, dense)];
    for comp in COMPRESSIONS {
        let t = c.job(inst(Some(comp), 1), 256)?.tokens_per_s;
        let _ = writeln!(csv, "{comp},{t:.4}");
        pts.push((1.0 / comp, t));
    }
    write(&c.out.join("compression.csv"), &csv)?;
    lines(
        &c.out.join("compression.png"),
        "InstI-SparF throughput vs KV compression, batch 256",
        "1 / compression (1 = dense)",
        "tokens/s",
        &[("InstI-SparF".into(), pts.clone())],
        true,
        false,
    )?;
    let _ = writeln!(c.report, "compression (compression.csv, compression.png):");
    let _ = writeln!(
        c.report,
        "  tokens/s at 1, 1/2, 1/4, 1/8, 1/16: {} (the paper's figure 17 has no single number to compare)",
        pts.iter()
            .map(|(_, t)| format!("{t:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn fig_channels(c: &mut Ctx<'_>) -> Result<(), RunError> {
    let mut csv = String::from(
        "page_size,heads,s,method,seqs,decode_virtual_us,channel_utilization,fraction_of_channel_bw,engine_busy_fraction,die_array_busy_fraction\n",
    );
    let mut lines_out = Vec::new();
    for b in c.boards {
        let kib = b.sample.page_size / 1024;
        // InstInfer's methods only; the page selection has its own figure.
        let points = b
            .profile
            .points
            .iter()
            .filter(|p| matches!(p.selection, Selection::Dense | Selection::SparF));
        for p in points {
            let method = method_name(p.selection, p.compression);
            let _ = writeln!(
                csv,
                "{},{},{},{method},{},{:.1},{:.4},{:.4},{:.4},{:.4}",
                b.sample.page_size,
                p.heads,
                p.s,
                p.seqs,
                p.decode_ns as f64 / 1e3,
                p.channel_utilization(),
                p.fraction_of_channel_bandwidth(),
                p.engine_busy_ns as f64 / p.decode_ns.max(1) as f64,
                p.flash_busy_ns as f64 / (p.dies as f64 * p.decode_ns.max(1) as f64)
            );
            if p.heads == c.m.heads {
                lines_out.push((
                    format!("{method} {kib} KiB"),
                    p.s,
                    p.fraction_of_channel_bandwidth(),
                ));
            }
        }
    }
    write(&c.out.join("channels.csv"), &csv)?;
    let mut series: Vec<Series> = Vec::new();
    for b in c.boards {
        for method in [
            method_name(Selection::Dense, None),
            method_name(Selection::SparF, Some(SPARSE)),
        ] {
            let name = format!("{method} {} KiB", b.sample.page_size / 1024);
            let pts: Vec<(f64, f64)> = lines_out
                .iter()
                .filter(|(m, _, _)| *m == name)
                .map(|&(_, s, f)| (s as f64, 100.0 * f))
                .collect();
            if !pts.is_empty() {
                series.push((name, pts));
            }
        }
    }
    lines(
        &c.out.join("channels.png"),
        "Channel bytes during decode attention, % of 8 x 1.4 GB/s (simulated)",
        "context tokens",
        "% of aggregate channel bandwidth",
        &series,
        false,
        false,
    )?;
    let _ = writeln!(c.report, "flash channels (channels.csv, channels.png):");
    for (m, s, f) in &lines_out {
        let _ = writeln!(
            c.report,
            "  {m} at {s} tokens: {:.1}% of the aggregate channel bandwidth",
            100.0 * f
        );
    }
    Ok(())
}

/// `dense`, or the method at its compression: `sparf-1/N`, `pages-1/N`.
pub fn method_name(selection: Selection, compression: Option<f64>) -> String {
    match compression {
        None => selection.name().to_string(),
        Some(x) => format!("{}-1/{}", selection.name(), (1.0 / x).round()),
    }
}

/// Source of the FlexGen disk rate when the probe ran.
const MEASURED: &str = "measured on this machine, same run: bench paper's FlexGen disk probe \
    (instinfer/src/run/flexgen_probe.rs; FlexGen's file layout and one decode step's reads, 4 copy threads, \
    cold page cache), wall clock";

/// Runs the FlexGen disk probe when a figure uses FlexGen and puts its
/// rate into `hw`; returns the report's line about it.
fn flexgen_disk_rate(p: &PaperParams, hw: &mut Hardware) -> Result<Option<String>, RunError> {
    let uses_flexgen = p
        .figures
        .iter()
        .any(|f| matches!(f, Figure::Throughput | Figure::Breakdown | Figure::Csds));
    if !uses_flexgen {
        return Ok(None);
    }
    if p.probe_bytes == 0 {
        return Ok(Some(format!(
            "FlexGen disk probe: not run; FlexGen's fitted {:.3} GB/s stands in",
            hw.flexgen_disk_fitted.value / 1e9
        )));
    }
    let shape = ProbeShape::opt_13b(p.probe_bytes);
    eprintln!(
        "measuring FlexGen's disk -> host rate ({} MB of KV files, cold page cache)…",
        2 * shape.layers * shape.file_bytes() / 1_000_000
    );
    let r = probe(&p.out, &shape)?;
    hw.flexgen_disk_measured = Param {
        value: r.bytes_per_s(),
        source: MEASURED,
    };
    Ok(Some(format!(
        "FlexGen disk probe (wall clock, this machine): {:.1} MB in {:.2} s wall = {:.3} GB/s wall \
         ({} layers x K and V prefixes of {} of {} rows x {} B, {} copy threads, cold page cache)",
        r.bytes as f64 / 1e6,
        r.wall_s,
        r.bytes_per_s() / 1e9,
        shape.layers,
        shape.rows_read,
        shape.rows,
        shape.row_bytes,
        super::flexgen_probe::COPY_THREADS
    )))
}

/// Runs the figures; returns the report printed to stdout.
pub fn run_paper(p: &PaperParams) -> Result<String, RunError> {
    if p.figures.is_empty() || p.contexts.is_empty() || p.seqs == 0 || p.page_sizes.is_empty() {
        return Err(input(
            "bench paper needs a figure, a context, a sequence and a page size",
        ));
    }
    std::fs::create_dir_all(&p.out).map_err(|e| out_err(&p.out, e))?;
    let m = ModelShape::OPT_13B;
    let mut hw = Hardware::default();
    let probe_line = flexgen_disk_rate(p, &mut hw)?;
    let t0 = Instant::now();
    let mut boards = Vec::new();
    let mut points = 0;
    for (i, &page_size) in p.page_sizes.iter().enumerate() {
        // Every figure on the first board; the others for the channels figure.
        let specs = if i == 0 {
            let mut all = specs(p, &m);
            if p.figures.contains(&Figure::Throughput) {
                for sp in headline::specs(p, &m) {
                    if !all.contains(&sp) {
                        all.push(sp);
                    }
                }
            }
            all
        } else if p.figures.contains(&Figure::Channels) {
            let channels = PaperParams {
                figures: vec![Figure::Channels],
                ..p.clone()
            };
            specs(&channels, &m)
        } else {
            continue;
        };
        let sample = Sample::paper(page_size, p.seqs);
        eprintln!(
            "simulating {} CSD points at {page_size}-byte pages (OPT-13B heads, d = 128, {} sequences each)…",
            specs.len(),
            p.seqs
        );
        points += specs.len();
        let profile = profile_csd(&m, &p.source, &specs, &sample)?;
        boards.push(Board { sample, profile });
    }
    let sim_s = t0.elapsed().as_secs_f64();
    let mut c = Ctx {
        hw,
        m,
        csd: &boards[0].profile,
        boards: &boards,
        out: &p.out,
        report: String::new(),
    };
    let _ = writeln!(
        c.report,
        "bench paper: OPT-13B, 1024 prompt + 1024 output tokens; host side modelled (A6000, PCIe, 980 PRO), \
         CSD side simulated ({} points, {} sequences each, {}, {:.1} s wall to simulate)",
        points,
        p.seqs,
        p.source.describe(),
        sim_s
    );
    if let Some(line) = probe_line {
        let _ = writeln!(c.report, "{line}");
    }
    let d = m.head_dim as u16;
    for b in &boards {
        let g = b.sample.geometry();
        let dim_group = b.sample.dim_group(d);
        let _ = writeln!(
            c.report,
            "  board: {} KiB pages, {} x {} dies, {} tokens per token page, dim group {dim_group} ({} tokens per dim page, from the {}-token prompt), \
             group-buffer DRAM {} B{}{}",
            b.sample.page_size / 1024,
            g.channels,
            g.ways,
            g.tokens_per_page(d),
            g.tokens_per_dim_page(dim_group),
            b.sample.prompt,
            b.sample.dram_budget(d),
            b.sample
                .scaled_to
                .map_or(String::new(), |(layers, batch)| format!(
                    " (the board's {} MiB x {} seqs / ({layers} layers x batch {batch}))",
                    board_sim::SimConfig::new(b.sample.page_size).dram_budget >> 20,
                    b.sample.seqs
                )),
            if std::ptr::eq(b, &boards[0]) {
                "; every figure"
            } else {
                "; channels and points only"
            }
        );
    }
    for f in &p.figures {
        match f {
            Figure::Throughput => fig_throughput(&mut c)?,
            Figure::Breakdown => fig_breakdown(&mut c)?,
            Figure::Csds => fig_csds(&mut c)?,
            Figure::Compression => fig_compression(&mut c)?,
            Figure::Channels => fig_channels(&mut c)?,
            Figure::P2p => fig_p2p(&mut c)?,
            Figure::Pages => pages::figure(&mut c, p)?,
            Figure::Seqs => {
                let r = super::bench_seqs::run(&c.m, &p.source, &p.page_sizes, &p.out)?;
                c.report.push_str(&r);
            }
        }
    }
    if boards.iter().any(|b| !b.profile.points.is_empty()) {
        super::csd_points::write_points(&boards, d, &p.out, &mut c.report)?;
    }
    let mut params = String::from("name,value,source\n");
    for (name, prm) in c.hw.params() {
        let _ = writeln!(params, "{name},{},\"{}\"", prm.value, prm.source);
    }
    write(&p.out.join("parameters.csv"), &params)?;
    let _ = writeln!(
        c.report,
        "parameters and their sources: {}",
        p.out.join("parameters.csv").display()
    );
    Ok(c.report)
}
