//! Rule `module-table`: the crate docs are the code map of a crate, so
//! every crate root (`src/lib.rs`, else `src/main.rs`) of every workspace
//! member, and of `fuzz/` when it has a library, carries a Markdown table
//! in its `//!` docs whose header's first cell is `module` and whose first
//! column names (in backticks: `` `name` `` or ``[`name`]``) exactly the
//! modules the root declares. Modules compiled only for tests
//! (`#[cfg(test)]`, `#[cfg(all(test, …))]`) are left out of both sides.

use super::source::{Source, inner_docs};
use super::{Tree, Violation};

const RULE: &str = "module-table";

pub(crate) fn check(tree: &Tree) -> Vec<Violation> {
    crate_roots(tree)
        .iter()
        .flat_map(|root| check_root(tree, root))
        .collect()
}

/// The crate roots to check: each member's `src/lib.rs`, or its
/// `src/main.rs` when it has no library, and `fuzz/src/lib.rs`.
fn crate_roots(tree: &Tree) -> Vec<String> {
    let Some(manifest) = tree.text("Cargo.toml") else {
        return Vec::new();
    };
    let mut dirs = members(&manifest);
    if tree.is_file("fuzz/src/lib.rs") && !dirs.iter().any(|d| d == "fuzz") {
        dirs.push("fuzz".to_string());
    }
    dirs.iter()
        .filter_map(|dir| {
            ["lib.rs", "main.rs"]
                .iter()
                .map(|file| format!("{dir}/src/{file}"))
                .find(|root| tree.is_file(root))
        })
        .collect()
}

/// The quoted entries of `members = [ … ]` in a workspace manifest.
fn members(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members") else {
        return Vec::new();
    };
    let rest = &manifest[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        return Vec::new();
    };
    rest[open + 1..close]
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.split(','))
        .map(|entry| entry.trim().trim_matches('"').trim_end_matches('/'))
        .filter(|entry| !entry.is_empty())
        .map(str::to_string)
        .collect()
}

fn check_root(tree: &Tree, path: &str) -> Vec<Violation> {
    let Some(text) = tree.text(path) else {
        return Vec::new();
    };
    let declared = declared_modules(&Source::new(&text).code);
    let mut found = Vec::new();
    let Some(rows) = table_rows(&text) else {
        if !declared.is_empty() {
            let names: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
            found.push(Violation::new(
                path,
                1,
                RULE,
                format!(
                    "the crate docs have no `| module | … |` table (modules: {})",
                    names.join(", ")
                ),
            ));
        }
        return found;
    };
    for (name, line) in &declared {
        if !rows.iter().any(|row| row.names.contains(name)) {
            found.push(Violation::new(
                path,
                *line,
                RULE,
                format!("module `{name}` is missing from the crate docs' module table"),
            ));
        }
    }
    for row in &rows {
        if row.names.is_empty() {
            found.push(Violation::new(
                path,
                row.line,
                RULE,
                "the row's first cell names no module (write [`name`] or `name`)".to_string(),
            ));
        }
        for name in &row.names {
            if !declared.iter().any(|(d, _)| d == name) {
                found.push(Violation::new(
                    path,
                    row.line,
                    RULE,
                    format!(
                        "the module table names `{name}`, which this crate root does not declare"
                    ),
                ));
            }
        }
    }
    found
}

/// The modules a crate root declares at its top level, `mod x;` or
/// `mod x { … }` with any visibility, except those under `#[cfg(test)]`:
/// (name, 1-based line of the `mod` keyword).
fn declared_modules(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut stack: Vec<u8> = Vec::new();
    let mut start = 0;
    let mut body = false;
    let mut item = |start: usize, end: usize| {
        if let Some((name, at)) = module_item(&code[start..end]) {
            let line = code[..start + at].matches('\n').count() + 1;
            found.push((name, line));
        }
    };
    for (i, b) in code.bytes().enumerate() {
        match b {
            b'(' | b'[' => stack.push(b),
            b'{' => {
                if stack.is_empty() {
                    item(start, i);
                    body = true;
                }
                stack.push(b);
            }
            b')' | b']' | b'}' => {
                stack.pop();
                if b == b'}' && stack.is_empty() && body {
                    start = i + 1;
                    body = false;
                }
            }
            b';' if stack.is_empty() => {
                item(start, i);
                start = i + 1;
            }
            _ => {}
        }
    }
    found
}

