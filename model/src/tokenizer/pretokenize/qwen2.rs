//! Qwen's pre-tokenizer (`tokenizer.ggml.pre = qwen2`, also Qwen3's):
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
//! ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, hand-coded: at each
//! position the alternatives are tried in order, as a backtracking regex
//! engine does. Unlike GPT-2's, digits come one at a time, a letter run
//! may take one leading non-letter (`(hello`, `\tx`), and newlines stick
//! to the punctuation or whitespace before them. Contractions fold ASCII
//! case only, as llama.cpp's spelling of the pattern does.

use super::{Class, class};

/// Qwen's pattern on `text`, pieces appended to `out`.
pub(super) fn split<'a>(text: &'a str, out: &mut Vec<&'a str>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let ch = |i: usize| chars.get(i).map(|&(_, c)| c);
    let mut pos = 0;
    while let Some(c) = ch(pos) {
        let end = piece_end(c, pos, &ch);
        out.push(&text[byte(pos)..byte(end)]);
        pos = end;
    }
}

fn is_newline(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// End (exclusive, in chars) of the piece starting with `c` at `pos`.
fn piece_end(c: char, pos: usize, ch: &impl Fn(usize) -> Option<char>) -> usize {
    let kind = |i: usize| ch(i).map(class);
    let run = |mut i: usize, k: Class| {
        while kind(i) == Some(k) {
            i += 1;
        }
        i
    };
    // `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
    if c == '\'' {
        let lower = |i: usize| ch(i).map(|c| c.to_ascii_lowercase());
        match (lower(pos + 1), lower(pos + 2)) {
            (Some('s' | 't' | 'm' | 'd'), _) => return pos + 2,
            (Some('r' | 'v'), Some('e')) | (Some('l'), Some('l')) => return pos + 3,
            _ => {}
        }
    }
    // `[^\r\n\p{L}\p{N}]?\p{L}+`
    match class(c) {
        Class::Letter => return run(pos, Class::Letter),
        Class::Number => return pos + 1, // `\p{N}`
        _ if !is_newline(c) && kind(pos + 1) == Some(Class::Letter) => {
            return run(pos + 1, Class::Letter);
        }
        _ => {}
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    let start = pos + usize::from(c == ' ');
    if kind(start) == Some(Class::Other) {
        let mut end = run(start, Class::Other);
        while ch(end).is_some_and(is_newline) {
            end += 1;
        }
        return end;
    }
    // Only whitespace is left. `\s*[\r\n]+`: up to the run's last newline.
    let ws_end = run(pos, Class::Space);
    if let Some(last) = (pos..ws_end).rev().find(|&i| ch(i).is_some_and(is_newline)) {
        return last + 1;
    }
    // `\s+(?!\S)`: a run followed by a non-space leaves its last char; `\s+`.
    if ws_end - pos > 1 && ch(ws_end).is_some() {
        return ws_end - 1;
    }
    ws_end.max(pos + 1)
}

#[cfg(test)]
mod tests {
    fn p(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        super::split(s, &mut out);
        out
    }

    #[test]
    fn digits_come_one_at_a_time() {
        assert_eq!(p("in 2024."), ["in", " ", "2", "0", "2", "4", "."]);
        assert_eq!(p("3.14"), ["3", ".", "1", "4"]);
        assert_eq!(p("12abc x9"), ["1", "2", "abc", " x", "9"]);
    }

    #[test]
    fn contractions_fold_case() {
        assert_eq!(
            p("I'm it's THEY'RE we'Ll 'd"),
            [
                "I", "'m", " it", "'s", " THEY", "'RE", " we", "'Ll", " '", "d"
            ]
        );
        assert_eq!(p("'hello 'x"), ["'hello", " '", "x"]);
    }

    #[test]
    fn punctuation_runs_and_leading_non_letters() {
        assert_eq!(p("x, y!!"), ["x", ",", " y", "!!"]);
        assert_eq!(p("(hello) world"), ["(hello", ")", " world"]);
        assert_eq!(p("a -> b"), ["a", " ->", " b"]);
        assert_eq!(p("\tfoo naïve 東京"), ["\tfoo", " naïve", " 東京"]);
    }

    #[test]
    fn newlines_and_spaces() {
        assert_eq!(p("Hi!!\n\nBye"), ["Hi", "!!\n\n", "Bye"]);
        assert_eq!(p("a \n\n b"), ["a", " \n\n", " b"]);
        assert_eq!(p("x\r\n\ty"), ["x", "\r\n", "\ty"]);
        assert_eq!(p("a  b"), ["a", " ", " b"]);
        assert_eq!(p("end   "), ["end", "   "]);
        assert_eq!(p("\n  \n"), ["\n  \n"]);
        assert_eq!(p("  1"), [" ", " ", "1"]);
        assert_eq!(p(""), Vec::<&str>::new());
    }

    #[test]
    fn pieces_cover_the_input() {
        let s = "Hé said: «ça va?»  \t 42 times\u{3000}x'LL 'll\r\n\n...\n";
        assert_eq!(p(s).concat(), s);
    }
}
