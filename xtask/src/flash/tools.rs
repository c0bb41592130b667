//! Which of the Xilinx tools are installed: looked up on `PATH`, never
//! run to find out.

use std::path::{Path, PathBuf};

/// The tools the flow runs, in order.
pub const TOOLS: [&str; 3] = ["vivado", "xsct", "bootgen"];

/// Where `tool` is on the search path `path` (a `PATH` value), if it is an
/// executable file there.
pub fn find(tool: &str, path: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(tool))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file() || p.with_extension("exe").is_file() || p.with_extension("bat").is_file()
}

/// The tools of [`TOOLS`] not on `path`.
pub fn missing(path: &str) -> Vec<&'static str> {
    TOOLS
        .into_iter()
        .filter(|t| find(t, path).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn only_executables_on_the_path_count() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("xtask-flash-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let exe = dir.join("vivado");
        std::fs::write(&exe, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(dir.join("bootgen"), "not executable").expect("write");
        let path = std::env::join_paths([dir.as_path(), Path::new("/nonexistent")])
            .expect("join")
            .into_string()
            .expect("utf-8");
        assert_eq!(find("vivado", &path), Some(exe));
        assert_eq!(missing(&path), ["xsct", "bootgen"]);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn an_empty_path_has_nothing() {
        assert_eq!(missing(""), TOOLS);
    }
}
