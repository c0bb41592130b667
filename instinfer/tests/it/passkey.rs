//! Passkey retrieval with the real model: the prompt tokenizes piece by
//! piece exactly as its whole text does, and dense attention on the
//! simulated drive finds the key at ~600 tokens of context.

use host_driver::policy::Policy;
use instinfer::run::eval::EvalBackend;
use instinfer::run::passkey::prompt::{PromptSpec, build, needle};
use instinfer::run::passkey::{PasskeyParams, passkey};
use model::Model;
use model::fetch::{SMOLLM2_135M, ensure};

fn smollm() -> Model {
    let path = ensure(&SMOLLM2_135M, None, true).expect("model fetch");
    Model::load(&path).expect("model load")
}

#[test]
fn the_prompt_is_what_its_text_tokenizes_to() {
    let model = smollm();
    let tok = model.tokenizer();
    for (tokens, depth) in [(600, 0.2), (2048, 0.8)] {
        let spec = PromptSpec {
            tokens,
            depth,
            key: 31_415,
            chat: false,
        };
        let p = build(|s| tok.encode_with_special(s), &spec).unwrap();
        assert!(p.tokens.len() <= tokens && p.tokens.len() + 40 > tokens);
        let text = tok.decode(&p.tokens);
        assert_eq!(tok.encode(&text), p.tokens);
        assert_eq!(text.matches(needle(31_415).trim()).count(), 1);
        assert!((p.depth() - depth).abs() < 0.05, "{}", p.depth());
    }
}

#[test]
fn dense_on_the_drive_retrieves_the_key() {
    let model = smollm();
    let p = PasskeyParams {
        methods: vec![],
        compressions: vec![],
        trials: 1,
        min_tokens: 600,
        max_tokens: 600,
        seed: 3,
        chat: false,
        backend: EvalBackend::Csd,
        page_size: 4096,
        guard: Default::default(),
        per_layer: false,
        pages: Default::default(),
    };
    let mut answers = Vec::new();
    let rows = passkey(&model, &p, |o| answers.push(o.clone())).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].policy, Policy::DENSE);
    assert_eq!(rows[0].backend, "in-storage");
    assert_eq!(answers.len(), 1);
    for a in &answers {
        assert_eq!(a.draw.tokens, 600);
        assert!(a.tokens <= a.draw.tokens && a.tokens + 40 > a.draw.tokens);
        assert!(a.answer.contains(&a.draw.key.to_string()), "{a:?}");
    }
    assert_eq!((rows[0].trials, rows[0].retrieved), (1, 1), "{answers:?}");
}
