//! `instinfer eval`: how much each attention method costs the model in
//! perplexity at a given KV compression.
//!
//! Window `w` covers tokens `[w·(C+N), (w+1)·(C+N))` of the tokenized text
//! (C = context, N = continuation). The first C tokens are prefilled (dense,
//! on the host, as InstInfer's GPU does) once per window; the recorded KV is
//! replayed into every method's backend; then the next N tokens are scored
//! with teacher forcing: the first scored token is the one at position C
//! (from the prefill's last logits, the same for every method), the others
//! come from N − 1 decode steps whose attention runs on the method's
//! backend. Per method and compression: mean NLL, its standard error over
//! scored tokens, perplexity, top-1 agreement with dense, and per decode
//! step what was read as a fraction of dense at the same context: KV
//! elements (`read_fraction`, SparQ's accounting), flash page reads
//! (`page_fraction`) and NAND-bus bytes (`bus_fraction`). The flash
//! fractions are the drive's own counts on `--backend csd` and the layout
//! model of `host_driver::backend::flash` on the host backends (and for the
//! methods the drive does not run); docs/accounting.md says how each is
//! counted.

use std::time::Instant;

use attention::shape::BasisKind;
use model::{Logits, Model};

use host_driver::backend::{AttentionBackend, FlashLayout, HostDense, InStorage, ModelShape};
use host_driver::policy::{Compression, Policy, Selection};
use host_driver::runner::{BackendAttention, KvRecorder, argmax};
use host_driver::transport::SimTransport;

use super::sim::sim_array;
use super::ssd::SsdSetup;
use super::{RunError, input};

/// Dims per dim page of the simulated drives' dim-indexed K copy (and of
/// the host's flash model).
pub const DIM_GROUP: u8 = 1;

/// Where the device methods (dense, SparF) run; the others always run on
/// the host reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalBackend {
    /// Simulated CSDs (the integer engine behind NVMe).
    Csd,
    /// The device's engine model on the host (bit-identical to the CSD).
    HostEngine,
    /// The f32 reference on the host.
    Host,
    /// Dense and block-sparse on the host with the KV cache on a plain SSD
    /// (SolidAttention); the other methods on the f32 reference.
    Ssd,
}

impl std::str::FromStr for EvalBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "csd" => Ok(Self::Csd),
            "host-engine" => Ok(Self::HostEngine),
            "host" => Ok(Self::Host),
            "ssd" => Ok(Self::Ssd),
            _ => Err(format!(
                "unknown backend `{s}` (csd, host-engine, host, ssd)"
            )),
        }
    }
}

/// Evaluation settings.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalParams {
    /// Context tokens per window (C).
    pub context: usize,
    /// Scored continuation tokens per window (N).
    pub continuation: usize,
    /// Methods besides dense (dense always runs: it is the yardstick).
    pub methods: Vec<Selection>,
    /// Compressions for the non-dense methods.
    pub compressions: Vec<Compression>,
    /// Windows.
    pub windows: usize,
    /// Where dense and SparF run.
    pub backend: EvalBackend,
    /// Simulated drives (with `EvalBackend::Csd`).
    pub devices: usize,
    /// Their flash page size.
    pub page_size: u32,
    /// The SSD KV path (with `EvalBackend::Ssd`).
    pub ssd: SsdSetup,
    /// Name of the KV store file.
    pub kv_name: String,
    /// The guardrail's knobs for the guarded selections.
    pub guard: host_driver::policy::GuardSetting,
    /// Per-layer k for SparF and SparF+ (see [`host_driver::runner::LayerPlan`]).
    pub per_layer: bool,
    /// The page selection's knobs.
    pub pages: host_driver::policy::PagesSetting,
}

