//! `instinfer passkey`: whether each attention method still finds a fact
//! buried deep in a long context (passkey retrieval, as in Mohtashami and
//! Jaggi's landmark attention and the long-context literature since).
//!
//! Per trial a five-digit key is hidden at a random depth of a prompt of
//! filler sentences whose length is drawn between two bounds, and asked
//! for at the end ([`prompt`]). The prompt is prefilled once on the host
//! (dense, as InstInfer's GPU does); its recorded KV is replayed into
//! every method's backend, which then decodes [`ANSWER_TOKENS`] tokens
//! greedily. A trial counts as retrieved when the first number of the
//! answer is the key. Perplexity can hide such losses: a method that
//! reads the recent tokens well scores well on text and still misses the
//! needle.

pub mod prompt;
pub mod trials;

use model::{Logits, Model};

use host_driver::backend::ModelShape;
use host_driver::policy::{Compression, Policy, Selection};
use host_driver::runner::{BackendAttention, KvRecorder, argmax};

use super::eval::{Backends, EvalBackend, compression_column, policies};
use super::{RunError, input};
use prompt::{PromptSpec, retrieved};
use trials::Trial;

/// Tokens decoded per answer: a space and five digits, with room for a
/// word or two before them.
pub const ANSWER_TOKENS: usize = 8;

/// Passkey settings.
#[derive(Clone, Debug, PartialEq)]
pub struct PasskeyParams {
    /// Methods besides dense (dense always runs: it is the yardstick).
    pub methods: Vec<Selection>,
    /// Compressions for the non-dense methods.
    pub compressions: Vec<Compression>,
    /// Trials.
    pub trials: usize,
    /// The shortest prompt, tokens.
    pub min_tokens: usize,
    /// The longest prompt, tokens.
    pub max_tokens: usize,
    /// Seed of the trials' lengths, depths and keys.
    pub seed: u64,
    /// Wrap the prompt in the model's chat template.
    pub chat: bool,
    /// Where dense and SparF run (csd, host-engine or host).
    pub backend: EvalBackend,
    /// Flash page size of the simulated drive.
    pub page_size: u32,
    /// The guardrail's knobs for the guarded selections.
    pub guard: host_driver::policy::GuardSetting,
    /// Per-layer k for SparF and SparF+.
    pub per_layer: bool,
    /// The page selection's knobs.
    pub pages: host_driver::policy::PagesSetting,
}

/// One method's answer in one trial.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialOutcome {
    /// Trial index.
    pub trial: usize,
    /// What was drawn.
    pub draw: Trial,
    /// The prompt's tokens.
    pub tokens: usize,
    /// The needle's position as a share of the prompt.
    pub depth: f64,
    /// Method and compression.
    pub policy: Policy,
    /// The decoded answer.
    pub answer: String,
    /// Whether its first number is the key.
    pub retrieved: bool,
}

/// One line of the results.
#[derive(Clone, Debug, PartialEq)]
pub struct PasskeyRow {
    /// Method and compression.
    pub policy: Policy,
    /// Backend name.
    pub backend: String,
    /// Trials run.
    pub trials: usize,
    /// Trials whose answer was the key.
    pub retrieved: usize,
}

impl PasskeyRow {
    /// The CSV header.
    pub const CSV_HEADER: &'static str = "method,compression,backend,trials,retrieved,rate";

    /// The share of trials retrieved.
    pub fn rate(&self) -> f64 {
        self.retrieved as f64 / self.trials.max(1) as f64
    }

    /// One CSV line (dense has compression 1).
    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{},{:.3}",
            self.policy.selection,
            compression_column(&self.policy),
            self.backend,
            self.trials,
            self.retrieved,
            self.rate()
        )
    }
}

/// The CSV text of `rows`.
pub fn csv(rows: &[PasskeyRow]) -> String {
    let mut s = String::from(PasskeyRow::CSV_HEADER);
    s.push('\n');
    for r in rows {
        s.push_str(&r.csv());
        s.push('\n');
    }
    s
}

/// Checks the settings against the model's context of `context` tokens.
fn check(p: &PasskeyParams, context: usize) -> Result<(), RunError> {
    if p.trials == 0 {
        return Err(input("--trials must be at least 1"));
    }
    if p.min_tokens > p.max_tokens {
        return Err(input(format!(
            "--min-tokens {} exceeds --max-tokens {}",
            p.min_tokens, p.max_tokens
        )));
    }
    if p.max_tokens + ANSWER_TOKENS > context {
        return Err(input(format!(
            "--max-tokens {} + {ANSWER_TOKENS} answer tokens must fit the model's context of {context}",
            p.max_tokens
        )));
    }
    if p.backend == EvalBackend::Ssd {
        return Err(input(
            "passkey runs on the csd, host-engine or host backend, not ssd",
        ));
    }
    Ok(())
}

