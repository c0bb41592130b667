//! The on-disk cache: where it is (`$XDG_CACHE_HOME/instinfer/models`, else
//! `$HOME/.cache/instinfer/models`), the `<file>.sha256` sidecar that lets a
//! verified file be trusted again without re-hashing, and the temporary
//! files/directories (removed on drop unless persisted) that make every
//! write to a final path an atomic rename.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::FetchError;

/// Path of the models cache below the user's cache root.
const SUBDIR: [&str; 2] = ["instinfer", "models"];

/// The models cache directory from the environment (not created).
pub fn cache_dir() -> Result<PathBuf, FetchError> {
    cache_dir_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`cache_dir`] from explicit variable values. Per the XDG base-directory
/// spec an empty or relative `XDG_CACHE_HOME` is ignored; an empty `HOME` is
/// treated as unset.
pub(crate) fn cache_dir_from(
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, FetchError> {
    let root = match xdg_cache_home.map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => xdg,
        _ => match home {
            Some(home) if !home.is_empty() => PathBuf::from(home).join(".cache"),
            _ => return Err(FetchError::NoCacheDir),
        },
    };
    Ok(SUBDIR.iter().fold(root, |p, s| p.join(s)))
}

/// Creates `dir` (and parents).
pub(crate) fn create_dir(dir: &Path) -> Result<(), FetchError> {
    fs::create_dir_all(dir)
        .map_err(|e| FetchError::io(format!("create cache directory {}", dir.display()), e))
}

/// `<file>.sha256`.
pub(crate) fn sidecar_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".sha256");
    PathBuf::from(name)
}

/// What the sidecar records about a verified file: `(size, mtime in ns)`.
fn stamp(file: &Path) -> Option<(u64, u128)> {
    let meta = fs::metadata(file).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((meta.len(), mtime))
}

/// Whether `file`'s sidecar says it was verified as `sha256_hex` and its
/// size and mtime are unchanged since. Any doubt (no sidecar, unparsable,
/// different hash, size or mtime) answers `false`.
pub(crate) fn sidecar_matches(file: &Path, sha256_hex: &str) -> bool {
    let Ok(text) = fs::read_to_string(sidecar_path(file)) else {
        return false;
    };
    let mut fields = text.split_whitespace();
    let (Some(hash), Some(size), Some(mtime), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return false;
    };
    let (Ok(size), Ok(mtime)) = (size.parse::<u64>(), mtime.parse::<u128>()) else {
        return false;
    };
    hash.eq_ignore_ascii_case(sha256_hex) && stamp(file) == Some((size, mtime))
}

/// Records that `file` (just verified) has hash `sha256_hex`, atomically.
pub(crate) fn write_sidecar(file: &Path, sha256_hex: &str) -> Result<(), FetchError> {
    let sidecar = sidecar_path(file);
    let (size, mtime) = stamp(file).ok_or_else(|| {
        FetchError::io(
            format!("stat {}", file.display()),
            std::io::Error::other("no size/mtime available"),
        )
    })?;
    let dir = sidecar.parent().unwrap_or(Path::new("."));
    let mut tmp = TempFile::new_in(dir, "sidecar")?;
    writeln!(
        tmp.file(),
        "{} {size} {mtime}",
        sha256_hex.to_ascii_lowercase()
    )
    .map_err(|e| FetchError::io(format!("write {}", tmp.path().display()), e))?;
    tmp.persist(&sidecar)
}

/// Removes `file` and its sidecar (missing ones are fine).
pub(crate) fn remove_with_sidecar(file: &Path) -> Result<(), FetchError> {
    for p in [sidecar_path(file), file.to_path_buf()] {
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FetchError::io(format!("remove {}", p.display()), e)),
        }
    }
    Ok(())
}

/// A name no other process or thread will pick: `.<tag>-<pid>-<ns>-<n>.tmp`.
fn unique_name(tag: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(".{tag}-{}-{ns}-{n}.tmp", std::process::id())
}

/// A file in the cache directory, deleted on drop unless [`persist`]ed.
///
/// [`persist`]: TempFile::persist
#[derive(Debug)]
pub(crate) struct TempFile {
    path: PathBuf,
    file: Option<File>,
}

impl TempFile {
    /// Creates a fresh, empty temporary file in `dir`.
    pub(crate) fn new_in(dir: &Path, tag: &str) -> Result<Self, FetchError> {
        let path = dir.join(unique_name(tag));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| FetchError::io(format!("create {}", path.display()), e))?;
        Ok(Self {
            path,
            file: Some(file),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("TempFile used after persist")
    }

    /// Flushes to disk and renames onto `dest` (atomic on one filesystem).
    pub(crate) fn persist(mut self, dest: &Path) -> Result<(), FetchError> {
        if let Some(file) = self.file.take() {
            file.sync_all()
                .map_err(|e| FetchError::io(format!("sync {}", self.path.display()), e))?;
        }
        fs::rename(&self.path, dest).map_err(|e| {
            FetchError::io(
                format!("rename {} to {}", self.path.display(), dest.display()),
                e,
            )
        })?;
        // Make the rename itself durable; failure here is not fatal.
        if let Some(dir) = dest.parent() {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A directory in the cache directory, removed (recursively) on drop.
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates a fresh, empty temporary directory in `dir`.
    pub(crate) fn new_in(dir: &Path, tag: &str) -> Result<Self, FetchError> {
        let path = dir.join(unique_name(tag));
        fs::create_dir(&path)
            .map_err(|e| FetchError::io(format!("create {}", path.display()), e))?;
        Ok(Self { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn fetch_cache_dir_prefers_xdg_cache_home() {
        assert_eq!(
            cache_dir_from(os("/x/cache"), os("/home/u")).unwrap(),
            Path::new("/x/cache/instinfer/models")
        );
        assert_eq!(
            cache_dir_from(None, os("/home/u")).unwrap(),
            Path::new("/home/u/.cache/instinfer/models")
        );
        // Empty or relative XDG_CACHE_HOME is ignored (XDG spec).
        assert_eq!(
            cache_dir_from(os(""), os("/home/u")).unwrap(),
            Path::new("/home/u/.cache/instinfer/models")
        );
        assert_eq!(
            cache_dir_from(os("rel"), os("/home/u")).unwrap(),
            Path::new("/home/u/.cache/instinfer/models")
        );
    }

    #[test]
    fn fetch_cache_dir_needs_xdg_or_home() {
        assert!(matches!(
            cache_dir_from(None, None),
            Err(FetchError::NoCacheDir)
        ));
        assert!(matches!(
            cache_dir_from(os(""), os("")),
            Err(FetchError::NoCacheDir)
        ));
    }

    #[test]
    fn fetch_cache_sidecar_path_appends_suffix() {
        assert_eq!(
            sidecar_path(Path::new("/a/m.gguf")),
            Path::new("/a/m.gguf.sha256")
        );
    }
}
