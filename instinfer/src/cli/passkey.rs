//! `instinfer passkey`: the share of trials in which each attention method
//! retrieves a key hidden in a long prompt, written as CSV.

use std::path::PathBuf;

use host_driver::policy::{Compression, Selection};
use indicatif::{ProgressBar, ProgressStyle};
use instinfer::RunError;
use instinfer::run::eval::EvalBackend;
use instinfer::run::passkey::{PasskeyParams, TrialOutcome, csv, passkey};

/// Arguments of `passkey`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Methods, comma separated (dense always runs as the yardstick).
    #[arg(long, value_delimiter = ',', default_value = "dense,sparf,pages")]
    methods: Vec<Selection>,
    /// Compressions, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1/8,1/16")]
    compression: Vec<Compression>,
    /// Trials (each a new prompt, key and depth).
    #[arg(long, default_value_t = 10)]
    trials: usize,
    /// The shortest prompt, tokens (each trial's length is drawn uniformly
    /// between the two bounds).
    #[arg(long, default_value_t = 2048)]
    min_tokens: usize,
    /// The longest prompt, tokens.
    #[arg(long, default_value_t = 4096)]
    max_tokens: usize,
    /// Seed of the trials' lengths, depths and keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Ask in the model's chat template instead of as plain text.
    #[arg(long)]
    chat: bool,
    /// Where dense and SparF run: csd, host-engine (bit-identical to csd),
    /// host.
    #[arg(long, default_value = "csd")]
    backend: EvalBackend,
    /// Flash page size of the simulated drive, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
    #[command(flatten)]
    guard: super::guard::GuardArgs,
    #[command(flatten)]
    pages: super::pages::PagesArgs,
    /// CSV output.
    #[arg(long)]
    out: Option<PathBuf>,
    /// A line per trial and method on stderr: length, depth, key, answer.
    #[arg(long)]
    verbose: bool,
    /// The model: a known name (`instinfer model list`; default
    /// smollm2-135m), fetched into the cache on first use, or a GGUF file.
    #[arg(long, value_name = "NAME|PATH")]
    model: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let guard = a.guard.setting()?;
    let pages = a.pages.setting(&a.page_size)?;
    let model = super::model::load(a.model.as_deref())?;
    let p = PasskeyParams {
        methods: a.methods,
        compressions: a.compression,
        trials: a.trials,
        min_tokens: a.min_tokens,
        max_tokens: a.max_tokens,
        seed: a.seed,
        chat: a.chat,
        backend: a.backend,
        page_size: super::page_size(&a.page_size),
        guard,
        per_layer: a.guard.per_layer,
        pages,
    };
    let bar = ProgressBar::new(p.trials as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} trials, {elapsed} elapsed, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let verbose = a.verbose;
    let rows = passkey(&model, &p, |o| {
        if verbose {
            // Shown even when the bar is hidden (stderr not a terminal).
            bar.suspend(|| eprintln!("{}", trial_line(o)));
        }
        bar.set_position(o.trial as u64);
    })?;
    bar.finish_and_clear();
    let table = csv(&rows);
    print!("{table}");
    if let Some(out) = &a.out {
        std::fs::write(out, &table).map_err(|e| RunError::Output {
            path: out.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    Ok(())
}

/// One trial's line for `--verbose`.
fn trial_line(o: &TrialOutcome) -> String {
    format!(
        "trial {} tokens {} depth {:.2} key {} {}: {:?} {}",
        o.trial,
        o.tokens,
        o.depth,
        o.draw.key,
        o.policy,
        o.answer,
        if o.retrieved { "ok" } else { "missed" }
    )
}
