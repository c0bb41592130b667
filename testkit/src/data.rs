//! The text corpora in the repository's `data/corpora/` (their source,
//! licence and sha256 are in `data/README.md`). Tests read them from the
//! checkout, so a fresh clone runs the same tests as CI.

use std::path::PathBuf;

/// The repository's root (this crate sits one folder below it).
fn repo_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// `data/corpora/<name>` in the repository.
fn corpus_path(name: &str) -> PathBuf {
    repo_root().join("data").join("corpora").join(name)
}

/// The WikiText-2 raw test split (`data/corpora/wiki.test.raw`).
///
/// # Panics
/// When the file is missing or unreadable: it is part of the repository,
/// so its absence is a broken checkout, not a reason to skip.
pub fn wiki_text() -> String {
    read("wiki.test.raw")
}

fn read(name: &str) -> String {
    let path = corpus_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{} is part of the repository and could not be read: {e}",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpora_are_in_the_repository() {
        assert!(wiki_text().starts_with(" = Robert Boulter = \r\n"));
        assert!(read("pg1342_pride_and_prejudice.txt").contains("Elizabeth"));
    }
}
