//! `instinfer eval`: perplexity per attention method and compression on a
//! text, written as CSV and plotted.

use std::path::PathBuf;

use host_driver::policy::{Compression, Selection};
use indicatif::{ProgressBar, ProgressStyle};
use instinfer::RunError;
use instinfer::run::eval::{EvalBackend, EvalParams, csv, evaluate};
use instinfer::run::plot::plot;
use instinfer::run::ssd::kv_name;
use solid_attention::Budget;

/// Arguments of `eval`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Text file to score.
    #[arg(long, required_unless_present = "list_methods")]
    text: Option<PathBuf>,
    /// Print every method's name and a one-line description, one a line,
    /// and exit.
    #[arg(long)]
    list_methods: bool,
    /// Context tokens per window (prefilled).
    #[arg(long, default_value_t = 1024)]
    context: usize,
    /// Scored tokens per window (teacher-forced decode).
    #[arg(long, default_value_t = 256)]
    continuation: usize,
    /// Methods, comma separated (dense always runs as the yardstick).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "dense,sparq,sparf,h2o,local"
    )]
    methods: Vec<Selection>,
    /// Compressions, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1/2,1/4,1/8,1/16")]
    compression: Vec<Compression>,
    /// Windows.
    #[arg(long, default_value_t = 8)]
    windows: usize,
    /// Where dense and SparF run: csd, host-engine (bit-identical to csd),
    /// host; or ssd: dense and block on the host with the KV cache on a
    /// plain SSD (SolidAttention), the rest on the host.
    #[arg(long, default_value = "csd")]
    backend: EvalBackend,
    /// Simulated drives.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Flash page size of the simulated drives, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
    #[command(flatten)]
    ssd: super::ssd::SsdArgs,
    #[command(flatten)]
    guard: super::guard::GuardArgs,
    #[command(flatten)]
    pages: super::pages::PagesArgs,
    /// CSV output.
    #[arg(long)]
    out: Option<PathBuf>,
    /// PNG chart output.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// The model: a known name (`instinfer model list`; default
    /// smollm2-135m), fetched into the cache on first use, or a GGUF file.
    #[arg(long, value_name = "NAME|PATH")]
    model: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), RunError> {
    if a.list_methods {
        for m in Selection::ALL {
            println!("{:<16} {}", m.name(), m.describe());
        }
        return Ok(());
    }
    let guard = a.guard.setting()?;
    let pages = a.pages.setting(&a.page_size)?;
    let path = a
        .text
        .as_deref()
        .ok_or_else(|| RunError::Input("--text is required".into()))?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| RunError::Input(format!("{}: {e}", path.display())))?;
    let model = super::model::load(a.model.as_deref())?;
    let tokens = model.tokenizer().encode(&text);
    let p = EvalParams {
        context: a.context,
        continuation: a.continuation,
        methods: a.methods,
        compressions: a.compression,
        windows: a.windows,
        backend: a.backend,
        devices: a.devices,
        page_size: super::page_size(&a.page_size),
        ssd: a.ssd.setup(Budget::Method)?,
        kv_name: kv_name(a.model.as_deref()),
        guard,
        per_layer: a.guard.per_layer,
        pages,
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} scored tokens, {elapsed} elapsed, eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let rows = evaluate(&model, &tokens, &p, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let table = csv(&rows);
    print!("{table}");
    for r in &rows {
        if let Some((fired, extra)) = r.guard {
            eprintln!(
                "guardrail {}: widened k in {:.1}% of KV-head steps, +{:.4} of dense's K/V elements per step",
                r.policy,
                100.0 * fired,
                extra
            );
        }
    }
    if let Some(out) = &a.out {
        std::fs::write(out, &table).map_err(|e| RunError::Output {
            path: out.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    if let Some(path) = &a.plot {
        plot(&rows, path)?;
    }
    Ok(())
}

/// Arguments of `plot`.
#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// A CSV written by `eval --out`.
    #[arg(long)]
    csv: PathBuf,
    /// PNG chart output.
    #[arg(long)]
    out: PathBuf,
}

/// Redraws the chart of an earlier evaluation from its CSV.
pub fn plot_csv(a: PlotArgs) -> Result<(), RunError> {
    let text = std::fs::read_to_string(&a.csv)
        .map_err(|e| RunError::Input(format!("{}: {e}", a.csv.display())))?;
    let rows = instinfer::run::eval::parse_csv(&text)
        .map_err(|e| RunError::Input(format!("{}: {e}", a.csv.display())))?;
    plot(&rows, &a.out)
}
