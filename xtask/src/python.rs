//! `cargo xtask python [--no-hf]`: the Python package as a user gets it.
//! In a fresh venv (`target/python-ci/venv`): maturin builds the wheel
//! (release, as `pip install .` does), pip installs it with numpy and
//! pytest, pytest runs `python/tests` (the Rust-equality test against the
//! `instinfer` binary the test suite builds), and the example
//! `decode_loop.py` runs. With torch and
//! transformers installed too (unless `--no-hf`), the transformers
//! adaptor's tests run as well.

use std::path::PathBuf;
use std::process::Command;

use crate::hdl::run;

pub fn main(args: &[String]) -> Result<(), String> {
    let hf = match args {
        [] => true,
        [a] if a == "--no-hf" => false,
        _ => return Err("usage: cargo xtask python [--no-hf]".into()),
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let work = root.join("target/python-ci");
    let venv = work.join("venv");
    let wheels = work.join("wheels");
    for d in [&venv, &wheels] {
        if d.exists() {
            std::fs::remove_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    let bin = |name: &str| venv.join("bin").join(name);
    let mut deps = vec!["maturin>=1.9.4,<2", "numpy", "pytest"];
    if hf {
        deps.extend(["torch", "transformers"]);
    }
    let t = std::time::Instant::now();
    run(Command::new(bin("pip")).args(["install", "-q"]).args(&deps))?;
    eprintln!(
        "python: installing {deps:?} took {:.0} s",
        t.elapsed().as_secs_f64()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // The `instinfer` binary the equality test compares with (what the
    // test suite builds for its own integration tests).
    run(Command::new(&cargo)
        .current_dir(&root)
        .args(["test", "--workspace", "--no-run"]))?;
    run(Command::new(bin("maturin"))
        .current_dir(&root)
        .args(["build", "--release", "--out"])
        .arg(&wheels)
        .env("VIRTUAL_ENV", &venv))?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("{}: {e}", wheels.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin built no wheel")?;
    run(Command::new(bin("pip")).args(["install", "-q"]).arg(&wheel))?;
    // From a directory without the source tree, so the installed package
    // is the one imported.
    let bin_path = root.join("target/debug/instinfer");
    run(Command::new(bin("python"))
        .current_dir(&work)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .env("INSTINFER_BIN", &bin_path)
        .env("INSTINFER_REQUIRE_HF", if hf { "1" } else { "0" }))?;
    run(Command::new(bin("python"))
        .current_dir(&work)
        .arg(root.join("examples/python/decode_loop.py"))
        .args(["--steps", "2", "--prompt", "256"]))
}
