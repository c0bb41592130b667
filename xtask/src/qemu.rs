//! `cargo xtask qemu --board zynqmp|zynq7000 [--test]`: builds the board's
//! firmware for its target, then either runs the end-to-end check (`--test`:
//! the `qemu` test of `host-driver`, which boots the firmware for both page
//! sizes and compares every output bit for bit with the simulated board,
//! and checks that failures exit QEMU non-zero) or shows it working through
//! the CLI (`instinfer identify` and `instinfer demo` with `--device
//! qemu:<board>`).

use crate::cargo;

/// A QEMU board: name, firmware package and target.
struct Board {
    name: &'static str,
    package: &'static str,
    target: &'static str,
}

const BOARDS: [Board; 2] = [
    Board {
        name: "zynqmp",
        package: "board-qemu-zynqmp",
        target: "aarch64-unknown-none",
    },
    Board {
        name: "zynq7000",
        package: "board-qemu-zynq7000",
        target: "armv7a-none-eabi",
    },
];

/// Builds a board's firmware (release), with its debug-level log points
/// (`DEFMT_LOG=debug`: one log frame per command).
pub fn build(name: &str) -> Result<(), String> {
    let b = board(name)?;
    let args = ["build", "--release", "-p", b.package, "--target", b.target];
    eprintln!("$ DEFMT_LOG=debug cargo {}", args.join(" "));
    let status =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(args)
            .env("DEFMT_LOG", "debug")
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("building the {name} firmware failed ({status})"))
    }
}

fn board(name: &str) -> Result<&'static Board, String> {
    BOARDS
        .iter()
        .find(|b| b.name == name)
        .ok_or_else(|| format!("unknown board {name:?} (zynqmp or zynq7000)"))
}

/// Builds and runs the board's end-to-end test.
pub fn test(name: &str) -> Result<(), String> {
    build(name)?;
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let args = [
        "test",
        "--release",
        "-p",
        "host-driver",
        "--test",
        "it",
        "--",
        "qemu::",
        "--nocapture",
    ];
    eprintln!("$ INSTINFER_QEMU_REQUIRED={name} cargo {}", args.join(" "));
    let status = std::process::Command::new(cargo_bin)
        .args(args)
        .env("INSTINFER_QEMU_REQUIRED", name)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the {name} QEMU test failed ({status})"))
    }
}

/// `cargo xtask qemu …`.
pub fn main(args: &[String]) -> Result<(), String> {
    let mut name = None;
    let mut run_test = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--board" => name = it.next().cloned(),
            "--test" => run_test = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let name = name.ok_or("usage: cargo xtask qemu --board zynqmp|zynq7000 [--test]")?;
    board(&name)?;
    if run_test {
        return test(&name);
    }
    build(&name)?;
    let device = format!("qemu:{name}");
    cargo(&[
        "run",
        "--release",
        "-q",
        "-p",
        "instinfer",
        "--bin",
        "instinfer",
        "--",
        "identify",
        "--device",
        &device,
    ])?;
    cargo(&[
        "run",
        "--release",
        "-q",
        "-p",
        "instinfer",
        "--bin",
        "instinfer",
        "--",
        "demo",
        "--device",
        &device,
        "--seqs",
        "2",
        "--layers",
        "2",
        "--prompt",
        "256",
        "--steps",
        "8",
    ])
}
