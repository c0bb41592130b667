//! SentencePiece BPE (`tokenizer.ggml.model = llama`: Gemma, Llama 2),
//! as llama.cpp's SPM tokenizer runs it: spaces become `▁` (and a `▁` is
//! put first when `add_space_prefix`), the text starts as one symbol per
//! UTF-8 char, and the adjacent pair whose concatenation is the vocabulary
//! token of highest score is merged first (leftmost on ties) until no pair
//! is a token; a char left without a token becomes its `<0xNN>` byte tokens.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use super::NO_TOKEN;

/// SentencePiece's space marker.
pub(super) const SPACE: char = '\u{2581}';

/// The SPM vocabulary: token scores, ids by text, byte-fallback tokens.
#[derive(Debug)]
pub(super) struct Spm {
    scores: Vec<f32>,
    id_of: HashMap<String, u32>,
    /// `<0xNN>` token of each byte; `NO_TOKEN` when absent.
    byte_ids: [u32; 256],
    /// The byte each `<0xNN>` token stands for.
    byte_of: HashMap<u32, u8>,
    pub(super) add_space_prefix: bool,
}

/// A candidate merge of symbols `left` and `right` (adjacent now).
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    /// Bytes of the merged text, to notice symbols changed since.
    size: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bigram {}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bigram {
    /// Higher score first, then the leftmost.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.left.cmp(&self.left))
    }
}

/// One symbol of the piece being merged: a byte range of the text, linked
/// to its live neighbours (`len` 0 once merged into its left neighbour).
#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

impl Spm {
    /// From the vocabulary and its scores (`tokenizer.ggml.scores`; all 0
    /// when `None`).
    pub(super) fn new(tokens: &[String], scores: Option<&[f32]>, add_space_prefix: bool) -> Self {
        let mut byte_ids = [NO_TOKEN; 256];
        let mut byte_of = HashMap::new();
        let mut id_of = HashMap::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            let id = i as u32;
            id_of.entry(t.clone()).or_insert(id);
            if let Some(b) = t
                .strip_prefix("<0x")
                .and_then(|h| h.strip_suffix('>'))
                .filter(|h| h.len() == 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                if byte_ids[b as usize] == NO_TOKEN {
                    byte_ids[b as usize] = id;
                }
                byte_of.insert(id, b);
            }
        }
        let scores = match scores {
            Some(s) => s.to_vec(),
            None => vec![0.0; tokens.len()],
        };
        Self {
            scores,
            id_of,
            byte_ids,
            byte_of,
            add_space_prefix,
        }
    }

    /// Appends the ids of `text` (one raw fragment; `unk` stands in for a
    /// byte without a `<0xNN>` token, which is dropped when `None`).
    pub(super) fn encode(&self, text: &str, unk: Option<u32>, out: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        let mut s = String::with_capacity(text.len() + 3);
        if self.add_space_prefix {
            s.push(SPACE);
        }
        s.extend(text.chars().map(|c| if c == ' ' { SPACE } else { c }));
        let mut symbols: Vec<Symbol> = Vec::new();
        for (i, (start, c)) in s.char_indices().enumerate() {
            symbols.push(Symbol {
                start,
                len: c.len_utf8(),
                prev: i.checked_sub(1),
                next: Some(i + 1),
            });
        }
        if let Some(last) = symbols.last_mut() {
            last.next = None;
        }
        let mut queue = BinaryHeap::new();
        let push = |queue: &mut BinaryHeap<Bigram>, symbols: &[Symbol], l: usize, r: usize| {
            let (a, b) = (symbols[l], symbols[r]);
            let merged = &s[a.start..a.start + a.len + b.len];
            if let Some(&id) = self.id_of.get(merged) {
                queue.push(Bigram {
                    score: self.scores.get(id as usize).copied().unwrap_or(0.0),
                    left: l,
                    right: r,
                    size: merged.len(),
                });
            }
        };
        for i in 1..symbols.len() {
            push(&mut queue, &symbols, i - 1, i);
        }
        while let Some(bigram) = queue.pop() {
            let (l, r) = (symbols[bigram.left], symbols[bigram.right]);
            if l.len == 0 || r.len == 0 || l.len + r.len != bigram.size {
                continue;
            }
            symbols[bigram.left].len += r.len;
            symbols[bigram.right].len = 0;
            symbols[bigram.left].next = r.next;
            if let Some(n) = r.next {
                symbols[n].prev = Some(bigram.left);
            }
            if let Some(p) = l.prev {
                push(&mut queue, &symbols, p, bigram.left);
            }
            if let Some(n) = r.next {
                push(&mut queue, &symbols, bigram.left, n);
            }
        }
        let mut at = Some(0);
        while let Some(i) = at {
            let sym = symbols[i];
            let piece = &s[sym.start..sym.start + sym.len];
            match self.id_of.get(piece) {
                Some(&id) => out.push(id),
                None => {
                    for b in piece.bytes() {
                        match (self.byte_ids[b as usize], unk) {
                            (NO_TOKEN, Some(unk)) => out.push(unk),
                            (NO_TOKEN, None) => {}
                            (id, _) => out.push(id),
                        }
                    }
                }
            }
            at = sym.next;
        }
    }

    /// Appends the bytes of token `id` spelled `text`: a byte token's byte,
    /// otherwise the text with `▁` as a space.
    pub(super) fn push_bytes(&self, id: u32, text: &str, out: &mut Vec<u8>) {
        if let Some(&b) = self.byte_of.get(&id) {
            out.push(b);
            return;
        }
        for c in text.chars() {
            match c {
                SPACE => out.push(b' '),
                c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
        }
    }
}
