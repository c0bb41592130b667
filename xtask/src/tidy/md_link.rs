//! Rule `md-link`: every relative link in a tracked Markdown file —
//! `[text](path)`, `[text](path#heading)`, `![alt](path)`, a reference
//! definition `[label]: path`, an HTML `href="…"` or `src="…"` — reaches a
//! tracked file or folder of the repository (so it works in a fresh
//! clone), and its `#heading`, in this file or another Markdown file, is a
//! heading there (GitHub's anchors). Links with a scheme (`https:`,
//! `mailto:`) and links inside code are not checked.

use std::collections::{BTreeMap, HashSet};

use super::{Tree, Violation};

const RULE: &str = "md-link";

pub(crate) fn check(tree: &Tree) -> Vec<Violation> {
    let files: HashSet<&str> = tree.files.iter().map(String::as_str).collect();
    let dirs: HashSet<&str> = tree
        .files
        .iter()
        .flat_map(|f| f.match_indices('/').map(move |(i, _)| &f[..i]))
        .collect();
    let mut found = Vec::new();
    for md in tree.ending(".md") {
        let Some(text) = tree.text(md) else {
            continue;
        };
        for (line, target) in links(&text) {
            let problem = if let Some(anchor) = target.strip_prefix('#') {
                (!anchors(&text).contains(anchor))
                    .then(|| format!("`{target}`: no such heading in this file"))
            } else {
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                match resolve(md, &path.replace("%20", " ")) {
                    None => Some(format!("`{target}` leaves the repository")),
                    Some(p) if !files.contains(p.as_str()) && !dirs.contains(p.as_str()) => {
                        Some(format!("`{target}`: no tracked file or folder `{p}`"))
                    }
                    Some(p) if !anchor.is_empty() && p.ends_with(".md") => tree
                        .text(&p)
                        .filter(|t| !anchors(t).contains(anchor))
                        .map(|_| format!("`{target}`: no heading `#{anchor}` in `{p}`")),
                    Some(_) => None,
                }
            };
            if let Some(message) = problem {
                found.push(Violation::new(md, line, RULE, message));
            }
        }
    }
    found
}

/// The link targets of a Markdown text to check: (1-based line, target),
/// outside fenced code and code spans, without those that have a scheme.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                continue;
            }
            (Some(f), Some(m)) if f == m => {
                fence = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, None) => {}
        }
        let line = without_code_spans(raw);
        let mut targets = Vec::new();
        for (at, _) in line.match_indices("](") {
            targets.push(inline_target(&line[at + 2..]));
        }
        if let Some(def) = reference_definition(&line) {
            targets.push(def.to_string());
        }
        for attr in ["href=\"", "src=\""] {
            for (at, _) in line.match_indices(attr) {
                let rest = &line[at + attr.len()..];
                targets.push(rest.split('"').next().unwrap_or("").to_string());
            }
        }
        found.extend(
            targets
                .into_iter()
                .filter(|t| !t.is_empty() && !has_scheme(t))
                .map(|t| (i + 1, t)),
        );
    }
    found
}

/// The target of an inline link, `rest` being what follows `](`: up to
/// the matching `)`, without a title, `<…>` unwrapped.
fn inline_target(rest: &str) -> String {
    if let Some(angled) = rest.strip_prefix('<') {
        return angled.split('>').next().unwrap_or("").to_string();
    }
    let mut depth = 0usize;
    let end = rest
        .char_indices()
        .find(|&(_, c)| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' if depth == 0 => true,
            ')' => {
                depth -= 1;
                false
            }
            c => c.is_whitespace(),
        })
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].to_string()
}

/// The target of a reference definition line, `[label]: target`.
fn reference_definition(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line[indent..].strip_prefix('[').filter(|_| indent <= 3)?;
    let after = rest.split_once(']')?.1.strip_prefix(':')?;
    let target = after.split_whitespace().next()?;
    Some(target.trim_start_matches('<').trim_end_matches('>'))
}

