//! `cargo bench -p host-driver`: the `instinfer bench attend` table with
//! default settings (host dense vs in-storage dense vs in-storage SparF).
//! Prints only; never passes or fails on time.

use instinfer::run::bench::{BenchParams, run_bench};

fn main() {
    match run_bench(&BenchParams::default()) {
        Ok(report) => println!("{report}"),
        Err(e) => {
            eprintln!("bench attend: {e}");
            std::process::exit(1);
        }
    }
}
