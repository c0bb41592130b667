//! `instinfer`: the InstInfer host CLI, on the simulated drive by default.
//!
//! Exit status: 0 on success, 2 for bad input (files, shapes, dtypes,
//! parameters; clap's usage errors too), 1 when a device fails.
#![forbid(unsafe_code)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("instinfer: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
