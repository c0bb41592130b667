//! Writes each block's Verilog to a directory (default `target/hdl`):
//! `<block>.v`, a module named after the block. Run by `cargo xtask hdl
//! gen`; `hdl-gen DIR BLOCK…` writes only the named blocks.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "target/hdl".into()));
    let only: Vec<String> = args.collect();
    std::fs::create_dir_all(&dir)?;
    for name in hdl::BLOCKS {
        if !only.is_empty() && !only.iter().any(|b| b == name) {
            continue;
        }
        let verilog = hdl::block(name).ok_or_else(|| std::io::Error::other(name))?;
        let path = dir.join(format!("{name}.v"));
        std::fs::write(&path, verilog)?;
        println!("{}", path.display());
    }
    Ok(())
}
