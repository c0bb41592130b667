//! The fetcher's progress display: `indicatif` bars and spinners on stderr,
//! or hidden ones when `quiet` (indicatif also hides them by itself when
//! stderr is not a terminal).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A byte-counting bar of length `len` labelled `msg`.
pub(crate) fn bytes(len: u64, msg: &'static str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{msg:>12} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    ProgressBar::new(len).with_style(style).with_message(msg)
}

/// A ticking spinner labelled `msg`, for work of unknown length (pip).
pub(crate) fn spinner(msg: String, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let bar = ProgressBar::new_spinner()
        .with_style(style)
        .with_message(msg);
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Prints a one-line note to stderr unless `quiet`.
pub(crate) fn note(quiet: bool, msg: impl std::fmt::Display) {
    if !quiet {
        eprintln!("{msg}");
    }
}
