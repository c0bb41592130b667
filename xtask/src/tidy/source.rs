//! Rust source as the rules read it: the code with comments, strings and
//! character literals blanked out (so text inside them never looks like
//! code), lines kept where they were, and each line's plain `//` comment.

/// A Rust file split into code and comments.
#[derive(Debug)]
pub(crate) struct Source {
    /// The file with every comment, string and character literal replaced
    /// by spaces; newlines stay, so line `i` of `code` is line `i` of the
    /// file.
    pub(crate) code: String,
    /// Per line (0-based), the text of its plain `//` comment (not `///`
    /// or `//!`), trimmed; empty when it has none.
    pub(crate) comments: Vec<String>,
}

impl Source {
    pub(crate) fn new(text: &str) -> Source {
        Scanner::default().scan(text)
    }

    /// The code of each line.
    pub(crate) fn code_lines(&self) -> Vec<&str> {
        self.code.split('\n').collect()
    }
}

/// The `//!` lines of `text`: (1-based line, content after `//!` and one
/// space).
pub(crate) fn inner_docs(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let rest = line.trim_start().strip_prefix("//!")?;
            Some((i + 1, rest.strip_prefix(' ').unwrap_or(rest)))
        })
        .collect()
}

#[derive(Default)]
struct Scanner {
    code: String,
    comments: Vec<String>,
}

impl Scanner {
    fn keep(&mut self, c: char) {
        self.code.push(c);
        if c == '\n' {
            self.comments.push(String::new());
        }
    }

    fn blank(&mut self, chars: &[char]) {
        for &c in chars {
            self.keep(if c == '\n' { '\n' } else { ' ' });
        }
    }

    fn scan(mut self, text: &str) -> Source {
        self.comments.push(String::new());
        let chars: Vec<char> = text.chars().collect();
        let at = |i: usize| chars.get(i).copied();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let start = i;
            let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
            if c == '/' && at(i + 1) == Some('/') {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                let comment: String = chars[start..i].iter().collect();
                let doc = comment.starts_with("//!")
                    || (comment.starts_with("///") && !comment.starts_with("////"));
                if !doc {
                    let line = self.comments.len() - 1;
                    self.comments[line] = comment.trim_start_matches('/').trim().to_string();
                }
                self.blank(&chars[start..i]);
            } else if c == '/' && at(i + 1) == Some('*') {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && at(i + 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                self.blank(&chars[start..i.min(chars.len())]);
            } else if c == '"' {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i = (i + 1).min(chars.len());
                self.blank(&chars[start..i]);
            } else if !ident_before && (c == 'r' || (c == 'b' && at(i + 1) == Some('r'))) {
                // A raw string `r#"…"#` (or `br…`), else an identifier.
                let mut j = if c == 'b' { i + 2 } else { i + 1 };
                let hashes_start = j;
                while at(j) == Some('#') {
                    j += 1;
                }
                let hashes = j - hashes_start;
                if at(j) == Some('"') {
                    j += 1;
                    loop {
                        match at(j) {
                            None => break,
                            Some('"') if (1..=hashes).all(|k| at(j + k) == Some('#')) => {
                                j += 1 + hashes;
                                break;
                            }
                            Some(_) => j += 1,
                        }
                    }
                    i = j.min(chars.len());
                    self.blank(&chars[start..i]);
                } else {
                    self.keep(c);
                    i += 1;
                }
            } else if c == '\'' && at(i + 1) == Some('\\') {
                // An escaped character literal: `'\n'`, `'\u{..}'`, `'\''`.
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i = (i + 1).min(chars.len());
                self.blank(&chars[start..i]);
            } else if c == '\'' && at(i + 2) == Some('\'') {
                i += 3;
                self.blank(&chars[start..i]);
            } else {
                // Code, including a lifetime's `'`.
                self.keep(c);
                i += 1;
            }
        }
        Source {
            code: self.code,
            comments: self.comments,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_strings_and_chars_are_blanked_in_place() {
        let text = "let a = \"x // y\"; // why\n/* b\n c */ let c = '{';\nlet r = r#\"}\"#; fn f<'a>() {}\n";
        let src = Source::new(text);
        let lines = src.code_lines();
        let blank = |n: usize| " ".repeat(n);
        assert_eq!(lines[0].trim_end(), format!("let a = {};", blank(8)));
        assert_eq!(lines[1].trim(), "");
        assert_eq!(lines[2].trim(), format!("let c = {};", blank(3)));
        assert_eq!(
            lines[3].trim(),
            format!("let r = {}; fn f<'a>() {{}}", blank(6))
        );
        assert_eq!(src.comments[0], "why");
        assert_eq!(src.comments[1], "");
        assert_eq!(src.code.len(), text.len());
    }

    #[test]
    fn doc_comments_are_not_plain_comments() {
        let src = Source::new("/// doc\n//! inner\n//// plain\n");
        assert_eq!(src.comments, ["", "", "plain", ""]);
        assert!(src.code.trim().is_empty());
    }

    #[test]
    fn escaped_quotes_stay_inside_their_literal() {
        let src = Source::new("let s = \"a\\\"{\"; let c = '\\''; mod m;");
        assert_eq!(
            src.code.trim_end(),
            format!("let s ={}; let c ={}; mod m;", " ".repeat(7), " ".repeat(5))
        );
    }

    #[test]
    fn inner_docs_are_numbered_from_one() {
        let docs = inner_docs("//! a\n//!\n//!  b\nfn f() {}\n");
        assert_eq!(docs, [(1, "a"), (2, ""), (3, " b")]);
    }
}
