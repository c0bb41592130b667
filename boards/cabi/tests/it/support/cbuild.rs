//! Building the host static library and the C harness, and running it.
//!
//! The library is built by a nested `cargo build` into its own target
//! directory (`<target>/cabi-harness`): the outer `cargo test` holds the
//! lock of the usual one while the tests run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn workspace_root() -> PathBuf {
    crate_dir().join("../..")
}

/// `<target>/cabi-harness`, where the nested build and the harness go.
pub fn out_dir() -> PathBuf {
    let root = workspace_root();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if Path::new(&t).is_absolute() => PathBuf::from(t),
        Some(t) => root.join(t),
        None => root.join("target"),
    };
    let dir = target.join("cabi-harness");
    std::fs::create_dir_all(&dir).expect("create the harness directory");
    dir
}

/// Builds `libinstcsd_cabi.a` for the host (dev profile) and returns it.
pub fn staticlib() -> Result<PathBuf, String> {
    let dir = out_dir();
    let status = Command::new(env!("CARGO"))
        .current_dir(workspace_root())
        .args(["build", "-p", "board-cabi", "--lib", "--target-dir"])
        .arg(&dir)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cargo build of the static library failed: {status}"
        ));
    }
    let lib = dir.join("debug").join("libinstcsd_cabi.a");
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(format!("{} not built", lib.display()))
    }
}

/// Compiles `harness/harness.c` against `lib`; returns the executable.
pub fn harness(lib: &Path) -> Result<PathBuf, String> {
    let exe = out_dir().join("instcsd-harness");
    let c = crate_dir();
    let out = Command::new("gcc")
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(c.join("include"))
        .arg(c.join("harness/harness.c"))
        .arg(lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .map_err(|e| format!("cannot run gcc: {e}"))?;
    if out.status.success() {
        Ok(exe)
    } else {
        Err(format!(
            "gcc failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
