//! `instinfer run`: the main job — generate text with the decode attention
//! in the (simulated) drive, streaming it, then a summary.

use std::io::Write;
use std::path::PathBuf;

use host_driver::policy::{Compression, Policy, Selection};
use host_driver::run::RunError;
use host_driver::run::generate::{RunBackend, RunParams, run_generation};

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The prompt.
    #[arg(long, default_value = "The capital of France is")]
    prompt: String,
    /// Use the model's chat template (SmolLM2-Instruct is a chat model).
    #[arg(long)]
    chat: bool,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// Where decode attention runs: csd (simulated drive) or host.
    #[arg(long, default_value = "csd")]
    backend: RunBackend,
    /// Attention method: dense, sparf, sparq, h2o, local.
    #[arg(long, default_value = "sparf")]
    method: Selection,
    /// KV read per step relative to dense (1/8 = SparF as in the paper).
    #[arg(long, default_value = "1/8")]
    compression: Compression,
    /// Simulated drives sharing the KV heads.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Flash page size of the simulated drives, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
    /// A GGUF model instead of the cached SmolLM2-135M-Instruct.
    #[arg(long)]
    model: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let model = super::model::load(a.model.as_deref())?;
    let p = RunParams {
        prompt: a.prompt,
        chat: a.chat,
        max_tokens: a.max_tokens,
        backend: a.backend,
        policy: Policy {
            selection: a.method,
            compression: a.compression,
        },
        devices: a.devices,
        page_size: super::page_size(&a.page_size),
    };
    let mut out = std::io::stdout();
    let summary = run_generation(&model, &p, |piece| {
        print!("{piece}");
        let _ = out.flush();
    })?;
    println!();
    eprintln!("--- {} on {:?}", p.policy, p.backend);
    for line in summary.lines() {
        eprintln!("{line}");
    }
    Ok(())
}
