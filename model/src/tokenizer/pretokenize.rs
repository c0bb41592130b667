//! Pre-tokenization: cutting text into the pieces BPE runs on, as llama.cpp
//! does for `smollm` (every digit alone first, then GPT-2's pattern
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//! on the text between digits) and for `qwen2` (its own pattern, in
//! [`qwen2`]), hand-coded over char classes. The char predicates
//! `is_alphabetic`/`is_numeric`/`is_whitespace` stand in for
//! `\p{L}`/`\p{N}`/`\s`.

mod qwen2;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Letter,
    Number,
    Space,
    Other,
}

fn class(c: char) -> Class {
    if c.is_whitespace() {
        Class::Space
    } else if c.is_alphabetic() {
        Class::Letter
    } else if c.is_numeric() {
        Class::Number
    } else {
        Class::Other
    }
}

/// The pre-tokenizer named by `tokenizer.ggml.pre`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PreTokenizer {
    /// `smollm`: digits split individually, then GPT-2.
    SmolLm,
    /// `gpt2`: the GPT-2 pattern alone.
    Gpt2,
    /// `qwen2` (Qwen2, Qwen2.5, Qwen3): Qwen's pattern, single digits.
    Qwen2,
}

impl PreTokenizer {
    pub(super) fn split<'a>(self, text: &'a str, out: &mut Vec<&'a str>) {
        match self {
            Self::Gpt2 => split_gpt2(text, out),
            Self::Qwen2 => qwen2::split(text, out),
            Self::SmolLm => {
                let mut start = 0;
                for (i, c) in text.char_indices() {
                    if c.is_numeric() {
                        split_gpt2(&text[start..i], out);
                        let end = i + c.len_utf8();
                        out.push(&text[i..end]);
                        start = end;
                    }
                }
                split_gpt2(&text[start..], out);
            }
        }
    }
}

/// GPT-2's pattern on `text`, pieces appended to `out`; the lookahead of
/// `\s+(?!\S)` sees only `text`, as in llama.cpp.
fn split_gpt2<'a>(text: &'a str, out: &mut Vec<&'a str>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let byte = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let ch = |i: usize| chars.get(i).map(|&(_, c)| c);
    let mut pos = 0;
    while pos < n {
        let start = pos;
        let c = chars[pos].1;
        pos = next_end(c, pos, n, &ch);
        out.push(&text[byte(start)..byte(pos)]);
    }
}

/// End (exclusive, in chars) of the piece starting with `c` at `pos`.
fn next_end(c: char, pos: usize, n: usize, ch: &impl Fn(usize) -> Option<char>) -> usize {
    let next = ch(pos + 1);
    if c == '\'' {
        match (next, ch(pos + 2)) {
            (Some('s' | 't' | 'm' | 'd'), _) => return pos + 2,
            (Some('r' | 'v'), Some('e')) | (Some('l'), Some('l')) => return pos + 3,
            _ => {}
        }
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional leading space, then a run.
    let lead = if c == ' ' { next } else { Some(c) };
    if let Some(run) = lead.map(class).filter(|&k| k != Class::Space) {
        let mut end = pos + usize::from(c == ' ');
        while ch(end).map(class) == Some(run) {
            end += 1;
        }
        return end;
    }
    let mut ws = 0;
    while ch(pos + ws).map(class) == Some(Class::Space) {
        ws += 1;
    }
    // `\s+(?!\S)`: a run followed by a non-space leaves its last char to it.
    if ws > 1 && pos + ws < n {
        return pos + ws - 1;
    }
    pos + ws.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pre: PreTokenizer, s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        pre.split(s, &mut out);
        out
    }

    #[test]
    fn gpt2_pattern_cases() {
        let p = |s| pieces(PreTokenizer::Gpt2, s);
        assert_eq!(p("Hello world"), ["Hello", " world"]);
        assert_eq!(p("a  b"), ["a", " ", " b"]);
        assert_eq!(p("a \n\n b"), ["a", " \n\n", " b"]);
        assert_eq!(p("end   "), ["end", "   "]);
        assert_eq!(p("I'm it's we'll"), ["I", "'m", " it", "'s", " we", "'ll"]);
        assert_eq!(p("x, y!!"), ["x", ",", " y", "!!"]);
        assert_eq!(p(" 123abc"), [" 123", "abc"]);
        assert_eq!(p("\nHello"), ["\n", "Hello"]);
        assert_eq!(p("' "), ["'", " "]);
        assert_eq!(p(""), Vec::<&str>::new());
    }

    #[test]
    fn smollm_splits_digits_first() {
        let p = |s| pieces(PreTokenizer::SmolLm, s);
        assert_eq!(p("in 2024."), ["in", " ", "2", "0", "2", "4", "."]);
        assert_eq!(p("a1b"), ["a", "1", "b"]);
    }

    #[test]
    fn pieces_cover_the_input() {
        let s = "Hé said: «ça va?»  \t 42 times\u{3000}x'LL 'll";
        assert_eq!(pieces(PreTokenizer::SmolLm, s).concat(), s);
    }
}
