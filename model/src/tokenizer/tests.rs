//! Tokenizer tests on the real SmolLM2 vocabulary (skipped when absent),
//! and on a synthetic one for the choice of pre-tokenizer.

use crate::gguf::{Array, GgufWriter, Value};
use crate::test_support::{real_model, wiki_text};
use crate::{Gguf, ModelError, Tokenizer};

/// A vocabulary of the 256 byte tokens, `12` (merged from `1 2`) and an
/// end token, with `tokenizer.ggml.pre = pre`.
fn synthetic(pre: &str) -> Result<Tokenizer, ModelError> {
    let mut tokens: Vec<String> = super::bytes::byte_to_char()
        .iter()
        .map(char::to_string)
        .collect();
    tokens.extend(["12".into(), "<|end|>".into()]);
    let eos = tokens.len() as u32 - 1;
    let mut w = GgufWriter::new();
    w.kv("tokenizer.ggml.model", Value::String("gpt2".into()))
        .kv("tokenizer.ggml.pre", Value::String(pre.into()))
        .kv("tokenizer.ggml.tokens", Value::Array(Array::String(tokens)))
        .kv(
            "tokenizer.ggml.merges",
            Value::Array(Array::String(vec!["1 2".into()])),
        )
        .kv("tokenizer.ggml.eos_token_id", Value::U32(eos));
    Tokenizer::from_gguf(&Gguf::parse(w.to_bytes())?)
}

#[test]
fn qwen2_pre_tokenizer_is_chosen_by_name() {
    let qwen = synthetic("qwen2").expect("qwen2");
    let gpt2 = synthetic("gpt2").expect("gpt2");
    // GPT-2 keeps `12` one piece, so its merge applies; Qwen splits digits.
    assert_eq!(gpt2.encode("12").len(), 1);
    assert_eq!(qwen.encode("12").len(), 2);
    assert_eq!(qwen.decode(&qwen.encode("x12\n\n(y)")), "x12\n\n(y)");
    let err = synthetic("deepseek-llm").expect_err("unknown pre-tokenizer");
    let msg = err.to_string();
    assert!(
        msg.contains("deepseek-llm") && msg.contains("qwen2"),
        "{msg}"
    );
}

#[test]
fn hello_world_round_trip() {
    let Some(model) = real_model() else { return };
    let tok = model.tokenizer();
    let ids = tok.encode("Hello world");
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(tok.decode(&ids), "Hello world");
    assert_eq!(tok.token_bytes(ids[1]), b" world");
}

#[test]
fn capital_of_france_is_short_and_exact() {
    let Some(model) = real_model() else { return };
    let tok = model.tokenizer();
    let s = "The capital of France is";
    let ids = tok.encode(s);
    println!("{s:?} -> {ids:?}");
    assert_eq!(ids.len(), 5, "one token per word: {ids:?}");
    assert_eq!(tok.decode(&ids), s);
}

#[test]
fn digits_are_single_tokens() {
    let Some(model) = real_model() else { return };
    let tok = model.tokenizer();
    let ids = tok.encode("2024");
    assert_eq!(ids.len(), 4, "{ids:?}");
    let digits: Vec<String> = ids.iter().map(|&i| tok.decode(&[i])).collect();
    assert_eq!(digits, ["2", "0", "2", "4"]);
    assert_eq!(
        tok.encode("in 1999"),
        [tok.encode("in"), tok.encode(" "), tok.encode("1999")].concat()
    );
}

#[test]
fn special_tokens_only_with_encode_with_special() {
    let Some(model) = real_model() else { return };
    let tok = model.tokenizer();
    let text = "<|im_start|>user\nHi<|im_end|>";
    let ids = tok.encode_with_special(text);
    let start = ids[0];
    assert!(tok.is_control(start), "{ids:?}");
    assert_eq!(tok.token_text(start), Some("<|im_start|>"));
    assert!(tok.is_control(*ids.last().expect("ids")));
    assert_eq!(tok.decode(&ids), "user\nHi");
    assert_eq!(tok.decode_with_special(&ids), text);
    assert!(tok.token_bytes(start).is_empty());
    let plain = tok.encode(text);
    assert!(plain.len() > ids.len() && plain.iter().all(|&i| !tok.is_control(i)));
    assert_eq!(tok.decode(&plain), text);
    assert_eq!((tok.bos(), tok.eos(), tok.vocab_size()), (1, 2, 49152));
    assert!(!tok.add_bos());
}

#[test]
fn wikitext_round_trip_and_speed() {
    let Some(model) = real_model() else { return };
    let text = wiki_text();
    let tok = model.tokenizer();
    let mut end = 20 * 1024;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    assert_eq!(tok.decode(&tok.encode(head)), head);
    let t0 = std::time::Instant::now();
    let ids = tok.encode(&text);
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "wiki.test.raw: {} bytes -> {} tokens in {secs:.2} s",
        text.len(),
        ids.len()
    );
    assert_eq!(tok.decode(&ids), text);
}

#[test]
fn odd_text_round_trips() {
    let Some(model) = real_model() else { return };
    let tok = model.tokenizer();
    for s in [
        "",
        " ",
        "  leading",
        "tabs\t\tand\r\nlines\n\n\n",
        "naïve café 東京 🚀",
        "it's THEY'RE we'll",
        "x\u{4}y",
    ] {
        assert_eq!(
            tok.decode(&tok.encode(s)).replace('\u{4}', ""),
            s.replace('\u{4}', ""),
            "{s:?}"
        );
    }
}
