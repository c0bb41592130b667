//! `cargo xtask flash --board daisyplus|cosmos-plus [--project P.xpr]
//! [--jtag]` — everything a board needs, in `target/flash/<board>/`:
//!
//! 1. the firmware ELF (`cargo build --release` for the board's target);
//! 2. the engine's Verilog (`cargo xtask hdl gen`, the `hdl-gen` binary)
//!    and a wrapper that makes it a block-design module reference;
//! 3. the Vivado script that adds the engine to the OpenSSD block design
//!    and builds the bitstream and the exported hardware, the xsct
//!    scripts for the boot loaders and for JTAG loading, the bootgen BIF,
//!    and a README listing each file.
//!
//! Then, when `vivado`, `xsct` and `bootgen` are all on `PATH`, it runs
//! them: Vivado on the project given with `--project`, xsct for the boot
//! loaders, bootgen for `BOOT.BIN`, and with `--jtag` xsct again to load
//! the board over JTAG. Whatever is missing is named, what was produced is
//! listed, and it ends with "not flashed" (exit 0) — it only says a board
//! was flashed after the JTAG load ran and succeeded.

mod bif;
mod board;
mod readme;
mod tcl;
mod tools;
mod wrapper;
mod xsct;

use std::path::{Path, PathBuf};
use std::process::Command;

use board::Board;

const USAGE: &str =
    "usage: cargo xtask flash --board <daisyplus|cosmos-plus> [--project <OpenSSD .xpr>] [--jtag]";

/// What was asked for.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    board: Board,
    project: Option<PathBuf>,
    jtag: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut board = None;
    let mut project = None;
    let mut jtag = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--board" => {
                let name = it.next().ok_or(USAGE)?;
                board = Some(
                    board::by_name(name)
                        .ok_or_else(|| format!("unknown board `{name}`; {USAGE}"))?,
                );
            }
            "--project" => project = Some(PathBuf::from(it.next().ok_or(USAGE)?)),
            "--jtag" => jtag = true,
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        }
    }
    Ok(Args {
        board: board.ok_or(USAGE)?,
        project,
        jtag,
    })
}

/// The generated text files of `board`, as (file name, contents).
fn scripts(board: &Board) -> Vec<(&'static str, String)> {
    vec![
        ("add_engine.tcl", tcl::script(board)),
        ("boot.tcl", xsct::boot(board)),
        ("boot.bif", bif::bif(board)),
        ("jtag.tcl", xsct::jtag(board)),
        ("README.txt", readme::readme(board)),
    ]
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn write(path: &Path, contents: &[u8]) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

/// Runs a Xilinx tool in `dir`, echoing it.
fn run_tool(dir: &Path, tool: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("$ (cd {}) {tool} {}", dir.display(), args.join(" "));
    let status = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .status()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{tool} failed ({status})"))
    }
}

/// Writes the bundle of `board` into `out`; returns the files written.
fn bundle(board: &Board, out: &Path) -> Result<Vec<PathBuf>, String> {
    let root = root();
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut files = Vec::new();

    crate::cargo(&[
        "build",
        "--release",
        "-p",
        board.package,
        "--bin",
        board.bin,
        "--target",
        board.target,
    ])?;
    let elf = out.join(board.elf());
    copy(
        &root
            .join("target")
            .join(board.target)
            .join("release")
            .join(board.bin),
        &elf,
    )?;
    files.push(elf);

    crate::hdl::main(Some("gen"))?;
    let v = root.join("target").join("hdl").join("engine.v");
    let verilog =
        std::fs::read_to_string(&v).map_err(|e| format!("cannot read {}: {e}", v.display()))?;
    let engine = out.join("engine.v");
    write(&engine, verilog.as_bytes())?;
    files.push(engine);
    let wrapped = out.join("instcsd_engine.v");
    write(
        &wrapped,
        wrapper::wrapper(&wrapper::engine_ports(&verilog)?).as_bytes(),
    )?;
    files.push(wrapped);

    for (name, text) in scripts(board) {
        let p = out.join(name);
        write(&p, text.as_bytes())?;
        files.push(p);
    }
    Ok(files)
}

/// `cargo xtask flash …`.
pub fn main(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let b = a.board;
    let out = root().join("target").join("flash").join(b.name);
    let files = bundle(&b, &out)?;
    println!("{} ({}): wrote", b.name, b.part);
    for f in &files {
        println!("  {}", f.display());
    }

    let missing = tools::missing(&std::env::var("PATH").unwrap_or_default());
    if !missing.is_empty() {
        println!("missing on PATH: {}", missing.join(", "));
        println!(
            "not flashed: install the Xilinx tools (Vivado, Vitis: xsct, bootgen) and run again, or follow {}",
            out.join("README.txt").display()
        );
        return Ok(());
    }
    let Some(project) = a.project else {
        println!("not flashed: vivado needs the board's OpenSSD project: --project <path to .xpr>");
        return Ok(());
    };
    let project = project
        .canonicalize()
        .map_err(|e| format!("project {}: {e}", project.display()))?;
    let project = project.to_string_lossy();
    run_tool(
        &out,
        "vivado",
        &[
            "-mode",
            "batch",
            "-source",
            "add_engine.tcl",
            "-tclargs",
            &project,
        ],
    )?;
    run_tool(&out, "xsct", &["boot.tcl"])?;
    run_tool(
        &out,
        "bootgen",
        &[
            "-arch",
            b.bootgen_arch,
            "-image",
            "boot.bif",
            "-o",
            "BOOT.BIN",
            "-w",
            "on",
        ],
    )?;
    println!("built {}", out.join("BOOT.BIN").display());
    if a.jtag {
        run_tool(&out, "xsct", &["jtag.tcl"])?;
        println!(
            "flashed over JTAG: bitstream and firmware loaded and started on the board (until power-off)"
        );
    } else {
        println!("not flashed: copy BOOT.BIN to the board's SD card, or run again with --jtag");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::board::{COSMOS_PLUS, DAISYPLUS};
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse(&args(&["--board", "daisyplus"])),
            Ok(Args {
                board: DAISYPLUS,
                project: None,
                jtag: false
            })
        );
        assert_eq!(
            parse(&args(&[
                "--jtag",
                "--board",
                "cosmos-plus",
                "--project",
                "p.xpr"
            ])),
            Ok(Args {
                board: COSMOS_PLUS,
                project: Some(PathBuf::from("p.xpr")),
                jtag: true
            })
        );
        assert!(parse(&args(&[])).is_err());
        assert!(parse(&args(&["--board"])).is_err());
        assert!(parse(&args(&["--board", "zcu102"])).is_err());
        assert!(parse(&args(&["--board", "daisyplus", "--fast"])).is_err());
    }

    #[test]
    fn every_script_names_files_the_bundle_has() {
        for b in [DAISYPLUS, COSMOS_PLUS] {
            let s = scripts(&b);
            let names: Vec<&str> = s.iter().map(|(n, _)| *n).collect();
            assert_eq!(
                names,
                [
                    "add_engine.tcl",
                    "boot.tcl",
                    "boot.bif",
                    "jtag.tcl",
                    "README.txt"
                ]
            );
            let bif = &s[2].1;
            assert!(bif.contains(&b.elf()) && bif.contains(&b.bit()));
        }
    }
}
