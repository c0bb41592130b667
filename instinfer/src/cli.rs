//! Command-line surface: one file per subcommand, each turning its
//! arguments into a call of [`instinfer::run`].

mod attend;
mod bench;
mod demo;
mod discover;
mod eval;
mod gpu;
mod guard;
mod identify;
mod model;
mod pages;
mod passkey;
mod run;
mod serve;
mod ssd;

use clap::{Parser, Subcommand};
use instinfer::RunError;
use instinfer::device::DeviceSpec;

/// InstInfer host: decode attention inside a computational SSD (simulated by default).
#[derive(Debug, Parser)]
#[command(name = "instinfer", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate text with the decode attention in the drive (the main job).
    Run(run::Args),
    /// Perplexity per attention method and compression, as CSV and a chart.
    Eval(eval::Args),
    /// Passkey retrieval: the share of trials in which each method finds a key hidden in a long prompt.
    Passkey(passkey::Args),
    /// Redraw the chart of an evaluation from its CSV.
    Plot(eval::PlotArgs),
    /// The known models: fetch one into the cache, print where it is, list them.
    #[command(subcommand)]
    Model(model::Command),
    /// Print the drive's InstCSD capability block.
    Identify(identify::Args),
    /// One decode step through the drive on .npy inputs.
    Attend(attend::Args),
    /// Multi-layer, multi-sequence decode loop checked against the host reference.
    Demo(demo::Args),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(bench::Command),
    /// The GPU and which peer-to-peer DMA paths to a drive this machine accepts.
    Gpu(gpu::Args),
    /// Serve the simulated CSD as an NVMe/TCP target (kernel `nvme connect`, `--device tcp://…`).
    Serve(serve::Args),
    /// Read an NVMe/TCP target's Discovery Log Page (`nvme discover`).
    Discover(discover::Args),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<(), RunError> {
    match cli.command {
        Command::Run(a) => run::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Passkey(a) => passkey::run(a),
        Command::Plot(a) => eval::plot_csv(a),
        Command::Model(c) => model::run(c),
        Command::Identify(a) => identify::run(a),
        Command::Attend(a) => attend::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Bench(c) => bench::run(c),
        Command::Serve(a) => serve::run(a),
        Command::Discover(a) => discover::run(a),
        Command::Gpu(a) => gpu::run(a),
    }
}

/// Flash page sizes the simulator models.
pub(crate) fn page_size_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(["4096", "16384"])
}

/// `--device`: `sim`, `qemu:zynqmp` or `qemu:zynq7000`.
pub(crate) fn device_parser(s: &str) -> Result<DeviceSpec, String> {
    DeviceSpec::parse(s)
}

/// Parses the value [`page_size_parser`] accepted.
pub(crate) fn page_size(s: &str) -> u32 {
    if s == "16384" { 16384 } else { 4096 }
}
