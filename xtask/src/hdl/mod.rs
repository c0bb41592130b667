//! `cargo xtask hdl <gen|lint|sim|synth>`: the Verilog flow of the `hdl`
//! crate (the in-storage attention engine in rust-hdl).
//!
//! - `gen` — writes each block's Verilog to `target/hdl/<block>.v` (the
//!   `hdl-gen` binary of the `hdl` crate, so xtask needs no rust-hdl).
//! - `lint` — `verilator --lint-only -Wall` on each block (waivers in
//!   [`lint`]).
//! - `sim` — the Verilog co-simulation: the `hdl` crate's
//!   `tests/verilog_cosim.rs` (Icarus Verilog on vectors the model dumps,
//!   compared bit for bit), at `HDL_COSIM_SCALE` (default here 10; CI's
//!   plain `cargo test` runs scale 1).
//! - `synth` — `yosys synth_xilinx` for `xc7` (Cosmos+ XC7Z045) and `xcup`
//!   (Daisyplus ZU17EG); prints the resource table, with the cells on each
//!   block's longest path between registers (yosys `ltp` without the
//!   flip-flops: LUTs, MUXF7/8, carry cells, other cells), and writes it to
//!   `target/hdl/resources.md`.

// `gen` is a reserved keyword in edition 2024; the file keeps the task name.
#[path = "gen.rs"]
mod generate;
mod lint;
mod sim;
mod synth;

use std::path::PathBuf;
use std::process::Command;

/// The workspace root (xtask lives one level below it).
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `target/hdl` of the workspace.
fn out_dir() -> PathBuf {
    root().join("target").join("hdl")
}

/// Runs a tool, echoing the command; errors if it cannot start or fails.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed ({status})", cmd.get_program()))
    }
}

/// Whether `tool` is on the PATH (it answers `-V`, which verilator, yosys
/// and iverilog all take).
fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `cargo xtask hdl <sub>`.
pub fn main(sub: Option<&str>) -> Result<(), String> {
    match sub {
        Some("gen") => generate::verilog().map(drop),
        Some("lint") => lint::lint(),
        Some("sim") => sim::sim(),
        Some("synth") => synth::synth(&std::env::args().skip(3).collect::<Vec<_>>()),
        _ => Err("usage: cargo xtask hdl <gen|lint|sim|synth [block…]>".into()),
    }
}
