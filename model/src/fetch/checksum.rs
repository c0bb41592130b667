//! sha256 of files and streams, lowercase-hex encoding, and the comparison
//! against a pinned hash that yields [`FetchError::Checksum`].

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use indicatif::ProgressBar;
use sha2::{Digest, Sha256};

use super::FetchError;
use super::progress;

/// Read buffer size for hashing and copying.
const CHUNK: usize = 1 << 16;

/// Lowercase hex of a digest.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Copies `reader` into `writer` while hashing; returns the hex sha256 and
/// the number of bytes copied. Read errors and write errors are reported
/// separately (`Err(Ok(e))` = read, `Err(Err(e))` = write) so callers can
/// blame the right side.
pub(crate) fn copy_hashing(
    reader: impl Read,
    writer: impl Write,
) -> Result<(String, u64), Result<io::Error, io::Error>> {
    let mut hasher = Sha256::new();
    let total = copy_into(reader, writer, &mut hasher)?;
    Ok((to_hex(&hasher.finalize()), total))
}

/// Copies `reader` into `writer` (flushed at the end), feeding every byte
/// to `hasher` too; returns the number of bytes copied. Errors as
/// [`copy_hashing`]'s.
pub(crate) fn copy_into(
    mut reader: impl Read,
    mut writer: impl Write,
    hasher: &mut Sha256,
) -> Result<u64, Result<io::Error, io::Error>> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Ok(e)),
        };
        hasher.update(&buf[..n]);
        writer.write_all(&buf[..n]).map_err(Err)?;
        total += n as u64;
    }
    writer.flush().map_err(Err)?;
    Ok(total)
}

/// Hex sha256 of a file, advancing `bar` by the bytes read.
pub(crate) fn sha256_file(path: &Path, bar: &ProgressBar) -> Result<String, FetchError> {
    let file =
        File::open(path).map_err(|e| FetchError::io(format!("open {}", path.display()), e))?;
    let (hex, _) = copy_hashing(bar.wrap_read(file), io::sink())
        .map_err(|e| FetchError::io(format!("read {}", path.display()), e.unwrap_or_else(|e| e)))?;
    Ok(hex)
}

/// `Ok` if `actual` equals `expected` (case-insensitively), else
/// [`FetchError::Checksum`] naming `what`.
pub(crate) fn check(
    what: impl Into<String>,
    expected: &str,
    actual: &str,
) -> Result<(), FetchError> {
    if actual.eq_ignore_ascii_case(expected) {
        Ok(())
    } else {
        Err(FetchError::Checksum {
            what: what.into(),
            expected: expected.to_ascii_lowercase(),
            actual: actual.to_ascii_lowercase(),
        })
    }
}

/// Hashes `path` and compares it to `sha256_hex`, without progress output.
pub fn verify_file(path: &Path, sha256_hex: &str) -> Result<(), FetchError> {
    verify_file_with(path, sha256_hex, true)
}

/// [`verify_file`] with a progress bar unless `quiet`.
pub(crate) fn verify_file_with(
    path: &Path,
    sha256_hex: &str,
    quiet: bool,
) -> Result<(), FetchError> {
    let len = std::fs::metadata(path)
        .map_err(|e| FetchError::io(format!("stat {}", path.display()), e))?
        .len();
    let bar = progress::bytes(len, "verifying", quiet);
    let actual = sha256_file(path, &bar);
    bar.finish_and_clear();
    check(path.display().to_string(), sha256_hex, &actual?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_checksum_known_vector() {
        let (hex, n) = copy_hashing(&b"abc"[..], io::sink()).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn fetch_checksum_mismatch_reports_both() {
        let err = check("x", "AA", "bb").unwrap_err();
        match err {
            FetchError::Checksum {
                what,
                expected,
                actual,
            } => {
                assert_eq!(
                    (what.as_str(), expected.as_str(), actual.as_str()),
                    ("x", "aa", "bb")
                );
            }
            other => panic!("unexpected {other}"),
        }
        assert!(check("x", "AB", "ab").is_ok());
    }
}
