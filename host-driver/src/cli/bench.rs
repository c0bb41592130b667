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
    /// InstInfer's evaluation (OPT-13B) in the cost model, the CSD side simulated: CSVs and PNGs.
    Paper(PaperArgs),
    /// This machine: memory bandwidth vs the host attention kernels, FTL ops/s, simulator speed.
    Host(HostArgs),
    /// Record an attention trace of the real model for `bench paper --trace`.
    Trace(TraceArgs),
}

/// Arguments of `bench trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Text to run the model on (e.g. WikiText-2's wiki.test.raw).
    #[arg(long)]
    text: std::path::PathBuf,
    /// Output folder (k_L.npy, v_L.npy, q_L.npy per layer).
    #[arg(long)]
    out: std::path::PathBuf,
    /// Context tokens (the decode step's query comes after them).
    #[arg(long, default_value_t = 2048)]
    tokens: usize,
    /// A GGUF model instead of the cached SmolLM2-135M-Instruct.
    #[arg(long)]
    model: Option<std::path::PathBuf>,
}

/// Arguments of `bench host`.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// Tokens of the attention kernels.
    #[arg(long, default_value_t = 8192)]
    s: usize,
    /// KV heads.
    #[arg(long, default_value_t = 8)]
    kv_heads: usize,
    /// Head dimension (a multiple of 8).
    #[arg(long, default_value_t = 128)]
    d: usize,
    /// Repetitions (the best is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

/// Arguments of `bench paper`.
#[derive(Debug, clap::Args)]
pub struct PaperArgs {
    /// Figure: all, throughput, breakdown, csds, compression or channels.
    #[arg(long, default_value = "all")]
    figure: String,
    /// Output folder for the CSVs and PNGs.
    #[arg(long, default_value = "target/bench-paper")]
    out: std::path::PathBuf,
    /// Sequences decoded together in each simulated CSD point.
    #[arg(long, default_value_t = 2)]
    seqs: usize,
    /// Simulate only the shortest and longest context (a quick smoke run).
    #[arg(long)]
    quick: bool,
    /// An attention trace (`instinfer bench trace`) for the simulated KV and
    /// queries instead of synthetic data.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
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
        Command::Trace(a) => {
            let text = std::fs::read_to_string(&a.text)
                .map_err(|e| RunError::Input(format!("{}: {e}", a.text.display())))?;
            let model = super::model::load(a.model.as_deref())?;
            let tokens = model.tokenizer().encode(&text);
            if tokens.len() < a.tokens + 1 {
                return Err(RunError::Input(format!(
                    "{} holds {} tokens, {} needed",
                    a.text.display(),
                    tokens.len(),
                    a.tokens + 1
                )));
            }
            let t = host_driver::cost::trace::record(&model, &tokens[..a.tokens + 1])?;
            t.save(&a.out)?;
            println!(
                "trace: {} layers x {} KV heads ({} query heads) x {} tokens, d {} -> {}",
                t.layers(),
                t.kv_heads,
                t.q_heads,
                t.s,
                t.d,
                a.out.display()
            );
            Ok(())
        }
        Command::Host(a) => {
            let p = host_driver::run::bench_host::HostBenchParams {
                s: a.s,
                kv_heads: a.kv_heads,
                d: a.d,
                reps: a.reps,
            };
            print!("{}", host_driver::run::bench_host::run_host_bench(&p)?);
            Ok(())
        }
        Command::Paper(a) => {
            use host_driver::run::bench_paper::{Figure, PaperParams, run_paper};
            let figures = if a.figure == "all" {
                Figure::ALL.to_vec()
            } else {
                vec![Figure::parse(&a.figure).ok_or_else(|| {
                    RunError::Input(format!(
                        "--figure {}: not all, throughput, breakdown, csds, compression or channels",
                        a.figure
                    ))
                })?]
            };
            let source = match &a.trace {
                Some(dir) => {
                    host_driver::cost::KvSource::Trace(host_driver::cost::trace::Trace::load(dir)?)
                }
                None => host_driver::cost::KvSource::Synthetic,
            };
            let mut p = PaperParams {
                figures,
                out: a.out,
                seqs: a.seqs,
                source,
                ..PaperParams::default()
            };
            if a.quick {
                p.contexts = vec![1024, 2048];
            }
            print!("{}", run_paper(&p)?);
            Ok(())
        }
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
