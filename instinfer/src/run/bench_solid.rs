//! `instinfer bench solid`: SolidAttention on this machine's disk with the
//! real model and a long input.
//!
//! One dense prefill of `context` tokens of a text (recorded once), then,
//! for every configuration, the recorded KV is stored into a fresh backend
//! and `steps` decode steps run teacher-forced on the text's next tokens
//! (every configuration decodes exactly the same tokens):
//!
//! | configuration | KV | attention |
//! | --- | --- | --- |
//! | `dram` | DRAM (same store code, no I/O) | block-sparse |
//! | `ssd, no prefetch` | `O_DIRECT` file, read after each selection | block-sparse |
//! | `ssd, prefetch N` | the same, speculative prefetch N layers ahead | block-sparse |
//! | `ssd dense` | the same, every block every step (prefetch 1) | dense |
//!
//! Then a fio-style probe: random `O_DIRECT` reads through io_uring over
//! the blocks just written, at the store's block size and at the queue
//! depths the scheduler reaches, for the bandwidth the drive can give.
//! All times are wall clock: the drive is real (whatever backs the
//! directory), nothing is simulated.

use std::path::{Path, PathBuf};
use std::time::Instant;

use model::{Logits, Model};
use nvme_linux::direct::DirectFile;

use host_driver::backend::{AttentionBackend, ModelShape};
use host_driver::policy::{Policy, Selection};
use host_driver::runner::{BackendAttention, KvRecorder};
use solid_attention::{Budget, KvLocation, LayerStats, Prefetch, SolidBackend, SsdSetup};

use super::{RunError, input};

/// Settings of the benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct SolidBenchParams {
    /// Prompt tokens (SolidAttention's regime starts at 4k).
    pub context: usize,
    /// Decode steps per configuration.
    pub steps: usize,
    /// Where the store files go.
    pub kv_dir: PathBuf,
    /// Block-sparse budget.
    pub budget: Budget,
    /// Tokens per block.
    pub block: usize,
    /// Lookahead of the prefetching configuration.
    pub ahead: usize,
    /// Seconds per probe point.
    pub probe_seconds: f64,
    /// Blocks read through to merge reads.
    pub merge_gap: usize,
    /// Rounds over the configurations (the median is reported).
    pub repeat: usize,
}

/// One configuration's results.
#[derive(Clone, Debug)]
pub struct SolidRow {
    /// Configuration name.
    pub name: String,
    /// Decode steps.
    pub steps: usize,
    /// Wall seconds of the decode steps.
    pub decode_s: f64,
    /// Wall seconds storing the prompt's KV.
    pub store_s: f64,
    /// Bytes read from the drive during decode.
    pub bytes_read: u64,
    /// Read commands during decode.
    pub reads: u64,
    /// Mean transfers in flight when a read was queued.
    pub mean_depth: f64,
    /// Per layer counters.
    pub layers: Vec<LayerStats>,
    /// Peak DRAM of the KV path, bytes.
    pub dram_bytes: u64,
    /// Peak KV stored, bytes.
    pub kv_bytes: u64,
    /// Slowest and fastest round, tokens/s.
    pub spread: (f64, f64),
}

impl SolidRow {
    /// Decode tokens per second (wall).
    pub fn tokens_per_s(&self) -> f64 {
        self.steps as f64 / self.decode_s.max(1e-9)
    }

    /// All layers summed.
    pub fn total(&self) -> LayerStats {
        let mut t = LayerStats::default();
        self.layers.iter().for_each(|l| t.add(l));
        t
    }
}

/// One probe point.
#[derive(Clone, Copy, Debug)]
pub struct ProbePoint {
    /// Bytes per read.
    pub size: usize,
    /// Reads in flight.
    pub depth: usize,
    /// MB/s (10^6 bytes).
    pub mb_s: f64,
    /// Reads per second.
    pub iops: f64,
}

