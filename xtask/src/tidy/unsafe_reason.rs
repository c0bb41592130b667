//! Rule `unsafe-reason`: `unsafe` is allowed only where a reason is
//! written down, so every attribute that allows `unsafe_code`
//! (`#[allow(unsafe_code)]`, `#![allow(unsafe_code)]`, inside `cfg_attr`
//! too) has a plain `//` comment on its line or alone on the line before.

use super::source::Source;
use super::{Tree, Violation};

const RULE: &str = "unsafe-reason";

pub(crate) fn check(tree: &Tree) -> Vec<Violation> {
    let mut found = Vec::new();
    for path in tree.ending(".rs") {
        let Some(text) = tree.text(path) else {
            continue;
        };
        let src = Source::new(&text);
        let lines = src.code_lines();
        for (i, line) in lines.iter().enumerate() {
            if !allows_unsafe(line) {
                continue;
            }
            let here = !src.comments[i].is_empty();
            let before = i > 0 && lines[i - 1].trim().is_empty() && !src.comments[i - 1].is_empty();
            if !here && !before {
                found.push(Violation::new(
                    path,
                    i + 1,
                    RULE,
                    "`allow(unsafe_code)` without a reason: say why in a `//` comment on this line or the line before"
                        .to_string(),
                ));
            }
        }
    }
    found
}

/// Whether a line of code (comments and strings blanked) holds an
/// attribute that allows `unsafe_code`.
fn allows_unsafe(code: &str) -> bool {
    code.contains('#')
        && code.match_indices("allow").any(|(at, _)| {
            let rest = code[at + "allow".len()..].trim_start();
            let Some(list) = rest.strip_prefix('(') else {
                return false;
            };
            list.split(')')
                .next()
                .unwrap_or("")
                .split(',')
                .any(|lint| lint.trim() == "unsafe_code")
        })
}

#[cfg(test)]
mod tests {
    use super::super::Fixture;
    use super::*;

    const LIB: &str = "\
#![deny(unsafe_code)]
// MMIO: the registers are only reachable through raw pointers.
#[allow(unsafe_code)]
mod mmio;
#[allow(unsafe_code)] // the ioctl calls
mod sys;
#[cfg_attr(unix, allow(dead_code, unsafe_code))] // signal handlers
mod signal;
const S: &str = \"#[allow(unsafe_code)]\";
";

    #[test]
    fn allows_with_a_reason_pass() {
        let f = Fixture::new(&[("src/lib.rs", LIB)]);
        assert_eq!(f.run(check), Vec::<String>::new());
    }

    #[test]
    fn an_allow_without_a_reason_fails() {
        let lib = LIB
            .replace(
                "// MMIO: the registers are only reachable through raw pointers.\n",
                "\n",
            )
            .replace(" // signal handlers", "")
            .replace("#![deny(unsafe_code)]", "#![allow(unsafe_code)] //");
        let message = "unsafe-reason: `allow(unsafe_code)` without a reason: say why in a `//` comment on this line or the line before";
        assert_eq!(
            f_run(&lib),
            [
                format!("src/lib.rs:1: {message}"),
                format!("src/lib.rs:3: {message}"),
                format!("src/lib.rs:7: {message}"),
            ]
        );
    }

    #[test]
    fn a_doc_comment_is_not_a_reason() {
        let lib = "/// The registers.\n#[allow(unsafe_code)]\nmod mmio;\n";
        assert_eq!(f_run(lib).len(), 1);
    }

    fn f_run(lib: &str) -> Vec<String> {
        Fixture::new(&[("src/lib.rs", lib)]).run(check)
    }

    #[test]
    fn only_attributes_allowing_unsafe_code_count() {
        assert!(allows_unsafe("#[allow( unsafe_code )]"));
        assert!(allows_unsafe("#![allow(clippy::x, unsafe_code)]"));
        assert!(!allows_unsafe("#![deny(unsafe_code)]"));
        assert!(!allows_unsafe("#[allow(unsafe_op_in_unsafe_fn)]"));
        assert!(!allows_unsafe("let allow = (unsafe_code);"));
    }
}
