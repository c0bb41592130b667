//! The guest kernels: Debian's current `linux-image-*-amd64` (or a pinned
//! package), fetched with `apt-get download` into the cache, unpacked, and
//! the modules the tests need found with their dependencies (read from
//! each module's `depends=` field). Modules compressed with xz (`.ko.xz`,
//! Debian's 6.12 packages) are unpacked with `xz -dc` when read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// An unpacked kernel package.
pub struct Kernel {
    /// The bootable image (`vmlinuz-*`).
    pub image: PathBuf,
    /// Module name (with `_`) → file.
    modules: BTreeMap<String, PathBuf>,
}

pub(crate) fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The versioned package `linux-image-amd64` depends on.
pub(crate) fn package() -> Result<String, String> {
    let deps = run(
        Command::new("apt-cache").args(["depends", "linux-image-amd64"]),
        "apt-cache depends linux-image-amd64",
    )?;
    deps.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-") && !p.contains('<'))
        .map(str::to_owned)
        .ok_or_else(|| "linux-image-amd64 depends on no linux-image package".into())
}

fn norm(name: &str) -> String {
    name.replace('-', "_")
}

/// The `.deb` of `pkg` in `cache`, fetched with `apt-get download` when
/// it is not there yet.
pub(crate) fn deb(cache: &Path, pkg: &str) -> Result<PathBuf, String> {
    let find = || {
        std::fs::read_dir(cache).ok().and_then(|d| {
            d.filter_map(Result::ok).map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{pkg}_")) && n.ends_with(".deb"))
            })
        })
    };
    if let Some(d) = find() {
        return Ok(d);
    }
    eprintln!("fetching {pkg} (apt-get download)…");
    run(
        Command::new("apt-get")
            .arg("download")
            .arg(pkg)
            .current_dir(cache),
        &format!("apt-get download {pkg}"),
    )?;
    find().ok_or_else(|| format!("apt-get download {pkg} produced no .deb"))
}

/// Fetches (once) and unpacks (once) the current kernel into `cache`.
pub fn fetch(cache: &Path) -> Result<Kernel, String> {
    fetch_package(cache, &package()?)
}

/// Fetches (once) and unpacks (once) the kernel package `pkg` into
/// `cache`.
pub fn fetch_package(cache: &Path, pkg: &str) -> Result<Kernel, String> {
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let deb = deb(cache, pkg)?;
    let root = cache.join(pkg);
    if !root.join("boot").is_dir() {
        run(
            Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root),
            "dpkg-deb -x",
        )?;
    }
    let image = std::fs::read_dir(root.join("boot"))
        .map_err(|e| format!("{}: {e}", root.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .ok_or("no vmlinuz in the kernel package")?;
    let mut modules = BTreeMap::new();
    let mut stack = vec![root.join("lib/modules")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".ko").or_else(|| n.strip_suffix(".ko.xz")))
            {
                modules.insert(norm(n), p);
            }
        }
    }
    Ok(Kernel { image, modules })
}

/// A module file's contents, unpacked when it is `.ko.xz`.
fn read_module(path: &Path) -> Result<Vec<u8>, String> {
    if path.extension().is_some_and(|e| e == "xz") {
        let out = Command::new("xz")
            .arg("-dc")
            .arg(path)
            .output()
            .map_err(|e| format!("xz -dc (apt install xz-utils): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "xz -dc {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        return Ok(out.stdout);
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The `depends=` field of a module file.
fn depends(ko: &[u8]) -> Vec<String> {
    let key = b"depends=";
    ko.windows(key.len())
        .position(|w| w == key)
        .map(|at| {
            let rest = &ko[at + key.len()..];
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            String::from_utf8_lossy(&rest[..end])
                .split(',')
                .filter(|s| !s.is_empty())
                .map(norm)
                .collect()
        })
        .unwrap_or_default()
}

impl Kernel {
    /// `wanted` modules and their dependencies, in load order:
    /// (name, contents).
    pub fn modules(&self, wanted: &[&str]) -> Result<Vec<(String, Vec<u8>)>, String> {
        let mut order = Vec::new();
        let mut seen = BTreeSet::new();
        fn visit(
            k: &Kernel,
            name: &str,
            seen: &mut BTreeSet<String>,
            order: &mut Vec<(String, Vec<u8>)>,
        ) -> Result<(), String> {
            if !seen.insert(name.to_owned()) {
                return Ok(());
            }
            let path = k
                .modules
                .get(name)
                .ok_or_else(|| format!("module {name} not in the kernel package"))?;
            let bytes = read_module(path)?;
            for d in depends(&bytes) {
                visit(k, &d, seen, order)?;
            }
            order.push((name.to_owned(), bytes));
            Ok(())
        }
        for w in wanted {
            visit(self, &norm(w), &mut seen, &mut order)?;
        }
        Ok(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_depends() {
        let ko = b"\0license=GPL\0depends=nvme-core,t10_pi\0name=nvme\0";
        assert_eq!(depends(ko), ["nvme_core", "t10_pi"]);
        assert!(depends(b"\0depends=\0").is_empty());
        assert!(depends(b"nothing here").is_empty());
    }
}
