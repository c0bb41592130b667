//! Rule `machine-path`: a clone works anywhere, so no tracked text file
//! names a path of one machine: the folders `work`, `root` and `Users` at
//! the file-system root, a `home` folder with a name of two or more
//! characters, or the `shared` folder beside the checkout reached through
//! `..` (allowed only in `.ci/run`, which sets the machine up). Binary
//! files and corpora (`data/corpora/`, `fuzz/corpus/`) are not read.

use super::{Tree, Violation};

const RULE: &str = "machine-path";

/// Folders whose files are data, not text the project wrote.
const CORPORA: [&str; 2] = ["data/corpora/", "fuzz/corpus/"];

/// The only file that may name the shared folder.
const SHARED_ALLOWED: &str = ".ci/run";

pub(crate) fn check(tree: &Tree) -> Vec<Violation> {
    // Spelled in pieces so this file does not match itself.
    let fixed: Vec<String> = ["work", "root", "Users"]
        .iter()
        .map(|dir| format!("/{dir}/"))
        .collect();
    let shared = format!("..{}shared", '/');
    let mut found = Vec::new();
    for path in &tree.files {
        if CORPORA.iter().any(|c| path.starts_with(c)) {
            continue;
        }
        let Some(bytes) = tree.bytes(path) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if text.contains('\0') {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let mut hits: Vec<String> = fixed
                .iter()
                .filter(|p| line.contains(p.as_str()))
                .cloned()
                .collect();
            hits.extend(home_folder(line));
            if path != SHARED_ALLOWED && line.contains(&shared) {
                hits.push(shared.clone());
            }
            for hit in hits {
                found.push(Violation::new(
                    path,
                    i + 1,
                    RULE,
                    format!("`{hit}` is a path of one machine"),
                ));
            }
        }
    }
    found
}

/// The first `/home/<name>/` in a line whose name has at least two of
/// `[a-z0-9_-]` (one letter is a placeholder, as in `/home/u/`).
fn home_folder(line: &str) -> Option<String> {
    let home = format!("/{}/", "home");
    line.match_indices(&home).find_map(|(at, _)| {
        let rest = &line[at + home.len()..];
        let name_len = rest
            .bytes()
            .take_while(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-')
            })
            .count();
        (name_len >= 2 && rest[name_len..].starts_with('/'))
            .then(|| format!("{home}{}/", &rest[..name_len]))
    })
}

#[cfg(test)]
mod tests {
    use super::super::Fixture;
    use super::*;

    /// `/<dir>/`, spelled so this file does not match itself.
    fn dir(name: &str) -> String {
        format!("/{name}/")
    }

    #[test]
    fn portable_paths_pass() {
        let shared = format!("cd ..{}shared", '/');
        let corpus = format!("cat {}x", dir("work"));
        let f = Fixture::new(&[
            (
                "README.md",
                "See `docs/`, `/dev/nvme0`, `/home/u/x` and `~/.cache`.\n",
            ),
            (".ci/run", &shared),
            ("data/corpora/a.txt", &corpus),
            ("fuzz/corpus/t/1", &corpus),
            ("logo.bin", &format!("\0{}", dir("root"))),
        ]);
        assert_eq!(f.run(check), Vec::<String>::new());
    }

    #[test]
    fn machine_paths_fail_with_their_line() {
        let src = format!(
            "fn main() {{}}\n// {}x and {}y\nlet p = \"{}me/x\";\n",
            dir("work"),
            dir("Users"),
            dir("home")
        );
        let notes = format!("ok\n{}.cargo\nsee ..{}shared/x\n", dir("root"), '/');
        let f = Fixture::new(&[("src/main.rs", &src), ("notes.md", &notes)]);
        let work = dir("work");
        let users = dir("Users");
        let root = dir("root");
        let home = format!("{}me/", dir("home"));
        let shared = format!("..{}shared", '/');
        assert_eq!(
            f.run(check),
            [
                format!("notes.md:2: machine-path: `{root}` is a path of one machine"),
                format!("notes.md:3: machine-path: `{shared}` is a path of one machine"),
                format!("src/main.rs:2: machine-path: `{work}` is a path of one machine"),
                format!("src/main.rs:2: machine-path: `{users}` is a path of one machine"),
                format!("src/main.rs:3: machine-path: `{home}` is a path of one machine"),
            ]
        );
    }
}