/// Whether a target starts with a URL scheme (`https:`, `mailto:`, …).
fn has_scheme(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// A line with its code spans blanked.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        out.push_str(&rest[..open]);
        let ticks = rest[open..].len() - rest[open..].trim_start_matches('`').len();
        let after = &rest[open + ticks..];
        let fence = "`".repeat(ticks);
        match after.find(&fence) {
            Some(close) => {
                out.push_str(&" ".repeat(ticks * 2 + close));
                rest = &after[close + ticks..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `target` as a repository path seen from the Markdown file `from`
/// (`/…` from the repository root), `..` and `.` resolved; `None` when it
/// leaves the repository.
fn resolve(from: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = match target.strip_prefix('/') {
        Some(_) => Vec::new(),
        None => from.split('/').collect::<Vec<_>>().split_last()?.1.to_vec(),
    };
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// The anchors of a Markdown text: its ATX headings as GitHub names them
/// (lower case, punctuation dropped, spaces to `-`, repeats numbered
/// `-1`, `-2`, …), and HTML `id="…"` / `name="…"` attributes.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = HashSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for attr in ["id=\"", "name=\""] {
            for (at, _) in line.match_indices(attr) {
                let value = line[at + attr.len()..].split('"').next().unwrap_or("");
                found.insert(value.to_string());
            }
        }
        let level = trimmed.len() - trimmed.trim_start_matches('#').len();
        let Some(title) = trimmed[level..].strip_prefix(' ') else {
            continue;
        };
        if !(1..=6).contains(&level) {
            continue;
        }
        let slug: String = title
            .trim()
            .trim_end_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        found.insert(if *n == 0 { slug } else { format!("{slug}-{n}") });
        *n += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::super::Fixture;
    use super::*;

    const README: &str = "\
# The project

See [the guide](docs/guide.md), [its setup](docs/guide.md#set-up-the-board-v2),
[the code](src/) and [below](#the-project-1). ![A plot](docs/plot.png \"title\")
[Home](https://example.org/x.md) and [mail](mailto:a@b.c) are not checked,
nor is `[code](missing.md)`:

```
[fenced](missing.md)
```

## The project

[guide]: ./docs/guide.md
";

    const GUIDE: &str = "# Guide\n\n## Set up the board (v2)\n\nBack to [the top](../README.md).\n";

    fn fixture(readme: &str) -> Fixture {
        Fixture::new(&[
            ("README.md", readme),
            ("docs/guide.md", GUIDE),
            ("docs/plot.png", "png"),
            ("src/lib.rs", "fn f() {}"),
        ])
    }

    #[test]
    fn links_to_tracked_files_folders_and_headings_pass() {
        assert_eq!(fixture(README).run(check), Vec::<String>::new());
    }

    #[test]
    fn a_link_to_a_missing_file_fails() {
        let readme = README.replace("(docs/guide.md)", "(docs/gide.md)");
        assert_eq!(
            fixture(&readme).run(check),
            ["README.md:3: md-link: `docs/gide.md`: no tracked file or folder `docs/gide.md`"]
        );
    }

    #[test]
    fn a_link_out_of_the_repository_fails() {
        let readme = README.replace("[guide]: ./docs/guide.md", "[guide]: ../../guide.md");
        assert_eq!(
            fixture(&readme).run(check),
            ["README.md:14: md-link: `../../guide.md` leaves the repository"]
        );
    }

    #[test]
    fn a_missing_heading_fails_here_and_in_another_file() {
        let readme = README
            .replace("#the-project-1", "#the-projects")
            .replace("#set-up-the-board-v2", "#setup");
        assert_eq!(
            fixture(&readme).run(check),
            [
                "README.md:3: md-link: `docs/guide.md#setup`: no heading `#setup` in `docs/guide.md`",
                "README.md:4: md-link: `#the-projects`: no such heading in this file",
            ]
        );
    }

    #[test]
    fn an_untracked_file_does_not_count() {
        let f = Fixture::new(&[("README.md", "[out](target/report.md)\n")]);
        assert_eq!(
            f.run(check),
            [
                "README.md:1: md-link: `target/report.md`: no tracked file or folder `target/report.md`"
            ]
        );
    }

    #[test]
    fn headings_become_github_anchors() {
        let a =
            anchors("# SparF+: closing the gap\n## The CSD over NVMe/TCP (`serve`)\n# A\n# A\n");
        for anchor in [
            "sparf-closing-the-gap",
            "the-csd-over-nvmetcp-serve",
            "a",
            "a-1",
        ] {
            assert!(a.contains(anchor), "{anchor} in {a:?}");
        }
    }

    #[test]
    fn targets_are_resolved_against_the_linking_file() {
        assert_eq!(resolve("docs/a.md", "../b/c.md").as_deref(), Some("b/c.md"));
        assert_eq!(resolve("docs/a.md", "/x").as_deref(), Some("x"));
        assert_eq!(resolve("a.md", "../x"), None);
    }
}
