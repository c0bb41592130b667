//! `instinfer bench attend`: host dense vs in-storage dense vs SparF.

use host_driver::run::RunError;
use host_driver::run::bench::{BenchParams, run_bench};

/// Benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// One decode step: host f32 dense (wall) vs in-storage dense and SparF (wall and virtual).
    Attend(AttendArgs),
    /// The real model: prefill and decode tokens/s (wall), host dense vs simulated CSD.
    Model(ModelArgs),
}

/// Arguments of `bench model`.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    /// Prompt tokens.
    #[arg(long, default_value_t = 512)]
    prompt_tokens: usize,
    /// Generated tokens.
    #[arg(long, default_value_t = 32)]
    decode_tokens: usize,
    /// A GGUF model instead of the cached SmolLM2-135M-Instruct.
    #[arg(long)]
    model: Option<std::path::PathBuf>,
}

/// Arguments of `bench attend`.
#[derive(Debug, clap::Args)]
pub struct AttendArgs {
    /// Tokens.
    #[arg(long, default_value_t = 4096)]
    s: usize,
    /// Head dimension.
    #[arg(long, default_value_t = 128)]
    d: usize,
    /// KV heads.
    #[arg(long, default_value_t = 8)]
    kv_heads: usize,
    /// Query heads per KV head.
    #[arg(long, default_value_t = 1)]
    group: usize,
    /// Repetitions (median reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Simulated drives.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Flash page size of the simulated drives, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
}

pub fn run(c: Command) -> Result<(), RunError> {
    match c {
        Command::Model(a) => {
            let model = super::model::load(a.model.as_deref())?;
            let p = host_driver::run::bench_model::ModelBenchParams {
                prompt_tokens: a.prompt_tokens,
                decode_tokens: a.decode_tokens,
                ..Default::default()
            };
            println!(
                "{}",
                host_driver::run::bench_model::run_model_bench(&model, &p)?
            );
            Ok(())
        }
        Command::Attend(a) => {
            let p = BenchParams {
                s: a.s,
                d: a.d,
                kv_heads: a.kv_heads,
                group: a.group,
                reps: a.reps,
                devices: a.devices,
                page_size: super::page_size(&a.page_size),
                ..BenchParams::default()
            };
            println!("{}", run_bench(&p)?);
            Ok(())
        }
    }
}