/// Runs the trials; `on_trial` sees every method's answer as it comes.
/// Rows: dense first, then every method × compression.
pub fn passkey(
    model: &Model,
    p: &PasskeyParams,
    mut on_trial: impl FnMut(&TrialOutcome),
) -> Result<Vec<PasskeyRow>, RunError> {
    let cfg = model.config();
    check(p, cfg.context_len)?;
    let shape = ModelShape::from(cfg);
    let tok = model.tokenizer();
    let configs = policies(&p.methods, &p.compressions, p.guard, p.per_layer, p.pages);
    let mut backends = Backends::new(p.backend, 1, p.page_size)?;
    let mut rows: Vec<PasskeyRow> = configs
        .iter()
        .map(|&policy| PasskeyRow {
            policy,
            backend: String::new(),
            trials: 0,
            retrieved: 0,
        })
        .collect();
    for (t, draw) in trials::draw(p.seed, p.trials, p.min_tokens, p.max_tokens)
        .into_iter()
        .enumerate()
    {
        let spec = PromptSpec {
            tokens: draw.tokens,
            depth: draw.depth,
            key: draw.key,
            chat: p.chat,
        };
        let prompt = prompt::build(|s| tok.encode_with_special(s), &spec).map_err(|least| {
            input(format!(
                "a prompt of {} tokens is too short: it takes at least {least}",
                draw.tokens
            ))
        })?;
        let mut rec = KvRecorder::new();
        let first = model.prefill(&prompt.tokens, &mut rec, Logits::Last)?;
        for (row, policy) in rows.iter_mut().zip(&configs) {
            let backend = backends.pick(policy, p.backend);
            let mut attn = BackendAttention::open(backend, t as u32, shape, *policy)?;
            rec.replay(&mut attn)
                .map_err(|e| RunError::Attention(e.to_string()))?;
            row.backend = attn.backend().name().to_string();
            let answer = greedy(model, &first, prompt.tokens.len(), &mut attn)?;
            attn.close()?;
            let text = tok.decode(&answer);
            let ok = retrieved(&text, draw.key);
            row.trials += 1;
            row.retrieved += usize::from(ok);
            on_trial(&TrialOutcome {
                trial: t,
                draw,
                tokens: prompt.tokens.len(),
                depth: prompt.depth(),
                policy: *policy,
                answer: text,
                retrieved: ok,
            });
        }
    }
    Ok(rows)
}

/// [`ANSWER_TOKENS`] greedy tokens after a prompt of `len` tokens whose
/// last logits are `first`; stops early at the end-of-text token.
fn greedy(
    model: &Model,
    first: &[f32],
    len: usize,
    attn: &mut BackendAttention<'_>,
) -> Result<Vec<u32>, RunError> {
    let eos = model.tokenizer().eos();
    let mut out = Vec::with_capacity(ANSWER_TOKENS);
    let mut next = argmax(first);
    while next != eos {
        out.push(next);
        if out.len() == ANSWER_TOKENS {
            break;
        }
        next = argmax(&model.decode(next, len + out.len() - 1, attn)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> PasskeyParams {
        PasskeyParams {
            methods: vec![Selection::SparF, Selection::Dense, Selection::Pages],
            compressions: vec!["1/8".parse().unwrap(), "1/16".parse().unwrap()],
            trials: 10,
            min_tokens: 2048,
            max_tokens: 4096,
            seed: 1,
            chat: false,
            backend: EvalBackend::Csd,
            page_size: 4096,
            guard: Default::default(),
            per_layer: false,
            pages: Default::default(),
        }
    }

    #[test]
    fn settings_are_checked_against_the_context() {
        assert!(check(&params(), 8192).is_ok());
        assert!(check(&params(), 4096 + ANSWER_TOKENS - 1).is_err());
        let bad = [
            PasskeyParams {
                trials: 0,
                ..params()
            },
            PasskeyParams {
                min_tokens: 5000,
                ..params()
            },
            PasskeyParams {
                backend: EvalBackend::Ssd,
                ..params()
            },
        ];
        for p in bad {
            assert!(matches!(check(&p, 8192), Err(RunError::Input(_))), "{p:?}");
        }
    }

    #[test]
    fn rows_are_written_as_csv() {
        let p = params();
        let configs = policies(&p.methods, &p.compressions, p.guard, p.per_layer, p.pages);
        assert_eq!(configs.len(), 5);
        let rows = [
            PasskeyRow {
                policy: configs[0],
                backend: "in-storage".into(),
                trials: 10,
                retrieved: 10,
            },
            PasskeyRow {
                policy: configs[2],
                backend: "in-storage".into(),
                trials: 10,
                retrieved: 3,
            },
        ];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "method,compression,backend,trials,retrieved,rate");
        assert_eq!(lines[1], "dense,1,in-storage,10,10,1.000");
        assert_eq!(lines[2], "sparf,0.0625,in-storage,10,3,0.300");
    }
}
