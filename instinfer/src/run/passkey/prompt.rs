//! The passkey prompt and the check of the answer.
//!
//! A prompt is an instruction, repeated filler sentences with the needle
//! ("The pass key is NNNNN. …") between two of them, and the question,
//! ending in "The pass key is" so that greedy decoding goes on with the
//! number. Each piece is tokenized on its own and the pieces start with a
//! space or follow a newline, so the tokens of a piece are the same
//! wherever it sits and the token count is exact: the filler is repeated
//! as often as fits the requested length.

/// The instruction before the filler.
const INSTRUCTION: &str = "There is an important info hidden inside a lot of irrelevant text. \
Find it and memorize it. I will quiz you about the important information there.";

/// One repetition of the filler.
const FILLER: &str =
    " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

/// The question asked after the filler.
const QUESTION: &str = " What is the pass key?";

/// What the answer starts with; the model goes on from here.
const ANSWER_START: &str = "The pass key is";

/// SmolLM2's chat template around one user turn, up to the assistant's
/// turn.
const CHAT_USER: &str = "<|im_start|>user\n";
const CHAT_ASSISTANT: &str = "<|im_end|>\n<|im_start|>assistant\n";

/// The needle with the key written in.
pub fn needle(key: u32) -> String {
    format!(" The pass key is {key}. Remember it. {key} is the pass key.")
}

/// What one prompt asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PromptSpec {
    /// The most tokens the prompt may have; it has fewer by less than one
    /// filler repetition.
    pub tokens: usize,
    /// Where the needle goes, as the share of the filler before it (0..=1).
    pub depth: f64,
    /// The pass key.
    pub key: u32,
    /// Wrap the text in the chat template (the answer's start then opens
    /// the assistant's turn).
    pub chat: bool,
}

/// A prompt's tokens and where its needle is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// The tokens.
    pub tokens: Vec<u32>,
    /// Index of the needle's first token.
    pub needle_at: usize,
    /// The needle's token count.
    pub needle_len: usize,
}

impl Prompt {
    /// The needle's position as a share of the prompt (0..1).
    pub fn depth(&self) -> f64 {
        self.needle_at as f64 / self.tokens.len().max(1) as f64
    }
}

/// Builds the prompt of `spec`; `encode` tokenizes one piece, turning the
/// chat template's control spellings into their tokens. Fails with the
/// fewest tokens a prompt takes when `spec.tokens` is below it.
pub fn build(encode: impl Fn(&str) -> Vec<u32>, spec: &PromptSpec) -> Result<Prompt, usize> {
    let (head, tail) = if spec.chat {
        (
            encode(&format!("{CHAT_USER}{INSTRUCTION}")),
            encode(&format!("{QUESTION}{CHAT_ASSISTANT}{ANSWER_START}")),
        )
    } else {
        (
            encode(INSTRUCTION),
            encode(&format!("{QUESTION} {ANSWER_START}")),
        )
    };
    let filler = encode(FILLER);
    let needle = encode(&needle(spec.key));
    let fixed = head.len() + needle.len() + tail.len();
    let least = fixed + filler.len();
    if spec.tokens < least || filler.is_empty() {
        return Err(least);
    }
    let repeats = (spec.tokens - fixed) / filler.len();
    let before = ((spec.depth.clamp(0.0, 1.0) * repeats as f64).round() as usize).min(repeats);
    let mut tokens = Vec::with_capacity(fixed + repeats * filler.len());
    tokens.extend_from_slice(&head);
    for _ in 0..before {
        tokens.extend_from_slice(&filler);
    }
    let needle_at = tokens.len();
    tokens.extend_from_slice(&needle);
    for _ in before..repeats {
        tokens.extend_from_slice(&filler);
    }
    tokens.extend_from_slice(&tail);
    Ok(Prompt {
        tokens,
        needle_at,
        needle_len: needle.len(),
    })
}

