//! `cargo xtask fuzz [--seconds N | --runs N] [--target T] [--sanitizer S]`:
//! every cargo-fuzz target in `fuzz/` for N seconds (default 10) or N
//! executions on its committed corpus (`fuzz/corpus/<target>`, which grows
//! as libFuzzer finds new coverage), then a table of executions per target.
//! A crash, or an input slower than 10 s, stops the run with the
//! reproducer's path (`fuzz/artifacts/<target>/`).
//!
//! `--sanitizer` is cargo-fuzz's: `address` (the default) or `none`. Every
//! crate the targets reach forbids unsafe code, so AddressSanitizer checks
//! only the standard library's and dependencies' unsafe blocks; `none` runs
//! the simulation targets about four times faster, which is what the long
//! documented runs use.
//!
//! Needs the nightly toolchain and cargo-fuzz (`.ci/run` installs both).

use std::process::Command;
use std::time::Instant;

use crate::hdl::root;

/// The targets, cheapest first.
pub const TARGETS: [&str; 8] = [
    "auth_msg",
    "auth_exchange",
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
    let mut runs_limit: Option<u64> = None;
    let mut sanitizer = "address".to_string();
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
            "--runs" => {
                runs_limit = Some(
                    it.next()
                        .and_then(|s| s.parse().ok())
                        .filter(|&s| s > 0)
                        .ok_or("--runs needs a positive number")?,
                );
            }
            "--sanitizer" => {
                sanitizer = it.next().ok_or("--sanitizer needs a name")?.clone();
                if !matches!(sanitizer.as_str(), "address" | "none") {
                    return Err(format!("unknown sanitizer {sanitizer:?} (address, none)"));
                }
            }
            "--target" => only = Some(it.next().ok_or("--target needs a name")?.clone()),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (--seconds N, --runs N, --target T, --sanitizer S)"
                ));
            }
        }
    }
    if let Some(t) = &only
        && !TARGETS.contains(&t.as_str())
    {
        return Err(format!(
            "unknown fuzz target {t:?} ({})",
            TARGETS.join(", ")
        ));
    }
    let dir = root().join("fuzz");
    let mut rows = Vec::new();
    for t in TARGETS
        .iter()
        .filter(|t| only.as_deref().is_none_or(|o| o == **t))
    {
        let corpus = dir.join("corpus").join(t);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let limit = match runs_limit {
            Some(n) => format!("-runs={n}"),
            None => format!("-max_total_time={seconds}"),
        };
        eprintln!("$ cargo +nightly fuzz run -s {sanitizer} {t} ({limit})");
        let started = Instant::now();
        let out = Command::new("cargo")
            .current_dir(&dir)
            .args(["+nightly", "fuzz", "run", "-s", &sanitizer, t])
            .arg(&corpus)
            .args(["--", &limit, "-timeout=10", "-print_final_stats=1"])
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
        // libFuzzer's last line: "Done N runs in S second(s)"; S excludes
        // the build.
        let (runs, secs) = log
            .lines()
            .filter_map(|l| l.strip_prefix("Done "))
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                Some((
                    w.first()?.parse::<u64>().ok()?,
                    w.get(3)?.parse::<f64>().ok()?,
                ))
            })
            .next_back()
            .unwrap_or((0, 0.0));
        let files = std::fs::read_dir(&corpus).map(|d| d.count()).unwrap_or(0);
        let wall = if secs > 0.0 {
            secs
        } else {
            started.elapsed().as_secs_f64()
        };
        rows.push((*t, runs, files, wall));
    }
    println!(
        "{:<18} {:>14} {:>10} {:>12} {:>13}",
        "target", "executions", "wall s", "per second", "corpus files"
    );
    for (t, runs, files, wall) in rows {
        println!(
            "{t:<18} {runs:>14} {wall:>10.0} {:>12.0} {files:>13}",
            runs as f64 / wall.max(1e-3)
        );
    }
    println!("no crash, no input over 10 s (sanitizer: {sanitizer})");
    Ok(())
}