/// The report.
#[derive(Clone, Debug)]
pub struct SolidReport {
    /// Settings.
    pub params: SolidBenchParams,
    /// Wall seconds of the prefill.
    pub prefill_s: f64,
    /// One per configuration.
    pub rows: Vec<SolidRow>,
    /// The random-read probe.
    pub probe: Vec<ProbePoint>,
}

/// Runs it on `tokens` (the tokenized text).
pub fn run_solid_bench(
    model: &Model,
    tokens: &[u32],
    p: &SolidBenchParams,
    mut progress: impl FnMut(&str),
) -> Result<SolidReport, RunError> {
    let cfg = model.config();
    if p.context < 64 || p.steps == 0 {
        return Err(input("--context must be ≥ 64 and --steps ≥ 1"));
    }
    if p.context + p.steps > cfg.context_len {
        return Err(input(format!(
            "--context {} + --steps {} exceed the model's context of {}",
            p.context, p.steps, cfg.context_len
        )));
    }
    if tokens.len() < p.context + p.steps {
        return Err(input(format!(
            "the text has {} tokens; {} are needed",
            tokens.len(),
            p.context + p.steps
        )));
    }
    let shape = ModelShape::from(cfg);
    progress(&format!("prefill of {} tokens (dense, once)", p.context));
    let t = Instant::now();
    let mut rec = KvRecorder::new();
    model.prefill(&tokens[..p.context], &mut rec, Logits::None)?;
    let prefill_s = t.elapsed().as_secs_f64();
    let capacity = p.context + p.steps + 1;
    let setup = |location: KvLocation, prefetch: Prefetch| SsdSetup {
        location,
        block: p.block,
        budget: p.budget,
        prefetch,
        merge_gap: p.merge_gap,
    };
    let dir = KvLocation::Dir(p.kv_dir.clone());
    let configs: Vec<(String, SsdSetup, Selection)> = vec![
        (
            "dram, block-sparse".into(),
            setup(KvLocation::Dram, Prefetch::Off),
            Selection::Block,
        ),
        (
            "ssd, block-sparse, no prefetch".into(),
            setup(dir.clone(), Prefetch::Off),
            Selection::Block,
        ),
        (
            format!("ssd, block-sparse, prefetch {}", p.ahead),
            setup(dir.clone(), Prefetch::Ahead(p.ahead)),
            Selection::Block,
        ),
        (
            "ssd, dense (whole KV each step)".into(),
            setup(dir.clone(), Prefetch::Ahead(1)),
            Selection::Dense,
        ),
    ];
    let mut probe_target = None;
    // Rounds over all configurations, so slow phases of a shared machine
    // hit every configuration alike; each keeps its median round.
    let mut runs: Vec<Vec<SolidRow>> = vec![Vec::new(); configs.len()];
    for round in 0..p.repeat.max(1) {
        for (i, (name, s, sel)) in configs.iter().enumerate() {
            progress(&format!("{name} (round {})", round + 1));
            let file = format!("bench-solid-{i}");
            let step_tokens = if *sel == Selection::Dense {
                capacity
            } else {
                0
            };
            let mut b = s.backend(&file, shape, capacity, step_tokens, 1)?;
            runs[i].push(run_one(model, tokens, p, &rec, &mut b, shape, name, *sel)?);
            if *sel == Selection::Block && !b.store().is_dram() {
                probe_target = s.path(&file).map(|path| (path, *b.store().layout()));
            }
            drop(b);
            if *sel == Selection::Dense
                && let Some(path) = s.path(&file)
            {
                let _ = std::fs::remove_file(path);
            }
        }
    }
    let rows: Vec<SolidRow> = runs
        .into_iter()
        .map(|mut r| {
            r.sort_by(|a, b| a.decode_s.total_cmp(&b.decode_s));
            let spread = (r[0].tokens_per_s(), r[r.len() - 1].tokens_per_s());
            let mut m = r.swap_remove(r.len() / 2);
            m.spread = (spread.1, spread.0);
            m
        })
        .collect();
    let mut probe = Vec::new();
    if let Some((path, layout)) = &probe_target {
        progress("random-read probe");
        let len = p.context.div_ceil(layout.block) - 1;
        // The prefetching run's own read size and queue depth first.
        let own = rows.get(2).filter(|r| r.reads > 0).map(|r| {
            let size = (r.bytes_read / r.reads) as usize;
            (
                size.next_multiple_of(nvme_linux::direct::ALIGN),
                (r.mean_depth.round() as usize).clamp(1, 256),
            )
        });
        for (size, depth) in own.into_iter().chain([
            (layout.block_bytes(), 1),
            (layout.block_bytes(), 8),
            (layout.block_bytes(), 32),
            (layout.block_bytes(), 64),
            (layout.block_bytes() / 2, 32),
            (layout.block_bytes() * 4, 32),
        ]) {
            probe.push(random_reads(
                path,
                layout,
                len,
                size,
                depth,
                p.probe_seconds,
            )?);
        }
        for i in 0..4 {
            let _ = std::fs::remove_file(p.kv_dir.join(format!("bench-solid-{i}.kv")));
        }
    }
    Ok(SolidReport {
        params: p.clone(),
        prefill_s,
        rows,
        probe,
    })
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    model: &Model,
    tokens: &[u32],
    p: &SolidBenchParams,
    rec: &KvRecorder,
    b: &mut SolidBackend,
    shape: ModelShape,
    name: &str,
    sel: Selection,
) -> Result<SolidRow, RunError> {
    let policy = Policy {
        selection: sel,
        ..Policy::DENSE
    };
    let t = Instant::now();
    {
        let mut attn = BackendAttention::open(b, 0, shape, policy)?;
        rec.replay(&mut attn)
            .map_err(|e| RunError::Attention(e.to_string()))?;
    }
    let store_s = t.elapsed().as_secs_f64();
    // The prompt's KV is stored; count the decode's reads only.
    let (read0, reads0, depth0) = (
        b.store().stats.bytes_read,
        b.store().stats.reads,
        b.store().stats.depth_sum,
    );
    b.stats = Default::default();
    let mut attn = Resumed {
        b: &mut *b,
        shape,
        policy,
        lens: p.context,
    };
    let t = Instant::now();
    for i in 0..p.steps {
        model.decode(tokens[p.context + i], p.context + i, &mut attn)?;
    }
    let decode_s = t.elapsed().as_secs_f64();
    b.close(0)?;
    let st = b.store().stats;
    Ok(SolidRow {
        name: name.to_string(),
        steps: p.steps,
        decode_s,
        store_s,
        bytes_read: st.bytes_read - read0,
        reads: st.reads - reads0,
        mean_depth: (st.depth_sum - depth0) as f64 / (st.reads - reads0).max(1) as f64,
        layers: b.stats.layers.clone(),
        dram_bytes: st.peak_dram_bytes,
        kv_bytes: st.peak_kv_bytes,
        spread: (0.0, 0.0),
    })
}

