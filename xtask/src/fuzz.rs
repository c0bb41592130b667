//! `cargo xtask fuzz [--seconds N] [--target T]`: every cargo-fuzz target
//! in `fuzz/` for N seconds (default 10) on its committed corpus
//! (`fuzz/corpus/<target>`, which grows as libFuzzer finds new coverage),
//! then a table of executions per target. A crash stops the run with the
//! reproducer's path (`fuzz/artifacts/<target>/`).
//!
//! Needs the nightly toolchain and cargo-fuzz (`.ci/run` installs both).

use std::process::Command;

use crate::hdl::root;

/// The targets, cheapest first.
pub const TARGETS: [&str; 6] = [
    "tcp_pdu",
    "nvme_wire",
    "npy",
    "gguf",
    "firmware_dispatch",
    "ftl_ops",
];

/// Runs the targets.
pub fn main(args: &[String]) -> Result<(), String> {
    let mut seconds = 10u64;
    let mut only: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                seconds = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|&s| s > 0)
                    .ok_or("--seconds needs a positive number")?;
            }
            "--target" => only = Some(it.next().ok_or("--target needs a name")?.clone()),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (--seconds N, --target T)"
                ));
            }
        }
    }
    if let Some(t) = &only {
        if !TARGETS.contains(&t.as_str()) {
            return Err(format!(
                "unknown fuzz target {t:?} ({})",
                TARGETS.join(", ")
            ));
        }
    }
    let dir = root().join("fuzz");
    let mut rows = Vec::new();
    for t in TARGETS
        .iter()
        .filter(|t| only.as_deref().is_none_or(|o| o == **t))
    {
        let corpus = dir.join("corpus").join(t);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        eprintln!("$ cargo +nightly fuzz run {t} ({seconds} s)");
        let out = Command::new("cargo")
            .current_dir(&dir)
            .args(["+nightly", "fuzz", "run", t])
            .arg(&corpus)
            .args([
                "--",
                &format!("-max_total_time={seconds}"),
                "-print_final_stats=1",
            ])
            .output()
            .map_err(|e| format!("cargo +nightly fuzz: {e} (install: cargo install cargo-fuzz)"))?;
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            return Err(format!(
                "fuzz target {t} failed ({}):\n{}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        let runs = log
            .lines()
            .filter_map(|l| l.strip_prefix("Done "))
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .next_back()
            .unwrap_or(0);
        let files = std::fs::read_dir(&corpus).map(|d| d.count()).unwrap_or(0);
        rows.push((*t, runs, files));
    }
    println!(
        "{:<18} {:>14} {:>12} {:>13}",
        "target", "executions", "per second", "corpus files"
    );
    for (t, runs, files) in rows {
        println!(
            "{t:<18} {runs:>14} {:>12.0} {files:>13}",
            runs as f64 / seconds as f64
        );
    }
    println!("no crash in {seconds} s per target");
    Ok(())
}