/// The first number in `text` (a maximal run of ASCII digits), if any.
pub fn first_number(text: &str) -> Option<&str> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Whether the generated `text` answers `key`: its first number is the
/// key, digit for digit.
pub fn retrieved(text: &str, key: u32) -> bool {
    first_number(text) == Some(key.to_string().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per character: every piece's count is its length.
    fn chars(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    fn occurrences(hay: &[u32], needle: &[u32]) -> Vec<usize> {
        hay.windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle)
            .map(|(i, _)| i)
            .collect()
    }

    fn spec(tokens: usize, depth: f64, chat: bool) -> PromptSpec {
        PromptSpec {
            tokens,
            depth,
            key: 40_917,
            chat,
        }
    }

    #[test]
    fn the_needle_is_there_once_at_the_requested_depth() {
        let filler = chars(FILLER).len();
        for chat in [false, true] {
            for depth in [0.1, 0.37, 0.5, 0.9] {
                for tokens in [2048, 3001, 4096] {
                    let p = build(chars, &spec(tokens, depth, chat)).unwrap();
                    let n = chars(&needle(40_917));
                    assert_eq!(occurrences(&p.tokens, &n), vec![p.needle_at]);
                    assert_eq!(p.needle_len, n.len());
                    assert!(p.tokens.len() <= tokens, "{} > {tokens}", p.tokens.len());
                    assert!(p.tokens.len() > tokens - filler, "{}", p.tokens.len());
                    // The needle sits after the requested share of the
                    // filler repetitions, which is about that share of
                    // the prompt (the instruction, 7% of these prompts,
                    // comes before the filler).
                    let fills = occurrences(&p.tokens, &chars(FILLER));
                    let before = fills.iter().filter(|&&i| i < p.needle_at).count();
                    assert_eq!(before, (depth * fills.len() as f64).round() as usize);
                    assert!((p.depth() - depth).abs() < 0.1, "{} vs {depth}", p.depth());
                    let end = p.needle_at + p.needle_len;
                    assert_eq!(&p.tokens[end..end + filler], &chars(FILLER)[..]);
                }
            }
        }
    }

    #[test]
    fn the_prompt_ends_where_the_answer_starts() {
        let plain = build(chars, &spec(2048, 0.5, false)).unwrap();
        let text: String = plain
            .tokens
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        assert!(text.starts_with(INSTRUCTION));
        assert!(text.ends_with("What is the pass key? The pass key is"));
        let chat = build(chars, &spec(2048, 0.5, true)).unwrap();
        let text: String = chat
            .tokens
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        assert!(text.starts_with("<|im_start|>user\nThere is"));
        assert!(text.ends_with("<|im_start|>assistant\nThe pass key is"));
    }

    #[test]
    fn depth_zero_and_one_put_the_needle_at_the_ends_of_the_filler() {
        let first = build(chars, &spec(2048, 0.0, false)).unwrap();
        assert_eq!(first.needle_at, chars(INSTRUCTION).len());
        let last = build(chars, &spec(2048, 1.0, false)).unwrap();
        let tail = chars(&format!("{QUESTION} {ANSWER_START}")).len();
        assert_eq!(last.needle_at + last.needle_len + tail, last.tokens.len());
    }

    #[test]
    fn too_short_a_prompt_is_refused_with_the_least_length() {
        let least = build(chars, &spec(10, 0.5, false)).unwrap_err();
        assert!(least > 10);
        assert!(build(chars, &spec(least, 0.5, false)).is_ok());
        assert_eq!(build(chars, &spec(least - 1, 0.5, false)), Err(least));
    }

    #[test]
    fn the_first_number_of_the_answer_must_be_the_key() {
        assert_eq!(first_number(" 40917. Remember"), Some("40917"));
        assert_eq!(first_number("no digits"), None);
        assert!(retrieved(" 40917.", 40_917));
        assert!(retrieved("40917", 40_917));
        assert!(!retrieved(" 40918.", 40_917));
        assert!(!retrieved(" 4091", 40_917));
        assert!(!retrieved(" 409170", 40_917));
        assert!(!retrieved(" 12 then 40917", 40_917));
        assert!(!retrieved(" the key", 40_917));
    }
}