/// The model's attention on an already-filled sequence 0 of `b`.
struct Resumed<'a> {
    b: &'a mut SolidBackend,
    shape: ModelShape,
    policy: Policy,
    lens: usize,
}

impl model::Attention for Resumed<'_> {
    fn prefill(&mut self, _: usize, _: &[f32], _: &[f32]) -> Result<(), model::AttentionFailure> {
        Err("the sequence is already filled".into())
    }

    fn decode(
        &mut self,
        layer: usize,
        q: &[f32],
        k: &[f32],
        v: &[f32],
    ) -> Result<Vec<f32>, model::AttentionFailure> {
        let s = self.lens + 1;
        let step = host_driver::backend::DecodeStep {
            seq: 0,
            layer,
            q,
            kv_new: Some((k, v)),
            method: self.policy.method(s, self.shape.head_dim),
        };
        if layer + 1 == self.shape.layers {
            self.lens += 1;
        }
        Ok(self.b.decode(&[step])?.remove(0))
    }
}

/// Random reads of `size` bytes at `depth` in flight over the first
/// `blocks` written blocks of every (layer, head) of slot 0, for
/// `seconds`.
fn random_reads(
    path: &Path,
    layout: &solid_attention::Layout,
    blocks: usize,
    size: usize,
    depth: usize,
    seconds: f64,
) -> Result<ProbePoint, RunError> {
    let err = |e: nvme_linux::direct::DirectError| {
        RunError::Backend(host_driver::backend::BackendError::Storage(e.to_string()))
    };
    let slot_size = size.next_multiple_of(nvme_linux::direct::ALIGN);
    let mut f = DirectFile::open(path, false, depth, slot_size, (2 * depth) as u32).map_err(err)?;
    let heads = layout.shape.layers * layout.shape.kv_heads;
    let span = (blocks * layout.block_bytes()).saturating_sub(size).max(1) as u64;
    let mut rng = attention::testdata::SplitMix64::new(7);
    let pick = |rng: &mut attention::testdata::SplitMix64| {
        let h = (rng.next_u64() % heads as u64) as usize;
        let off = rng.next_u64() % span / nvme_linux::direct::ALIGN as u64
            * nvme_linux::direct::ALIGN as u64;
        layout.offset(0, h / layout.shape.kv_heads, h % layout.shape.kv_heads, 0) + off
    };
    for slot in 0..depth {
        f.read(slot, pick(&mut rng), size).map_err(err)?;
    }
    let t = Instant::now();
    let mut done = 0u64;
    while t.elapsed().as_secs_f64() < seconds {
        let d = f.wait().map_err(err)?;
        done += 1;
        f.read(d.slot, pick(&mut rng), size).map_err(err)?;
    }
    let secs = t.elapsed().as_secs_f64();
    f.drain().map_err(err)?;
    Ok(ProbePoint {
        size,
        depth,
        mb_s: done as f64 * size as f64 / secs / 1e6,
        iops: done as f64 / secs,
    })
}

