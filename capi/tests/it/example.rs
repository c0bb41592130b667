//! Compiles `examples/c/decode.c` against the header and the
//! `libinstinfer.so` cargo built beside this test, and runs it on the
//! simulated drive: it exits 0 only if the drive's outputs match its own
//! attention and a bad call is refused.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The directory holding this test's crate's own cdylib: cargo writes it
/// into `deps/` beside the test (and copies it one level up only when the
/// library itself was asked for, as `cargo build` does).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let deps = exe
        .parent()
        .expect("the test runs from <target>/<profile>/deps");
    [Some(deps), deps.parent()]
        .into_iter()
        .flatten()
        .find(|dir| dir.join("libinstinfer.so").is_file())
        .unwrap_or_else(|| panic!("libinstinfer.so not built beside {}", exe.display()))
        .to_path_buf()
}

#[test]
fn the_c_example_runs_on_the_simulated_drive() {
    let lib_dir = lib_dir();
    let exe = lib_dir.join("instinfer-decode-example");
    let gcc = Command::new("gcc")
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("capi/include"))
        .arg(root().join("examples/c/decode.c"))
        .arg("-L")
        .arg(&lib_dir)
        .args(["-linstinfer", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("run gcc");
    assert!(
        gcc.status.success(),
        "gcc failed:\n{}",
        String::from_utf8_lossy(&gcc.stderr)
    );
    let run = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &lib_dir)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("max |drive - host|"), "{stdout}");
    assert!(stdout.contains("refused as expected"), "{stdout}");
}