/// The module an item's text up to its `;` or body declares, and the
/// offset of its `mod` keyword; `None` for other items and test modules.
fn module_item(text: &str) -> Option<(String, usize)> {
    let mut rest = text.trim_start();
    let mut test_only = false;
    while let Some(attr) = rest.strip_prefix('#') {
        let inner = attr.strip_prefix('!').is_some();
        let attr = attr.trim_start_matches('!').trim_start();
        let len = bracketed_len(attr)?;
        let squeezed: String = attr[..len].chars().filter(|c| !c.is_whitespace()).collect();
        test_only |=
            !inner && (squeezed == "[cfg(test)]" || squeezed.starts_with("[cfg(all(test,"));
        rest = attr[len..].trim_start();
    }
    if let Some(after) = rest.strip_prefix("pub") {
        let after = after.trim_start();
        rest = match after.strip_prefix('(') {
            Some(_) => after[bracketed_len(after)?..].trim_start(),
            None => after,
        };
    }
    let after = rest.strip_prefix("mod")?;
    if !after.starts_with(char::is_whitespace) {
        return None;
    }
    let name = after.trim();
    let name = name.strip_prefix("r#").unwrap_or(name);
    let is_ident = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    (is_ident && !test_only).then(|| (name.to_string(), text.len() - rest.len()))
}

