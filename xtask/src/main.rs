//! `cargo xtask …`: project tasks that are more than one cargo call.
//!
//! - `cargo xtask tidy` — the repository's hygiene rules (module tables,
//!   Markdown links, empty files, reasons for `unsafe`, machine paths):
//!   see [`tidy`].
//! - `cargo xtask firmware` — builds the device core for the ARM cores of
//!   the OpenSSD boards (`armv7a-none-eabi`: Cosmos+ Cortex-A9,
//!   `aarch64-unknown-none`: Daisyplus Cortex-A53).
//! - `cargo xtask ci` — what CI runs: tidy, formatting, clippy, the test suite
//!   (the README's test command), the Python package's wheel and pytest
//!   suite, the `cuda` feature's build and tests,
//!   the firmware cross-builds (the no_std
//!   crates, both OpenSSD board images, the C ABI for
//!   `x86_64-unknown-none`), both QEMU boards' end-to-end tests, the
//!   guest test of the Linux NVMe transports, a short run of every fuzz
//!   target, and the engine's Verilog
//!   generation and lint.
//! - `cargo xtask hdl <gen|lint|sim|synth>` — the engine's Verilog: see
//!   [`hdl`].
//! - `cargo xtask qemu --board zynqmp|zynq7000 [--test]` — the firmware
//!   under QEMU: see [`qemu`].
//! - `cargo xtask guest-test` — the Linux NVMe transports in a QEMU x86
//!   guest: see [`guest`].
//! - `cargo xtask nvmevirt build --src TARBALL` — NVMeVirt with the InstCSD
//!   target as a kernel module for the guest's kernel: see [`nvmevirt`].
//! - `cargo xtask python [--no-hf]` — the Python package built as a wheel
//!   and tested in a fresh venv: see [`python`].
//! - `cargo xtask fuzz [--seconds N | --runs N] [--target T] [--sanitizer S]` — the cargo-fuzz
//!   targets in `fuzz/`: see [`fuzz`].
//! - `cargo xtask flash --board daisyplus|cosmos-plus` — what a real board
//!   needs, and the vendor tools where present: see [`flash`].
//!
//! | module | owns |
//! | --- | --- |
//! | [`tidy`] | `cargo xtask tidy`: the repository's hygiene rules over the tracked files |
//! | [`hdl`] | `cargo xtask hdl`: the engine's Verilog generation, lint, co-simulation and synthesis |
//! | [`qemu`] | `cargo xtask qemu`: the firmware under QEMU, its end-to-end test or a CLI demo |
//! | [`guest`] | `cargo xtask guest-test`: the Linux NVMe transports in a QEMU x86 guest |
//! | [`nvmevirt`] | `cargo xtask nvmevirt build`: NVMeVirt with the InstCSD target, for the guest's kernel |
//! | [`python`] | `cargo xtask python`: the wheel in a fresh venv, its pytest suite and example |
//! | [`fuzz`] | `cargo xtask fuzz`: every cargo-fuzz target on its committed corpus |
//! | [`flash`] | `cargo xtask flash`: what a real board needs, and the vendor tools where present |
#![forbid(unsafe_code)]

mod flash;
mod fuzz;
mod guest;
mod hdl;
mod nvmevirt;
mod python;
mod qemu;
mod tidy;

use std::process::{Command, ExitCode};

/// The bare-metal targets the firmware must build for.
const FIRMWARE_TARGETS: [&str; 2] = ["armv7a-none-eabi", "aarch64-unknown-none"];

/// Crates that are `no_std` and must cross-build.
const NO_STD_CRATES: [&str; 4] = ["proto", "attention", "ftl", "firmware"];

