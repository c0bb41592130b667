//! `cargo xtask tidy`: the repository's hygiene rules, checked over the
//! files git tracks (so `target/` and other untracked files never count).
//! Prints one line per violation, `path:line: rule: message`, and fails
//! if there is any.
//!
//! | rule | what it holds the tree to |
//! | --- | --- |
//! | [`module-table`](module_table) | each crate root's docs carry a `module` table naming exactly the modules it declares |
//! | [`md-link`](md_link) | every relative link in a tracked Markdown file reaches a tracked file or folder (and heading) |
//! | [`empty-file`](empty_file) | no Rust source file is empty or only comments |
//! | [`unsafe-reason`](unsafe_reason) | every `allow(unsafe_code)` says why in a `//` comment |
//! | [`machine-path`](machine_path) | no path of one machine (home folders, the shared folder beside the checkout) in a tracked file |

mod empty_file;
mod machine_path;
mod md_link;
mod module_table;
mod source;
mod unsafe_reason;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tracked files of a repository.
#[derive(Debug)]
pub(crate) struct Tree {
    /// Where the repository is checked out.
    root: PathBuf,
    /// Tracked files, relative to `root`, `/`-separated, sorted.
    files: Vec<String>,
}

impl Tree {
    /// The files `git ls-files` lists in the repository at `root`.
    fn from_git(root: PathBuf) -> Result<Tree, String> {
        let out = Command::new("git")
            .args(["ls-files", "-z"])
            .current_dir(&root)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`git ls-files` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let mut files: Vec<String> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect();
        files.sort();
        Ok(Tree { root, files })
    }

    /// A file's bytes; `None` when it is gone from the working tree.
    fn bytes(&self, path: &str) -> Option<Vec<u8>> {
        std::fs::read(self.root.join(path)).ok()
    }

    /// A file's text; `None` when it is gone or not UTF-8.
    fn text(&self, path: &str) -> Option<String> {
        String::from_utf8(self.bytes(path)?).ok()
    }

    /// Whether `path` is a file in the working tree (tracked or not).
    fn is_file(&self, path: &str) -> bool {
        self.root.join(Path::new(path)).is_file()
    }

    /// The tracked files whose name ends with `suffix`.
    fn ending<'a>(&'a self, suffix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.files
            .iter()
            .map(String::as_str)
            .filter(move |f| f.ends_with(suffix))
    }
}

/// One broken rule at one place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Violation {
    path: String,
    /// 1-based.
    line: usize,
    rule: &'static str,
    message: String,
}

impl Violation {
    fn new(path: &str, line: usize, rule: &'static str, message: String) -> Violation {
        Violation {
            path: path.to_string(),
            line,
            rule,
            message,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.path, self.line, self.rule, self.message
        )
    }
}

/// Every rule over `tree`, sorted by place.
fn check(tree: &Tree) -> Vec<Violation> {
    let rules: [fn(&Tree) -> Vec<Violation>; 5] = [
        module_table::check,
        md_link::check,
        empty_file::check,
        unsafe_reason::check,
        machine_path::check,
    ];
    let mut found: Vec<Violation> = rules.iter().flat_map(|rule| rule(tree)).collect();
    found.sort();
    found
}

/// `cargo xtask tidy`.
pub fn main() -> Result<(), String> {
    let tree = Tree::from_git(crate::hdl::root())?;
    let found = check(&tree);
    for v in &found {
        println!("{v}");
    }
    if found.is_empty() {
        eprintln!("tidy: {} tracked files, no violations", tree.files.len());
        Ok(())
    } else {
        Err(format!("tidy: {} violation(s)", found.len()))
    }
}

/// A throw-away tree of files for the rules' tests.
#[cfg(test)]
pub(crate) struct Fixture {
    tree: Tree,
}

#[cfg(test)]
impl Fixture {
    /// Writes `files` (path, contents) under a fresh temporary folder; all
    /// of them count as tracked.
    pub(crate) fn new(files: &[(&str, &str)]) -> Fixture {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "xtask-tidy-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        for (path, contents) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a fixture file has a folder"))
                .expect("create fixture folder");
            std::fs::write(path, contents).expect("write fixture file");
        }
        let mut names: Vec<String> = files.iter().map(|(p, _)| p.to_string()).collect();
        names.sort();
        Fixture {
            tree: Tree { root, files: names },
        }
    }

    pub(crate) fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The violations `rule` finds, as `path:line: rule: message` lines.
    pub(crate) fn run(&self, rule: fn(&Tree) -> Vec<Violation>) -> Vec<String> {
        rule(&self.tree).iter().map(|v| v.to_string()).collect()
    }
}

#[cfg(test)]
impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tree.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_print_as_path_line_rule_message() {
        let v = Violation::new("a/b.rs", 7, "empty-file", "no code".into());
        assert_eq!(v.to_string(), "a/b.rs:7: empty-file: no code");
    }

    #[test]
    fn check_runs_every_rule_and_sorts_by_place() {
        let fixture = Fixture::new(&[("z.rs", ""), ("a.rs", "  \n")]);
        let found: Vec<String> = check(fixture.tree())
            .iter()
            .map(|v| format!("{}:{}", v.path, v.rule))
            .collect();
        assert_eq!(found, ["a.rs:empty-file", "z.rs:empty-file"]);
    }

    #[test]
    fn only_files_git_tracks_are_listed() {
        let fixture = Fixture::new(&[("src/a.rs", "fn f() {}"), ("target/b.rs", "")]);
        let root = &fixture.tree().root;
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args(args)
                .current_dir(root)
                .status()
                .expect("git runs");
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "src/a.rs"]);
        let tree = Tree::from_git(root.clone()).expect("git ls-files");
        assert_eq!(tree.files, ["src/a.rs"]);
    }

    #[test]
    fn the_fixture_lists_its_files_as_tracked() {
        let fixture = Fixture::new(&[("b/c.md", "x"), ("a.rs", "fn f() {}")]);
        let tree = fixture.tree();
        assert_eq!(tree.files, ["a.rs", "b/c.md"]);
        assert_eq!(tree.text("b/c.md").as_deref(), Some("x"));
        assert!(tree.is_file("a.rs"));
        assert_eq!(tree.ending(".md").collect::<Vec<_>>(), ["b/c.md"]);
    }
}
