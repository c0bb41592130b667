//! `cargo xtask hdl sim`: the Verilog co-simulation (`hdl`'s
//! `tests/verilog_cosim.rs`), at a larger scale than the default test run.

use std::process::Command;

/// Vector-count multiplier for `cargo xtask hdl sim`.
const SCALE: &str = "10";

/// Runs the co-simulation; fails if Icarus Verilog is missing (the plain
/// test skips instead).
pub fn sim() -> Result<(), String> {
    if !super::have("iverilog") {
        return Err("iverilog not found (apt install iverilog)".into());
    }
    let scale = std::env::var("HDL_COSIM_SCALE").unwrap_or_else(|_| SCALE.into());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    super::run(
        Command::new(cargo)
            .current_dir(super::root())
            .env("HDL_COSIM_SCALE", scale)
            .args([
                "test",
                "-p",
                "hdl",
                "--test",
                "verilog_cosim",
                "--",
                "--nocapture",
            ]),
    )
}