impl SolidReport {
    /// The report as text.
    pub fn lines(&self) -> Vec<String> {
        let p = &self.params;
        let mut out = vec![
            format!(
                "bench solid: context {} tokens, {} decode steps teacher-forced, blocks of {}, gaps of ≤ {} read through, budget {}, KV in {}",
                p.context,
                p.steps,
                p.block,
                p.merge_gap,
                match p.budget {
                    Budget::Tokens(t) => format!("{t} tokens"),
                    _ => "auto (1024 tokens from 4096 on, 25% below)".into(),
                },
                p.kv_dir.display()
            ),
            format!("prefill (dense, once, wall): {:.1} s", self.prefill_s),
            String::new(),
            format!(
                "{:<36} {:>16} {:>8} {:>10} {:>9} {:>12} {:>9} {:>9} {:>10}",
                "configuration (all wall time)",
                "tok/s (min-max)",
                "vs DRAM",
                "MiB/token",
                "reads/tok",
                "blocked ms/t",
                "hit rate",
                "read MB/s",
                "DRAM MiB"
            ),
        ];
        let base = self.rows.first().map_or(1.0, SolidRow::tokens_per_s);
        for r in &self.rows {
            let t = r.total();
            let per = r.steps.max(1) as f64;
            out.push(format!(
                "{:<36} {:>16} {:>8.3} {:>10.2} {:>9.0} {:>12.2} {:>9} {:>9.0} {:>10.2}",
                r.name,
                format!(
                    "{:.2} ({:.1}-{:.1})",
                    r.tokens_per_s(),
                    r.spread.0,
                    r.spread.1
                ),
                r.tokens_per_s() / base,
                r.bytes_read as f64 / per / (1 << 20) as f64,
                r.reads as f64 / per,
                t.blocking_ns as f64 / 1e6 / per,
                if t.prefetched > 0 {
                    format!("{:.1}%", 100.0 * t.hit_rate())
                } else {
                    "-".into()
                },
                r.bytes_read as f64 / r.decode_s.max(1e-9) / 1e6,
                r.dram_bytes as f64 / (1 << 20) as f64,
            ));
        }
        if let Some(r) = self.rows.first() {
            out.push(format!(
                "full KV cache: {:.1} MiB; DRAM of the KV path on the SSD: {}",
                r.kv_bytes as f64 / (1 << 20) as f64,
                self.rows
                    .iter()
                    .skip(1)
                    .map(|x| format!(
                        "{:.1}%",
                        100.0 * x.dram_bytes as f64 / x.kv_bytes.max(1) as f64
                    ))
                    .collect::<Vec<_>>()
                    .join(" / ")
            ));
        }
        let blocked = |i: usize| self.rows.get(i).map(|r| r.total().blocking_ns as f64);
        if let (Some(off), Some(on)) = (blocked(1), blocked(2)) {
            out.push(format!(
                "prefetch cuts blocking time {:.2}x ({:.2} → {:.2} ms/token)",
                off / on.max(1.0),
                off / 1e6 / p.steps as f64,
                on / 1e6 / p.steps as f64
            ));
        }
        if let (Some(dram), Some(r), Some(best)) = (
            self.rows.first(),
            self.rows.get(2),
            self.probe.iter().map(|x| x.mb_s).reduce(f64::max),
        ) {
            let per = r.steps.max(1) as f64;
            out.push(format!(
                "time per token: compute (DRAM run) {:.1} ms; the SSD run's reads at the probe's best {:.0} MB/s take ≥ {:.1} ms: {}",
                1e3 * dram.decode_s / per,
                best,
                1e3 * r.bytes_read as f64 / per / (best * 1e6),
                if r.bytes_read as f64 / per / (best * 1e6) > dram.decode_s / per {
                    "the drive is the bottleneck; prefetch can only hide what fits beside it"
                } else {
                    "the drive can keep up; what remains is scheduling"
                }
            ));
        }
        if let Some(r) = self.rows.get(2) {
            out.push(String::new());
            out.push(format!("per-layer prefetch ({}):", r.name));
            out.push(format!(
                "{:>5} {:>9} {:>16} {:>12}",
                "layer", "hit rate", "scored hit rate", "blocked ms"
            ));
            for (l, s) in r.layers.iter().enumerate() {
                out.push(format!(
                    "{:>5} {:>8.1}% {:>15.1}% {:>12.2}",
                    l,
                    100.0 * s.hit_rate(),
                    100.0 * s.dynamic_hit_rate(),
                    s.blocking_ns as f64 / 1e6
                ));
            }
        }
        if !self.probe.is_empty() {
            out.push(String::new());
            out.push("fio-style probe: random O_DIRECT reads through io_uring over the stored blocks (wall):".into());
            for pp in &self.probe {
                out.push(format!(
                    "  {:>7} B x QD {:>3}: {:>8.0} MB/s {:>9.0} IOPS",
                    pp.size, pp.depth, pp.mb_s, pp.iops
                ));
            }
            if let (Some(r), Some(best), Some(own)) = (
                self.rows.get(2),
                self.probe.iter().map(|x| x.mb_s).reduce(f64::max),
                self.probe.first(),
            ) {
                let mb = r.bytes_read as f64 / r.decode_s.max(1e-9) / 1e6;
                out.push(format!(
                    "achieved during decode ({}): {:.0} MB/s averaged over the decode time, mean read {:.0} B at a mean queue depth of {:.1}; the probe at that size and depth (first line) gives {:.0} MB/s ({:.1}%), its best {:.0} MB/s ({:.1}%)",
                    r.name,
                    mb,
                    r.bytes_read as f64 / r.reads.max(1) as f64,
                    r.mean_depth,
                    own.mb_s,
                    100.0 * mb / own.mb_s.max(1e-9),
                    best,
                    100.0 * mb / best,
                ));
            }
        }
        out
    }
}
