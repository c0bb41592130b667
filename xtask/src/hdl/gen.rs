//! `cargo xtask hdl gen`.

use std::path::PathBuf;
use std::process::Command;

/// Generates every block's Verilog into `target/hdl`; returns the files.
pub fn verilog() -> Result<Vec<PathBuf>, String> {
    let dir = super::out_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(super::root())
        .args(["run", "-q", "-p", "hdl", "--bin", "hdl-gen", "--"])
        .arg(&dir);
    eprintln!("$ {cmd:?}");
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "hdl-gen failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    for f in &files {
        println!("wrote {}", f.display());
    }
    if files.is_empty() {
        return Err("hdl-gen wrote no blocks".into());
    }
    Ok(files)
}
