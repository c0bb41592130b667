//! `cargo xtask hdl lint`: `verilator --lint-only -Wall` on each block.
//!
//! Waivers, each for a pattern of rust-hdl 0.46's code generator rather
//! than of the design:
//!
//! - `WIDTH`: rust-hdl prints every integer literal as a 32-bit constant
//!   (`x = 32'h0`, `c + 32'h1`), whatever the width of the signal. Verilog
//!   then truncates on assignment, which is exactly the modular `Bits<N>`
//!   arithmetic the Rust simulation does; the blocks keep every sum in a
//!   local of the target width before comparing it, so no comparison sees
//!   a widened carry. The Verilog co-simulation checks the result bit for
//!   bit.
//! - `DECLFILENAME`: rust-hdl writes a block and its leaf register modules
//!   (`top$…`) into one file, so only one module can match the file name
//!   (the block's top module does).
//! - `UNUSEDPARAM`: rust-hdl repeats an enum's `localparam`s in every
//!   module that holds a value of that enum type, including the state
//!   register's leaf module, which only passes it through.
//!
//! Waivers of one signal in one design are in `hdl/lint.vlt`, with their
//! reasons.

use std::process::Command;

/// The waived warnings (see the module docs).
const WAIVERS: [&str; 3] = ["-Wno-WIDTH", "-Wno-DECLFILENAME", "-Wno-UNUSEDPARAM"];

/// Lints every generated block.
pub fn lint() -> Result<(), String> {
    if !super::have("verilator") {
        return Err("verilator not found (apt install verilator)".into());
    }
    let files = super::generate::verilog()?;
    let mut failed = Vec::new();
    for f in &files {
        let mut cmd = Command::new("verilator");
        cmd.args(["--lint-only", "-Wall"])
            .args(WAIVERS)
            .arg(super::root().join("hdl/lint.vlt"))
            .arg(f);
        if super::run(&mut cmd).is_err() {
            failed.push(f.display().to_string());
        } else {
            println!("lint clean: {}", f.display());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("verilator lint failed: {}", failed.join(", ")))
    }
}