/// One line of the results.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalRow {
    /// Method and compression.
    pub policy: Policy,
    /// Backend name.
    pub backend: String,
    /// Scored tokens.
    pub tokens: usize,
    /// Mean negative log-likelihood (nats).
    pub nll: f64,
    /// Its standard error.
    pub nll_stderr: f64,
    /// exp(nll).
    pub ppl: f64,
    /// Fraction of scored positions whose argmax equals dense's.
    pub top1_agree: f64,
    /// Mean fraction of dense's KV elements read per decode step.
    pub read_fraction: f64,
    /// Mean flash page reads per decode step over dense's (whole pages,
    /// dim pages included); `None` where no flash is counted (the SSD
    /// backend, or a CSV written before the column existed).
    pub page_fraction: Option<f64>,
    /// Mean NAND-bus bytes per decode step (after the filter) over dense's.
    pub bus_fraction: Option<f64>,
    /// Wall time spent in this configuration's decode steps, seconds.
    pub wall_s: f64,
    /// The guardrail (SparF+ with a guard): fraction of KV-head steps
    /// where it widened k, and the K/V elements it added per step as a
    /// fraction of dense's. Not in the CSV.
    pub guard: Option<(f64, f64)>,
}

impl EvalRow {
    /// The CSV header (an empty flash fraction: not counted).
    pub const CSV_HEADER: &'static str = "method,compression,backend,tokens,nll,nll_stderr,ppl,top1_agree,read_fraction,page_fraction,bus_fraction,wall_s";

    /// The header of CSVs written before the flash fractions; still read.
    pub const CSV_HEADER_V1: &'static str =
        "method,compression,backend,tokens,nll,nll_stderr,ppl,top1_agree,read_fraction,wall_s";

    /// One CSV line (dense has compression 1).
    pub fn csv(&self) -> String {
        let c = compression_column(&self.policy);
        let opt = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.4}"));
        format!(
            "{},{},{},{},{:.6},{:.6},{:.4},{:.4},{:.4},{},{},{:.1}",
            self.policy.selection,
            c,
            self.backend,
            self.tokens,
            self.nll,
            self.nll_stderr,
            self.ppl,
            self.top1_agree,
            self.read_fraction,
            opt(self.page_fraction),
            opt(self.bus_fraction),
            self.wall_s
        )
    }
}

/// The compression a CSV row shows: 1 for dense, whatever it was given.
pub(crate) fn compression_column(policy: &Policy) -> f64 {
    match policy.selection {
        Selection::Dense => 1.0,
        _ => policy.compression.get(),
    }
}

impl EvalRow {
    /// Parses one line written by [`EvalRow::csv`].
    pub fn parse_csv(line: &str) -> Result<Self, String> {
        Self::parse_fields(line, true)
    }

    /// Parses one line of a CSV with `flash` columns or without
    /// ([`Self::CSV_HEADER_V1`]).
    fn parse_fields(line: &str, flash: bool) -> Result<Self, String> {
        let f: Vec<&str> = line.trim().split(',').collect();
        let want = if flash { 12 } else { 10 };
        if f.len() != want {
            return Err(format!(
                "expected {want} fields, found {}: `{line}`",
                f.len()
            ));
        }
        let num = |i: usize| -> Result<f64, String> {
            f[i].parse::<f64>()
                .map_err(|_| format!("field {} `{}` is not a number", i + 1, f[i]))
        };
        let opt = |i: usize| -> Result<Option<f64>, String> {
            if f[i].is_empty() {
                Ok(None)
            } else {
                num(i).map(Some)
            }
        };
        let selection: Selection = f[0].parse()?;
        let compression = Compression::new(num(1)?)?;
        let (page_fraction, bus_fraction, wall) = if flash {
            (opt(9)?, opt(10)?, 11)
        } else {
            (None, None, 9)
        };
        Ok(Self {
            policy: Policy::new(selection, compression),
            backend: f[2].to_string(),
            tokens: f[3]
                .parse()
                .map_err(|_| format!("tokens `{}` is not a count", f[3]))?,
            nll: num(4)?,
            nll_stderr: num(5)?,
            ppl: num(6)?,
            top1_agree: num(7)?,
            read_fraction: num(8)?,
            page_fraction,
            bus_fraction,
            wall_s: num(wall)?,
            guard: None,
        })
    }
}

/// Parses a CSV written by [`csv`] (header line required; the header
/// without the flash fractions is read too, with none).
pub fn parse_csv(text: &str) -> Result<Vec<EvalRow>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let flash = match lines.next().map(str::trim) {
        Some(EvalRow::CSV_HEADER) => true,
        Some(EvalRow::CSV_HEADER_V1) => false,
        _ => return Err(format!("the first line must be `{}`", EvalRow::CSV_HEADER)),
    };
    lines.map(|l| EvalRow::parse_fields(l, flash)).collect()
}

