//! Rule `empty-file`: no tracked Rust source file is empty or holds only
//! whitespace and comments; a module with nothing in it is a leftover.

use super::source::Source;
use super::{Tree, Violation};

const RULE: &str = "empty-file";

pub(crate) fn check(tree: &Tree) -> Vec<Violation> {
    tree.ending(".rs")
        .filter(|path| {
            tree.text(path)
                .is_some_and(|text| Source::new(&text).code.trim().is_empty())
        })
        .map(|path| {
            Violation::new(
                path,
                1,
                RULE,
                "no code: the file is empty or only comments".to_string(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Fixture;
    use super::*;

    #[test]
    fn a_file_with_code_passes() {
        let f = Fixture::new(&[
            ("src/a.rs", "//! Docs.\n\npub fn f() {}\n"),
            ("notes.txt", ""),
        ]);
        assert_eq!(f.run(check), Vec::<String>::new());
    }

    #[test]
    fn empty_blank_and_comment_only_files_fail() {
        let f = Fixture::new(&[
            ("src/a.rs", ""),
            ("src/b.rs", " \n\t\n"),
            (
                "src/c.rs",
                "//! Docs only.\n/* and a block */\n// and a line\n",
            ),
            ("src/d.rs", "const X: u8 = 0;\n"),
        ]);
        let message = "empty-file: no code: the file is empty or only comments";
        assert_eq!(
            f.run(check),
            [
                format!("src/a.rs:1: {message}"),
                format!("src/b.rs:1: {message}"),
                format!("src/c.rs:1: {message}"),
            ]
        );
    }
}
