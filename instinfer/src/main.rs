//! `instinfer`: the InstInfer host CLI, on the simulated drive by default.
//!
//! Exit status: 0 on success, 2 for bad input (files, shapes, dtypes,
//! parameters; clap's usage errors too), 1 when a device fails, 130 when
//! Ctrl-C stopped a job (after it closed its sequences).
#![forbid(unsafe_code)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // Ctrl-C: the running job stops at its next step and cleans up; a
    // second Ctrl-C ends the process at once.
    let _ = ctrlc::set_handler(|| {
        if instinfer::run::cancel::request() {
            std::process::exit(130);
        }
        eprintln!("\ninstinfer: stopping after this step (Ctrl-C again to quit now)");
    });
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("instinfer: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