/// The backends of one evaluation (also `passkey`'s): where each method
/// runs for an [`EvalBackend`].
pub(crate) struct Backends {
    csd: Option<InStorage<SimTransport>>,
    engine: HostDense,
    host: HostDense,
    #[cfg(target_os = "linux")]
    ssd: Option<solid_attention::SolidBackend>,
}

impl Backends {
    /// The host backends, and `devices` simulated drives with flash pages
    /// of `page_size` bytes when `kind` is [`EvalBackend::Csd`]. No SSD
    /// store: [`evaluate`] adds its own.
    pub(crate) fn new(kind: EvalBackend, devices: usize, page_size: u32) -> Result<Self, RunError> {
        let layout = FlashLayout {
            page_bytes: page_size,
            dim_group: DIM_GROUP,
        };
        let mut b = Self {
            csd: match kind {
                EvalBackend::Csd => Some(InStorage::new(sim_array(devices, page_size)?, DIM_GROUP)),
                _ => None,
            },
            engine: HostDense::engine(),
            host: HostDense::new(),
            #[cfg(target_os = "linux")]
            ssd: None,
        };
        b.engine.set_flash_layout(layout);
        b.host.set_flash_layout(layout);
        Ok(b)
    }

    /// The guardrail counts of the host backends (the device's are not
    /// counted here).
    fn guard(&self) -> host_driver::backend::GuardStats {
        self.host.guard + self.engine.guard
    }

    /// The backend `policy` runs on under `kind`: the device methods
    /// (dense, SparF, SparF+, pages, quest) on the drive or the engine
    /// model, block-sparse and dense on the SSD store when there is one,
    /// the rest on the host reference.
    pub(crate) fn pick(&mut self, policy: &Policy, kind: EvalBackend) -> &mut dyn AttentionBackend {
        let sel = policy.selection;
        let device_method = matches!(
            sel,
            Selection::Dense | Selection::SparF | Selection::Pages | Selection::Quest
        ) || sel.sparf_plus().is_some();
        #[cfg(target_os = "linux")]
        if let (Selection::Dense | Selection::Block, EvalBackend::Ssd, Some(ssd)) =
            (sel, kind, self.ssd.as_mut())
        {
            return ssd;
        }
        match (device_method, kind, self.csd.as_mut()) {
            (true, EvalBackend::Csd, Some(csd)) => {
                // The sequence about to be opened keeps its dim-indexed
                // copy in the selection's basis.
                csd.set_basis(sel.sparf_plus().map_or(BasisKind::Raw, |(b, _)| b));
                csd.set_placement(match sel {
                    Selection::Pages | Selection::Quest => {
                        policy.pages.for_selection(sel).placement()
                    }
                    _ => proto::Placement::TIME,
                });
                csd
            }
            (true, EvalBackend::HostEngine, _) => &mut self.engine,
            _ => &mut self.host,
        }
    }
}

/// Running sums of one configuration.
#[derive(Default, Clone)]
struct Acc {
    nll: Vec<f64>,
    agree: usize,
    read: f64,
    windows: usize,
    /// Σ and count over windows of the flash fractions that exist.
    page: (f64, usize),
    bus: (f64, usize),
    wall_s: f64,
    backend: String,
    guard: host_driver::backend::GuardStats,
}

/// `−log softmax(logits)[target]` in f64.
pub fn nll(logits: &[f32], target: u32) -> f64 {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&x| (x as f64 - m).exp()).sum();
    let t = logits
        .get(target as usize)
        .copied()
        .unwrap_or(f32::NEG_INFINITY) as f64;
    (sum.ln() + m) - t
}

/// The configurations: dense first, then every method × compression.
pub fn configurations(p: &EvalParams) -> Vec<Policy> {
    policies(&p.methods, &p.compressions, p.guard, p.per_layer, p.pages)
}

/// Dense first, then every method of `methods` but dense × every
/// compression, with the guardrail's and the page selection's knobs.
pub fn policies(
    methods: &[Selection],
    compressions: &[Compression],
    guard: host_driver::policy::GuardSetting,
    per_layer: bool,
    pages: host_driver::policy::PagesSetting,
) -> Vec<Policy> {
    let mut out = vec![Policy::DENSE];
    for &selection in methods {
        if selection == Selection::Dense {
            continue;
        }
        for &compression in compressions {
            out.push(Policy {
                selection,
                compression,
                guard,
                per_layer,
                pages,
            });
        }
    }
    out
}

