//! Writes each block's Verilog to a directory (default `target/hdl`):
//! `<block>.v`, a module `top`. Run by `cargo xtask hdl gen`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/hdl".into()),
    );
    std::fs::create_dir_all(&dir)?;
    for (name, verilog) in hdl::blocks() {
        let path = dir.join(format!("{name}.v"));
        std::fs::write(&path, verilog)?;
        println!("{}", path.display());
    }
    Ok(())
}
