//! The SentencePiece tokenizer on a small synthetic vocabulary: merges by
//! score (leftmost on ties), byte fallback, `▁` for spaces, the space
//! prefix, BOS and round trips.

use crate::gguf::{Array, GgufWriter, Value};
use crate::{Gguf, ModelError, Tokenizer};

/// Control tokens `<pad> <eos> <bos>`, `<unk>`, the 256 `<0xNN>` byte
/// tokens, then `pieces` with their scores.
fn spm(pieces: &[(&str, f32)], add_space_prefix: Option<bool>) -> Result<Tokenizer, ModelError> {
    let mut tokens: Vec<String> = ["<pad>", "<eos>", "<bos>", "<unk>"]
        .map(String::from)
        .to_vec();
    let mut types = vec![3, 3, 3, 2];
    tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
    types.extend([6; 256]);
    let mut scores = vec![0.0; tokens.len()];
    for (p, s) in pieces {
        tokens.push((*p).to_owned());
        types.push(1);
        scores.push(*s);
    }
    let mut w = GgufWriter::new();
    w.kv("tokenizer.ggml.model", Value::String("llama".into()))
        .kv("tokenizer.ggml.tokens", Value::Array(Array::String(tokens)))
        .kv("tokenizer.ggml.scores", Value::Array(Array::F32(scores)))
        .kv("tokenizer.ggml.token_type", Value::Array(Array::I32(types)))
        .kv("tokenizer.ggml.eos_token_id", Value::U32(1))
        .kv("tokenizer.ggml.bos_token_id", Value::U32(2))
        .kv("tokenizer.ggml.unknown_token_id", Value::U32(3))
        .kv("tokenizer.ggml.add_bos_token", Value::Bool(true));
    if let Some(p) = add_space_prefix {
        w.kv("tokenizer.ggml.add_space_prefix", Value::Bool(p));
    }
    Tokenizer::from_gguf(&Gguf::parse(w.to_bytes())?)
}

/// The pieces of `ids`, spelled as in the vocabulary.
fn pieces(t: &Tokenizer, ids: &[u32]) -> Vec<String> {
    ids.iter()
        .map(|&id| t.token_text(id).unwrap_or("?").to_owned())
        .collect()
}

#[test]
fn highest_score_pair_merges_first_leftmost_on_ties() {
    let base = [("a", -1.0), ("b", -1.0), ("c", -1.0)];
    let with = |ab: f32, bc: f32| {
        let mut p = base.to_vec();
        p.extend([("ab", ab), ("bc", bc)]);
        spm(&p, Some(false)).expect("tokenizer")
    };
    let t = with(-5.0, -2.0);
    assert_eq!(pieces(&t, &t.encode("abc")), ["a", "bc"]);
    let t = with(-2.0, -5.0);
    assert_eq!(pieces(&t, &t.encode("abc")), ["ab", "c"]);
    let t = with(-3.0, -3.0);
    assert_eq!(pieces(&t, &t.encode("abc")), ["ab", "c"]);
    // Merges continue over merged symbols: `abc` once `ab` exists.
    let mut p = base.to_vec();
    p.extend([("ab", -2.0), ("bc", -5.0), ("abc", -4.0)]);
    let t = spm(&p, Some(false)).expect("tokenizer");
    assert_eq!(pieces(&t, &t.encode("abcab")), ["abc", "ab"]);
}

#[test]
fn spaces_become_the_marker_and_the_prefix_is_optional() {
    let p = [
        ("▁", -1.0),
        ("h", -1.0),
        ("i", -1.0),
        ("hi", -2.0),
        ("▁hi", -1.5),
    ];
    let t = spm(&p, Some(false)).expect("no prefix");
    assert_eq!(pieces(&t, &t.encode("hi hi")), ["hi", "▁hi"]);
    assert_eq!(pieces(&t, &t.encode("hi  hi")), ["hi", "▁", "▁hi"]);
    assert_eq!(t.decode(&t.encode("hi  hi")), "hi  hi");
    // llama.cpp's default: a space first, dropped again by decode.
    let t = spm(&p, None).expect("prefix");
    assert_eq!(pieces(&t, &t.encode("hi hi")), ["▁hi", "▁hi"]);
    assert_eq!(t.decode(&t.encode("hi hi")), "hi hi");
    assert_eq!(t.token_bytes(t.encode("hi")[0]), b" hi");
}

#[test]
fn chars_outside_the_vocabulary_fall_back_to_bytes() {
    let t = spm(&[("a", -1.0), ("▁", -1.0)], Some(false)).expect("tokenizer");
    let ids = t.encode("aé€x");
    assert_eq!(
        pieces(&t, &ids),
        [
            "a", "<0xC3>", "<0xA9>", "<0xE2>", "<0x82>", "<0xAC>", "<0x78>"
        ]
    );
    assert_eq!(t.decode(&ids), "aé€x");
    assert_eq!(t.token_bytes(ids[1]), [0xC3]);
}

#[test]
fn round_trips_bos_and_specials() {
    let p = [
        ("▁", -1.0),
        ("t", -1.0),
        ("he", -3.0),
        ("the", -2.0),
        ("▁the", -1.0),
        ("\n", -1.0),
    ];
    let t = spm(&p, Some(false)).expect("tokenizer");
    for text in [
        "the the\n\nthe",
        " leading and trailing ",
        "naïve 日本 🙂\ttab",
        "",
    ] {
        assert_eq!(t.decode(&t.encode(text)), text, "{text:?}");
    }
    assert!(t.add_bos());
    assert_eq!(t.encode_prompt("the", false), [2, t.encode("the")[0]]);
    // Control tokens: literal only with encode_with_special; not decoded.
    let ids = t.encode_with_special("<bos>the<eos>");
    assert_eq!((ids[0], ids[ids.len() - 1]), (2, 1));
    assert_eq!(t.decode(&ids), "the");
    assert_eq!(t.decode_with_special(&ids), "<bos>the<eos>");
    assert!(t.encode("<bos>").len() > 1);
    assert_eq!(t.merge_count(), 0);
}

#[test]
fn scores_must_match_the_vocabulary() {
    let mut w = GgufWriter::new();
    w.kv("tokenizer.ggml.model", Value::String("llama".into()))
        .kv(
            "tokenizer.ggml.tokens",
            Value::Array(Array::String(vec!["a".into(), "b".into()])),
        )
        .kv("tokenizer.ggml.scores", Value::Array(Array::F32(vec![0.0])))
        .kv("tokenizer.ggml.eos_token_id", Value::U32(1));
    let err =
        Tokenizer::from_gguf(&Gguf::parse(w.to_bytes()).expect("parse")).expect_err("1 score");
    assert!(err.to_string().contains("1 scores for 2 tokens"), "{err}");
}