/// Checks the settings against the text.
fn check(p: &EvalParams, tokens: usize) -> Result<(), RunError> {
    if p.context == 0 || p.continuation == 0 || p.windows == 0 {
        return Err(input(
            "--context, --continuation and --windows must be at least 1",
        ));
    }
    let need = (p.context + p.continuation)
        .checked_mul(p.windows)
        .ok_or_else(|| input("windows × (context + continuation) overflows"))?;
    if need > tokens {
        return Err(input(format!(
            "{} windows of {} + {} tokens need {need} tokens; the text has {tokens}",
            p.windows, p.context, p.continuation
        )));
    }
    Ok(())
}

/// Runs the evaluation on `tokens` (the tokenized text). `progress` is
/// called with (decode steps done, total).
pub fn evaluate(
    model: &Model,
    tokens: &[u32],
    p: &EvalParams,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<EvalRow>, RunError> {
    check(p, tokens.len())?;
    let cfg = model.config();
    let shape = ModelShape::from(cfg);
    let configs = configurations(p);
    let mut backends = Backends::new(p.backend, p.devices, p.page_size)?;
    #[cfg(target_os = "linux")]
    if p.backend == EvalBackend::Ssd {
        // Dense runs here too: the read buffers hold a whole layer.
        let capacity = p.context + p.continuation + 1;
        backends.ssd = Some(super::ssd::ssd_backend(
            &p.ssd, &p.kv_name, shape, capacity, capacity,
        )?);
    }
    #[cfg(not(target_os = "linux"))]
    if p.backend == EvalBackend::Ssd {
        return Err(super::ssd::unsupported());
    }
    let (c, n) = (p.context, p.continuation);
    let total = p.windows * configs.len() * n;
    let mut done = 0;
    let mut acc = vec![Acc::default(); configs.len()];
    for w in 0..p.windows {
        let window = &tokens[w * (c + n)..(w + 1) * (c + n)];
        let mut rec = KvRecorder::new();
        let first = model.prefill(&window[..c], &mut rec, Logits::Last)?;
        let mut dense_top: Vec<u32> = Vec::with_capacity(n);
        for (ci, policy) in configs.iter().enumerate() {
            let g0 = backends.guard();
            let backend = backends.pick(policy, p.backend);
            let started = Instant::now();
            let mut attn = BackendAttention::open(backend, w as u32, shape, *policy)?;
            rec.replay(&mut attn)
                .map_err(|e| RunError::Attention(e.to_string()))?;
            let a = &mut acc[ci];
            a.backend = attn.backend().name().to_string();
            let mut logits = first.clone();
            for i in 0..n {
                let target = window[c + i];
                a.nll.push(nll(&logits, target));
                let top = argmax(&logits);
                if ci == 0 {
                    dense_top.push(top);
                }
                if dense_top.get(i) == Some(&top) {
                    a.agree += 1;
                }
                if i + 1 < n {
                    logits = model.decode(target, c + i, &mut attn)?;
                }
                done += 1;
                progress(done, total);
            }
            a.read += attn.mean_read_fraction();
            for (sum, x) in [
                (&mut a.page, attn.mean_page_fraction()),
                (&mut a.bus, attn.mean_bus_fraction()),
            ] {
                if let Some(x) = x {
                    sum.0 += x;
                    sum.1 += 1;
                }
            }
            a.windows += 1;
            attn.close()?;
            a.wall_s += started.elapsed().as_secs_f64();
            let g1 = backends.guard();
            a.guard = a.guard + (g1 - g0);
        }
    }
    Ok(configs
        .iter()
        .zip(acc)
        .map(|(policy, a)| {
            let count = a.nll.len().max(1) as f64;
            let mean = a.nll.iter().sum::<f64>() / count;
            let var =
                a.nll.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (count - 1.0).max(1.0);
            EvalRow {
                policy: *policy,
                backend: a.backend,
                tokens: a.nll.len(),
                nll: mean,
                nll_stderr: (var / count).sqrt(),
                ppl: mean.exp(),
                top1_agree: a.agree as f64 / count,
                read_fraction: if policy.selection == Selection::Dense {
                    1.0
                } else {
                    a.read / a.windows.max(1) as f64
                },
                page_fraction: mean_of(a.page),
                bus_fraction: mean_of(a.bus),
                wall_s: a.wall_s,
                guard: (policy_guarded(policy) && a.guard.heads > 0).then(|| {
                    // Per KV-head step, dense reads 2·S·d elements.
                    let steps = a.guard.heads as f64;
                    let dense = steps * (2 * p.context * cfg.head_dim) as f64;
                    (
                        a.guard.fired as f64 / steps,
                        a.guard.extra_elements as f64 / dense,
                    )
                }),
            }
        })
        .collect())
}

/// The mean of a (sum, count), if anything was counted.
fn mean_of((sum, n): (f64, usize)) -> Option<f64> {
    (n > 0).then(|| sum / n as f64)
}

/// Whether the policy runs the guardrail.
fn policy_guarded(p: &Policy) -> bool {
    p.selection.sparf_plus().is_some_and(|(_, guarded)| guarded)
}

/// The CSV text of `rows`.
pub fn csv(rows: &[EvalRow]) -> String {
    let mut s = String::from(EvalRow::CSV_HEADER);
    s.push('\n');
    for r in rows {
        s.push_str(&r.csv());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nll_is_log_softmax() {
        let l = [0.0f32, (2.0f32).ln()];
        assert!((nll(&l, 1) - (1.5f64).ln()).abs() < 1e-6);
        assert!((nll(&l, 0) - (3.0f64).ln()).abs() < 1e-6);
        assert!(nll(&l, 7).is_infinite());
    }

    #[test]
    fn configurations_put_dense_first() {
        let p = EvalParams {
            context: 4,
            continuation: 2,
            methods: vec![Selection::SparF, Selection::Dense, Selection::Local],
            compressions: vec!["1/2".parse().unwrap(), "1/8".parse().unwrap()],
            windows: 1,
            backend: EvalBackend::Host,
            devices: 1,
            page_size: 4096,
            ssd: SsdSetup::in_dir(std::env::temp_dir()),
            kv_name: "test".into(),
            guard: Default::default(),
            per_layer: false,
            pages: Default::default(),
        };
        let c = configurations(&p);
        assert_eq!(c.len(), 5);
        assert_eq!(c[0], Policy::DENSE);
        assert!(check(&p, 5).is_err());
        assert!(check(&p, 6).is_ok());
        assert!(check(&EvalParams { windows: 0, ..p }, 100).is_err());
    }

    #[test]
    fn csv_has_the_required_columns() {
        let row = EvalRow {
            policy: Policy::DENSE,
            backend: "host".into(),
            tokens: 3,
            nll: 2.5,
            nll_stderr: 0.1,
            ppl: 2.5f64.exp(),
            top1_agree: 1.0,
            read_fraction: 1.0,
            page_fraction: Some(1.0),
            bus_fraction: None,
            wall_s: 0.5,
            guard: None,
        };
        let text = csv(std::slice::from_ref(&row));
        assert!(text.starts_with(
            "method,compression,backend,tokens,nll,nll_stderr,ppl,top1_agree,read_fraction,page_fraction,bus_fraction,wall_s\n"
        ));
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "dense,1,host,3,2.500000,0.100000,12.1825,1.0000,1.0000,1.0000,,0.5"
        );
        let back = parse_csv(&text).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].page_fraction, Some(1.0));
        assert_eq!(back[0].bus_fraction, None);
        assert_eq!(back[0].wall_s, 0.5);
        assert!(parse_csv("dense,1\n").is_err());
        let short = text.replace(",1.0000,,0.5", ",0.5");
        assert!(
            parse_csv(&short)
                .unwrap_err()
                .contains("expected 12 fields")
        );
    }

    #[test]
    fn csvs_without_the_flash_columns_still_parse() {
        let old = format!(
            "{}\nsparf,0.125,host-engine,32,3.1,0.2,22.19,0.9,0.1432,12.0\n",
            EvalRow::CSV_HEADER_V1
        );
        let rows = parse_csv(&old).unwrap();
        assert_eq!(rows[0].policy.selection, Selection::SparF);
        assert_eq!(rows[0].read_fraction, 0.1432);
        assert_eq!(rows[0].page_fraction, None);
        assert_eq!(rows[0].wall_s, 12.0);
    }
}