fn cargo(args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// The model's NEON kernels: the quant tests (every instruction set against
/// the scalar path, bit for bit) built for aarch64 Linux and run under
/// qemu-user (`qemu-aarch64`), linked with the cross gcc.
fn neon_kernels() -> Result<(), String> {
    let args = [
        "test",
        "--release",
        "-p",
        "model",
        "--lib",
        "--target",
        "aarch64-unknown-linux-gnu",
        "quant",
    ];
    eprintln!("$ cargo {} (qemu-aarch64)", args.join(" "));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(args)
        .env(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
            "aarch64-linux-gnu-gcc",
        )
        .env(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
            "qemu-aarch64 -L /usr/aarch64-linux-gnu",
        )
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the NEON kernel tests failed ({status})"))
    }
}

/// The real boards' images: (package, target).
const BOARD_IMAGES: [(&str, &str); 2] = [
    ("board-daisyplus", "aarch64-unknown-none"),
    ("board-cosmos-plus", "armv7a-none-eabi"),
];

fn firmware() -> Result<(), String> {
    for target in FIRMWARE_TARGETS {
        let mut args = vec!["build", "--release", "--target", target];
        for c in NO_STD_CRATES {
            args.extend(["-p", c]);
        }
        cargo(&args)?;
    }
    for (package, target) in BOARD_IMAGES {
        cargo(&["build", "--release", "-p", package, "--target", target])?;
        cargo(&[
            "clippy", "-p", package, "--target", target, "--", "-D", "warnings",
        ])?;
    }
    // The C ABI as an emulator's kernel module would link it.
    cargo(&[
        "build",
        "--release",
        "-p",
        "board-cabi",
        "--target",
        "x86_64-unknown-none",
    ])
}

fn ci() -> Result<(), String> {
    tidy::main()?;
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    cargo(&["test", "--workspace"])?;
    // The Python package from a wheel in a fresh venv: its pytest suite
    // (the transformers adaptor's included), the example.
    python::main(&[])?;
    // GPU memory through CUDA: builds without the toolkit (the driver is
    // loaded at run time); on a machine without a GPU its tests check
    // that every path reports the missing driver instead of panicking.
    cargo(&[
        "clippy",
        "-p",
        "gpu",
        "-p",
        "host-driver",
        "-p",
        "instinfer",
        "--features",
        "gpu/cuda,host-driver/cuda,instinfer/cuda",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    cargo(&["test", "-p", "gpu", "--features", "cuda"])?;
    neon_kernels()?;
    firmware()?;
    for board in ["zynqmp", "zynq7000"] {
        qemu::test(board)?;
    }
    // NVMeVirt with the InstCSD target, for the guest test: its source
    // is a CI input (no registry serves it), which CI must pass.
    match std::env::var_os(nvmevirt::SRC_ENV) {
        Some(src) => {
            nvmevirt::build(std::path::Path::new(&src))?;
        }
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            return Err(format!(
                "CI=true but {} is not set: the NVMeVirt guest test would be skipped",
                nvmevirt::SRC_ENV
            ));
        }
        None => eprintln!(
            "{} not set: the guest test skips NVMeVirt",
            nvmevirt::SRC_ENV
        ),
    }
    // The Linux NVMe transports in an x86 guest against QEMU's NVMe drive
    // (and NVMeVirt's, when its module was built).
    guest::main()?;
    // Every fuzz target briefly, on its committed corpus.
    fuzz::main(&["--seconds".into(), "10".into()])?;
    // The engine's Verilog: generated (by `lint` itself) and linted; the
    // co-simulation runs inside the test suite when iverilog is installed.
    hdl::main(Some("lint"))
}

fn main() -> ExitCode {
    let task = std::env::args().nth(1);
    let result = match task.as_deref() {
        Some("firmware") => firmware(),
        Some("tidy") => tidy::main(),
        Some("ci") => ci(),
        Some("hdl") => hdl::main(std::env::args().nth(2).as_deref()),
        Some("flash") => flash::main(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("qemu") => qemu::main(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("guest-test") => guest::main(),
        Some("fuzz") => fuzz::main(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("nvmevirt") => nvmevirt::main(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("python") => python::main(&std::env::args().skip(2).collect::<Vec<_>>()),
        _ => Err(
            "usage: cargo xtask <tidy|firmware|ci|hdl|qemu|flash|guest-test|fuzz|nvmevirt|python>"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