/// The length of the bracketed group `text` starts with (`[…]` or `(…)`).
fn bracketed_len(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' | b'(' => depth += 1,
            b']' | b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// A body row of the module table.
#[derive(Debug, PartialEq)]
struct Row {
    /// 1-based line in the crate root.
    line: usize,
    /// The backticked names in its first cell.
    names: Vec<String>,
}

/// The body rows of every table in the crate docs whose header's first
/// cell is `module` (or `modules`); `None` when there is no such table.
fn table_rows(text: &str) -> Option<Vec<Row>> {
    let docs = inner_docs(text);
    let mut rows = None;
    let mut i = 0;
    while i < docs.len() {
        let is_row = |k: usize| {
            docs.get(k)
                .is_some_and(|(_, l)| l.trim_start().starts_with('|'))
        };
        if !is_row(i) || (i > 0 && is_row(i - 1)) {
            i += 1;
            continue;
        }
        let header = first_cell(docs[i].1).trim().to_ascii_lowercase();
        let is_module_table = matches!(header.as_str(), "module" | "modules")
            && docs.get(i + 1).is_some_and(|(_, l)| is_separator(l));
        i += 2;
        while is_row(i) {
            if is_module_table {
                let (line, content) = docs[i];
                rows.get_or_insert_with(Vec::new).push(Row {
                    line,
                    names: backticked(first_cell(content)),
                });
            }
            i += 1;
        }
        if is_module_table {
            rows.get_or_insert_with(Vec::new);
        }
    }
    rows
}

/// The first cell of a table row `| a | b |`.
fn first_cell(row: &str) -> &str {
    let row = row.trim_start();
    let row = row.strip_prefix('|').unwrap_or(row);
    row.split('|').next().unwrap_or("")
}

/// Whether a row is a header separator, `| --- | :-: |`.
fn is_separator(row: &str) -> bool {
    let cells: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
    cells.iter().all(|cell| {
        let cell = cell.trim();
        !cell.is_empty() && cell.chars().all(|c| c == '-' || c == ':')
    })
}

/// The names in backticks in a cell (`mod@` and `r#` prefixes dropped).
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| {
            let name = name.trim();
            let name = name.strip_prefix("mod@").unwrap_or(name);
            name.strip_prefix("r#").unwrap_or(name).to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Fixture;
    use super::*;

    const MANIFEST: &str = "[workspace]\nmembers = [\n    \"core\", # the core\n    \"tool\",\n]\n";

    const LIB: &str = "\
//! The core.
//!
//! | module | owns |
//! | --- | --- |
//! | [`alpha`] | the first part |
//! | `beta` | the second part |
//! | [`gamma`](mod@gamma) | an inline module |
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod alpha;
pub(crate) mod beta;
pub mod gamma {
    pub fn f() -> [u8; 2] { [0; 2] }
}
const S: &str = \"mod fake;\";

#[cfg(test)]
mod tests {
    mod inner;
}
#[cfg(test)]
mod support;
";

    const TOOL: &str = "//! A tool with no modules.\nfn main() {}\n";

    fn fixture(lib: &str) -> Fixture {
        Fixture::new(&[
            ("Cargo.toml", MANIFEST),
            ("core/src/lib.rs", lib),
            ("tool/src/main.rs", TOOL),
        ])
    }

    #[test]
    fn a_table_naming_every_module_passes() {
        assert_eq!(fixture(LIB).run(check), Vec::<String>::new());
    }

    #[test]
    fn a_module_left_out_of_the_table_fails_at_its_declaration() {
        let lib = LIB.replace("//! | `beta` | the second part |\n", "");
        assert_eq!(
            fixture(&lib).run(check),
            [
                "core/src/lib.rs:13: module-table: module `beta` is missing from the crate docs' module table"
            ]
        );
    }

    #[test]
    fn a_table_row_for_no_module_fails_at_the_row() {
        let lib = LIB.replace("pub mod alpha;\n", "");
        assert_eq!(
            fixture(&lib).run(check),
            [
                "core/src/lib.rs:5: module-table: the module table names `alpha`, which this crate root does not declare"
            ]
        );
    }

    #[test]
    fn a_crate_root_with_modules_and_no_table_fails() {
        let lib = LIB.replace("//! | module | owns |\n", "//! | part | owns |\n");
        let found = fixture(&lib).run(check);
        assert_eq!(
            found,
            [
                "core/src/lib.rs:1: module-table: the crate docs have no `| module | … |` table (modules: alpha, beta, gamma)"
            ]
        );
    }

    #[test]
    fn binary_crates_and_fuzz_are_checked_too() {
        let f = Fixture::new(&[
            ("Cargo.toml", MANIFEST),
            ("core/src/lib.rs", LIB),
            ("tool/src/main.rs", "//! A tool.\nmod cli;\nfn main() {}\n"),
            (
                "fuzz/src/lib.rs",
                "//! | module | owns |\n//! | --- | --- |\n//! | `x` | x |\nmod x;\nmod y;\n",
            ),
        ]);
        assert_eq!(
            f.run(check),
            [
                "tool/src/main.rs:1: module-table: the crate docs have no `| module | … |` table (modules: cli)",
                "fuzz/src/lib.rs:5: module-table: module `y` is missing from the crate docs' module table",
            ]
        );
    }

    #[test]
    fn members_are_read_from_the_workspace_manifest() {
        assert_eq!(members(MANIFEST), ["core", "tool"]);
        assert_eq!(
            members("[workspace]\nmembers = [\"a\", \"b/c\"]\n"),
            ["a", "b/c"]
        );
    }

    #[test]
    fn declarations_skip_test_modules_and_nested_ones() {
        let names: Vec<(String, usize)> = declared_modules(&Source::new(LIB).code);
        assert_eq!(
            names,
            [
                ("alpha".into(), 13),
                ("beta".into(), 14),
                ("gamma".into(), 15)
            ]
        );
        let cfg = declared_modules(
            "#[cfg(all(\n    unix,\n))]\npub mod sys;\n#[cfg( test )] mod t;\n#[cfg(all(test, unix))]\nmod u;\n",
        );
        assert_eq!(cfg, [("sys".into(), 4)]);
    }
}
