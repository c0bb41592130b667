//! `instinfer bench model`: prefill and decode speed of the real model on
//! this machine (wall clock), with the decode attention on the host (f32
//! dense) and on the simulated CSD (dense and SparF 1/8), plus the
//! device's virtual time per token; optionally llama.cpp on the same GGUF
//! file, prompt ids, thread count and context size, with host dense's speed
//! as a ratio of llama.cpp's, and two accuracy checks against it: the mean
//! NLL of a text's first tokens and greedy agreement on fixed prompts.
//! Nothing here asserts on time.

use std::fmt;
use std::path::PathBuf;

use model::{Logits, Model};

use host_driver::backend::{HostDense, ModelShape};
use host_driver::policy::{Compression, Policy, Selection};
use host_driver::runner::BackendAttention;

use super::bench_llama::{
    BenchReply, BenchTask, GreedyTask, LlamaCppError, LlamaRequest, run_llama,
};
use super::eval::nll;
use super::generate::{RunBackend, RunParams, RunSummary, run_generation};
use super::{RunError, input};

/// Bench settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelBenchParams {
    /// Prompt tokens (prefill).
    pub prompt_tokens: usize,
    /// Tokens generated (decode).
    pub decode_tokens: usize,
    /// Flash page size of the simulated drive.
    pub page_size: u32,
    /// Timed rounds (at least one): every row and llama.cpp once per
    /// round; rates are the median over the rounds.
    pub rounds: usize,
}

impl Default for ModelBenchParams {
    fn default() -> Self {
        Self {
            prompt_tokens: 512,
            decode_tokens: 32,
            page_size: 4096,
            rounds: 1,
        }
    }
}

/// Running llama.cpp next to the bench (`--against llama.cpp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlamaCppSetup {
    /// A Python that imports `llama_cpp` (see
    /// [`super::bench_llama::llama_python`]).
    pub python: PathBuf,
    /// The GGUF file the model was loaded from.
    pub gguf: PathBuf,
    /// The mean-NLL comparison, if wanted.
    pub nll: Option<NllText>,
    /// Greedy agreement on [`GREEDY_PROMPTS`].
    pub greedy_prompts: bool,
}

/// A text whose first tokens both engines score.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NllText {
    /// Its name in the report (the file name).
    pub name: String,
    /// The text.
    pub text: String,
    /// Ids taken from its start (BOS included where the model wants one);
    /// all but the first are scored.
    pub tokens: usize,
}

/// The prompts of the greedy-agreement check.
pub const GREEDY_PROMPTS: [&str; 3] = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village,",
];

/// Greedy tokens per prompt in the agreement check.
pub const GREEDY_TOKENS: usize = 32;

/// One row.
#[derive(Clone, Debug)]
pub struct ModelBenchRow {
    /// What ran.
    pub name: String,
    /// The first round's run (its virtual time and pages are those of
    /// every round: the device model is deterministic).
    pub summary: RunSummary,
    /// Prefill and decode tokens/s (wall clock) of every round.
    pub rates: Vec<(f64, f64)>,
}

impl ModelBenchRow {
    /// Median prefill and decode tokens/s over the rounds.
    pub fn median(&self) -> (f64, f64) {
        median_rates(&self.rates)
    }
}

/// Median of each of the two rates (the mean of the middle two for an
/// even count; zeros for none).
pub fn median_rates(rates: &[(f64, f64)]) -> (f64, f64) {
    let med = |mut v: Vec<f64>| -> f64 {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    (
        med(rates.iter().map(|r| r.0).collect()),
        med(rates.iter().map(|r| r.1).collect()),
    )
}

/// The bench's results.
#[derive(Clone, Debug)]
pub struct ModelBenchReport {
    /// The model, as the header names it.
    pub model: String,
    /// Threads of the model's kernels (and llama.cpp's).
    pub threads: usize,
    /// Settings.
    pub params: ModelBenchParams,
    /// host dense, csd dense, csd sparf 1/8 (host dense only for a model
    /// with sliding-window layers).
    pub rows: Vec<ModelBenchRow>,
    /// Why rows are missing, if any are.
    pub skipped: Option<String>,
    /// llama.cpp's side, when asked.
    pub llama_cpp: Option<LlamaCppReport>,
    /// The machine's 1-minute load average before and after the bench
    /// (where the OS reports one): other work on the cores slows both
    /// engines, llama.cpp's spinning threads most.
    pub load: Option<(f64, f64)>,
}

/// llama.cpp's results and the comparisons with host dense.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaCppReport {
    /// `llama_cpp.__version__`.
    pub version: String,
    /// The first round's timed run (same prompt ids and token budget as
    /// the rows).
    pub bench: BenchReply,
    /// Prefill and decode tokens/s of every round.
    pub rates: Vec<(f64, f64)>,
    /// Mean NLL of both engines.
    pub nll: Option<NllComparison>,
    /// Greedy generations of both engines, per prompt.
    pub greedy: Vec<GreedyComparison>,
}

/// Mean NLL (nats) of the same ids on both engines.
#[derive(Clone, Debug, PartialEq)]
pub struct NllComparison {
    /// The text's name.
    pub text: String,
    /// Tokens scored.
    pub scored: usize,
    /// Host dense's mean NLL.
    pub ours: f64,
    /// llama.cpp's.
    pub llama_cpp: f64,
}

/// Both engines' greedy tokens after one prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct GreedyComparison {
    /// The prompt.
    pub prompt: String,
    /// Host dense's tokens.
    pub ours: Vec<u32>,
    /// llama.cpp's.
    pub llama_cpp: Vec<u32>,
    /// llama.cpp's top logit minus its runner-up at each of its tokens
    /// (empty when not measured).
    pub margins: Vec<f64>,
    /// llama.cpp's tokens with the prompt fed one token at a time (its
    /// own arithmetic along another path), when measured.
    pub stepwise: Option<Vec<u32>>,
}

impl GreedyComparison {
    /// Tokens that match before the first divergence.
    pub fn matching(&self) -> usize {
        self.ours
            .iter()
            .zip(&self.llama_cpp)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Whether both generated exactly the same tokens.
    pub fn all_match(&self) -> bool {
        self.ours == self.llama_cpp
    }
}

impl fmt::Display for ModelBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prompt = self.rows.first().map_or(self.params.prompt_tokens, |r| {
            r.summary.generation.prompt_tokens
        });
        writeln!(
            f,
            "bench model: {}, {} prompt tokens, {} generated, {} threads",
            self.model, prompt, self.params.decode_tokens, self.threads
        )?;
        writeln!(
            f,
            "{:<20} {:>16} {:>16} {:>20} {:>18}",
            "attention", "prefill tok/s", "decode tok/s", "virtual us/token", "pages read/token"
        )?;
        let host = self.rows.first().map(|r| r.median().1);
        for r in &self.rows {
            let g = &r.summary.generation;
            let steps = g.tokens.len().saturating_sub(1).max(1) as f64;
            let (virt, pages) = match &r.summary.device {
                Some(c) => (
                    format!("{:.1}", c.virtual_ns as f64 / 1e3 / steps),
                    format!("{:.0}", c.flash_pages_read as f64 / steps),
                ),
                None => ("-".into(), "-".into()),
            };
            let (prefill, decode) = r.median();
            writeln!(
                f,
                "{:<20} {:>16.1} {:>16.2} {:>20} {:>18}",
                r.name, prefill, decode, virt, pages
            )?;
        }
        if let Some(l) = &self.llama_cpp {
            let (prefill, decode) = median_rates(&l.rates);
            writeln!(
                f,
                "{:<20} {:>16.1} {:>16.2} {:>20} {:>18}",
                "llama.cpp", prefill, decode, "-", "-"
            )?;
        }
        if let Some(why) = &self.skipped {
            writeln!(f, "{why}")?;
        }
        if let Some(h) = host {
            for r in self.rows.iter().skip(1) {
                writeln!(
                    f,
                    "{}: decode {:.2}x host-dense (wall clock)",
                    r.name,
                    r.median().1 / h.max(1e-9)
                )?;
            }
        }
        if let Some(l) = &self.llama_cpp {
            self.fmt_llama(f, l)?;
        }
        if let Some((before, after)) = self.load {
            writeln!(
                f,
                "load average (1 min): {before:.2} before, {after:.2} after, on {} cores",
                std::thread::available_parallelism().map_or(1, |n| n.get())
            )?;
        }
        write!(
            f,
            "tok/s = wall clock (host, llama.cpp too); virtual = simulated device time"
        )
    }
}

impl ModelBenchReport {
    fn fmt_llama(&self, f: &mut fmt::Formatter<'_>, l: &LlamaCppReport) -> fmt::Result {
        if let Some(h) = self.rows.first() {
            // Each round's host dense ÷ llama.cpp, then their median (one
            // round: the plain ratio).
            let paired: Vec<(f64, f64)> = h
                .rates
                .iter()
                .zip(&l.rates)
                .map(|(a, b)| (ratio(a.0, b.0), ratio(a.1, b.1)))
                .collect();
            let (rp, rd) = median_rates(&paired);
            writeln!(f, "{}", ratios_line(rp, rd))?;
            if h.rates.len() > 1 {
                let per = |pick: fn(&(f64, f64)) -> f64| -> String {
                    paired
                        .iter()
                        .map(|r| format!("{:.2}", pick(r)))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                writeln!(
                    f,
                    "{} rounds (the table: each row's median; the ratios: the median of the rounds'); host dense / llama.cpp in each round: decode {}; prefill {}",
                    h.rates.len(),
                    per(|r| r.1),
                    per(|r| r.0)
                )?;
            }
            let same = GreedyComparison {
                prompt: String::new(),
                ours: h.summary.generation.tokens.clone(),
                llama_cpp: l.bench.tokens.clone(),
                margins: Vec::new(),
                stepwise: None,
            };
            writeln!(
                f,
                "llama.cpp: llama-cpp-python {} on the same GGUF file and {} prompt ids, {} threads, n_ctx {}, n_batch {}; its {} greedy tokens and host dense's: {}",
                l.version,
                l.bench.prompt_tokens,
                self.threads,
                l.bench.n_ctx,
                l.bench.n_batch,
                l.bench.tokens.len(),
                agreement(&same)
            )?;
        }
        if let Some(n) = &l.nll {
            writeln!(
                f,
                "mean NLL (nats) of the first {} tokens of {}, each of the last {} given the ones before:",
                n.scored + 1,
                n.text,
                n.scored
            )?;
            writeln!(
                f,
                "  {:<24} {:.4} (perplexity {:.2})",
                "host dense",
                n.ours,
                n.ours.exp()
            )?;
            writeln!(
                f,
                "  {:<24} {:.4} (perplexity {:.2})",
                format!("llama.cpp {}", l.version),
                n.llama_cpp,
                n.llama_cpp.exp()
            )?;
            writeln!(
                f,
                "  {:<24} {:+.4}",
                "host dense - llama.cpp",
                n.ours - n.llama_cpp
            )?;
        }
        if !l.greedy.is_empty() {
            writeln!(
                f,
                "greedy agreement, up to {GREEDY_TOKENS} tokens per prompt, host dense vs llama.cpp {}:",
                l.version
            )?;
            for g in &l.greedy {
                writeln!(f, "  {:<42} {}", format!("{:?}", g.prompt), agreement(g))?;
                if let Some(why) = divergence(g) {
                    writeln!(f, "  {:<42} {why}", "")?;
                }
            }
        }
        Ok(())
    }
}

/// "N/N tokens match: all" or "k/N tokens match before the first
/// divergence".
fn agreement(g: &GreedyComparison) -> String {
    let n = g.ours.len().max(g.llama_cpp.len());
    if g.all_match() {
        format!("{n}/{n} tokens match: all")
    } else {
        format!(
            "{}/{n} tokens match before the first divergence",
            g.matching()
        )
    }
}

/// At the first divergence, how near a tie llama.cpp's own choice was, and
/// whether llama.cpp agrees with itself when the prompt is fed one token
/// at a time; `None` when the generations agree or nothing was measured.
fn divergence(g: &GreedyComparison) -> Option<String> {
    if g.all_match() {
        return None;
    }
    let at = g.matching();
    let mut parts = Vec::new();
    if let Some(m) = g.margins.get(at) {
        parts.push(format!(
            "at token {at} llama.cpp's top two logits are {m:.3} apart"
        ));
    }
    if let Some(s) = &g.stepwise {
        let own = GreedyComparison {
            prompt: String::new(),
            ours: s.clone(),
            llama_cpp: g.llama_cpp.clone(),
            margins: Vec::new(),
            stepwise: None,
        };
        parts.push(format!(
            "llama.cpp with the prompt fed token by token: {}",
            agreement(&own)
        ));
    }
    (!parts.is_empty()).then(|| format!("({})", parts.join("; ")))
}

/// "host dense: decode X.XXx llama.cpp, prefill Y.YYx llama.cpp" (ratios
/// of tokens/s, wall clock).
pub fn ratio_line(
    host_prefill: f64,
    host_decode: f64,
    llama_prefill: f64,
    llama_decode: f64,
) -> String {
    ratios_line(
        ratio(host_prefill, llama_prefill),
        ratio(host_decode, llama_decode),
    )
}

/// `a / b`, NaN where it means nothing (b not above 0, either not finite).
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        a / b
    } else {
        f64::NAN
    }
}

/// [`ratio_line`] from the two ratios ("n/a" for NaN).
fn ratios_line(prefill: f64, decode: f64) -> String {
    let show = |r: f64| {
        if r.is_finite() {
            format!("{r:.2}x")
        } else {
            "n/a".to_string()
        }
    };
    format!(
        "host dense: decode {} llama.cpp, prefill {} llama.cpp (tokens/s, wall clock)",
        show(decode),
        show(prefill)
    )
}

fn prefill_rate(s: &RunSummary) -> f64 {
    let g = &s.generation;
    g.prompt_tokens as f64 / g.prefill_wall.as_secs_f64().max(1e-9)
}

fn decode_rate(s: &RunSummary) -> f64 {
    let g = &s.generation;
    g.tokens.len().saturating_sub(1) as f64 / g.decode_wall.as_secs_f64().max(1e-9)
}

/// A prompt of about `n` tokens of plain English.
fn prompt(model: &Model, n: usize) -> String {
    let sentence = "The history of the city is long and varied, and many travellers have written about its markets, rivers and bridges. ";
    let mut s = String::new();
    while model.tokenizer().encode(&s).len() < n {
        s.push_str(sentence);
    }
    s
}

/// A plain completion of `prompt` on `backend` with `policy`.
fn run_params(
    prompt: String,
    max_tokens: usize,
    backend: RunBackend,
    policy: Policy,
    page_size: u32,
) -> RunParams {
    RunParams {
        prompt,
        chat: false,
        max_tokens,
        backend,
        policy,
        devices: 1,
        page_size,
        device: crate::device::DeviceSpec::Sim,
        ssd: super::ssd::SsdSetup::in_dir(std::env::temp_dir()),
        kv_name: "bench".into(),
        placement: host_driver::dma::Placement::Host,
        gpu: false,
        retry: host_driver::csd::RetryPolicy::default(),
        host_copy: false,
    }
}

/// Runs the bench on `model` (called `name` in the header), and llama.cpp
/// beside it when `llama` says how; `progress` hears each phase.
pub fn run_model_bench(
    model: &Model,
    name: &str,
    p: &ModelBenchParams,
    llama: Option<&LlamaCppSetup>,
    mut progress: impl FnMut(&str),
) -> Result<ModelBenchReport, RunError> {
    if let Some(n) = llama.and_then(|l| l.nll.as_ref()) {
        let ctx = model.config().context_len;
        if n.tokens < 2 || n.tokens > ctx {
            return Err(input(format!(
                "--nll-tokens {} must be in 2..={ctx} (the model's context)",
                n.tokens
            )));
        }
    }
    let load_before = load_average();
    let text = prompt(model, p.prompt_tokens);
    let sparf = Policy::new(
        Selection::SparF,
        Compression::new(0.125).map_err(RunError::Input)?,
    );
    // The first run pays for page faults in the weights and cold caches;
    // none of the timed ones should.
    progress("warm-up");
    run_generation(
        model,
        &run_params(
            "Hello".into(),
            2,
            RunBackend::Host,
            Policy::DENSE,
            p.page_size,
        ),
        |_| {},
    )?;
    let mut rows: Vec<ModelBenchRow> = Vec::new();
    let mut configs = vec![("host dense", RunBackend::Host, Policy::DENSE)];
    // A windowed layer attends through `local`, which the drive does not run.
    let cfg = model.config();
    let windowed = (0..cfg.n_layers).any(|l| cfg.window(l).is_some());
    let skipped = windowed.then(|| {
        "csd rows skipped: this model's sliding-window layers attend through `local`, which the drive does not run".to_string()
    });
    if !windowed {
        configs.push(("csd dense", RunBackend::Csd, Policy::DENSE));
        configs.push(("csd sparf 1/8", RunBackend::Csd, sparf));
    }
    let mut llama_cpp: Option<LlamaCppReport> = None;
    for round in 0..p.rounds.max(1) {
        // Host dense, then llama.cpp right after it (the pair the ratios
        // compare, timed as close together as the bench allows), then
        // the drive's rows.
        for (i, (name, backend, policy)) in configs.iter().enumerate() {
            progress(&if p.rounds > 1 {
                format!("{name} (round {} of {})", round + 1, p.rounds)
            } else {
                name.to_string()
            });
            let run = run_params(
                text.clone(),
                p.decode_tokens,
                *backend,
                *policy,
                p.page_size,
            );
            // Generation may stop early at end-of-text; the rates use what ran.
            let summary = run_generation(model, &run, |_| {})?;
            let rate = (prefill_rate(&summary), decode_rate(&summary));
            match rows.get_mut(i) {
                Some(row) => row.rates.push(rate),
                None => rows.push(ModelBenchRow {
                    name: name.to_string(),
                    summary,
                    rates: vec![rate],
                }),
            }
            if i > 0 {
                continue;
            }
            if let Some(l) = llama {
                match &mut llama_cpp {
                    None => {
                        llama_cpp = Some(against_llama_cpp(model, &text, p, l, &mut progress)?);
                    }
                    Some(report) => {
                        progress(&format!("llama.cpp (round {} of {})", round + 1, p.rounds));
                        let b = llama_bench_only(model, &text, p, l)?;
                        report.rates.push((b.prefill_tok_s, b.decode_tok_s));
                    }
                }
            }
        }
    }
    Ok(ModelBenchReport {
        model: name.to_string(),
        threads: model::quant::default_threads(),
        params: *p,
        rows,
        skipped,
        llama_cpp,
        load: load_before.zip(load_average()),
    })
}

/// The 1-minute load average (`/proc/loadavg`; `None` where there is none).
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// llama.cpp on the bench's prompt (the ids `run_generation` makes of
/// `text`), and the NLL and greedy checks on both engines.
fn against_llama_cpp(
    model: &Model,
    text: &str,
    p: &ModelBenchParams,
    l: &LlamaCppSetup,
    progress: &mut impl FnMut(&str),
) -> Result<LlamaCppReport, RunError> {
    let tok = model.tokenizer();
    let nll_ids = match &l.nll {
        Some(n) => Some(first_ids(model, n)?),
        None => None,
    };
    let greedy: Vec<&str> = if l.greedy_prompts {
        GREEDY_PROMPTS.to_vec()
    } else {
        Vec::new()
    };
    let req = LlamaRequest {
        model: l.gguf.clone(),
        n_threads: model::quant::default_threads(),
        eos: tok.eos(),
        bench: Some(bench_task(model, text, p)),
        nll: nll_ids.clone(),
        greedy: greedy
            .iter()
            .map(|g| GreedyTask {
                prompt: tok.encode_prompt(g, false),
                decode: GREEDY_TOKENS,
            })
            .collect(),
    };
    progress("llama.cpp");
    let reply = run_llama(&l.python, &req)?;
    let bench = reply
        .bench
        .ok_or_else(|| LlamaCppError::Reply("no timed run".into()))?;
    let nll = match (&l.nll, nll_ids, reply.nll) {
        (Some(n), Some(ids), Some(theirs)) => {
            progress(&format!("NLL of {} tokens on host dense", ids.len()));
            Some(NllComparison {
                text: n.name.clone(),
                scored: theirs.scored,
                ours: nll_host_dense(model, &ids)?,
                llama_cpp: theirs.mean,
            })
        }
        _ => None,
    };
    let mut greedy_cmp = Vec::new();
    for (g, theirs) in greedy.iter().zip(reply.greedy) {
        progress(&format!("greedy on host dense: {g:?}"));
        let run = run_params(
            g.to_string(),
            GREEDY_TOKENS,
            RunBackend::Host,
            Policy::DENSE,
            p.page_size,
        );
        let ours = run_generation(model, &run, |_| {})?.generation.tokens;
        greedy_cmp.push(GreedyComparison {
            prompt: g.to_string(),
            ours,
            llama_cpp: theirs.tokens,
            margins: theirs.margins,
            stepwise: Some(theirs.stepwise),
        });
    }
    Ok(LlamaCppReport {
        version: reply.version,
        rates: vec![(bench.prefill_tok_s, bench.decode_tok_s)],
        bench,
        nll,
        greedy: greedy_cmp,
    })
}

/// llama.cpp's timed run of the bench's prompt: the ids `run_generation`
/// makes of `text`, in instinfer's KV capacity for the same run.
fn bench_task(model: &Model, text: &str, p: &ModelBenchParams) -> BenchTask {
    let prompt = model.tokenizer().encode_prompt(text, false);
    BenchTask {
        n_ctx: prompt.len() + p.decode_tokens + 1,
        prompt,
        decode: p.decode_tokens,
    }
}

/// One more timed llama.cpp run of the bench's prompt (a later round).
fn llama_bench_only(
    model: &Model,
    text: &str,
    p: &ModelBenchParams,
    l: &LlamaCppSetup,
) -> Result<BenchReply, RunError> {
    let req = LlamaRequest {
        model: l.gguf.clone(),
        n_threads: model::quant::default_threads(),
        eos: model.tokenizer().eos(),
        bench: Some(bench_task(model, text, p)),
        nll: None,
        greedy: Vec::new(),
    };
    Ok(run_llama(&l.python, &req)?
        .bench
        .ok_or_else(|| LlamaCppError::Reply("no timed run".into()))?)
}

/// The first `n.tokens` ids of `n.text` as a prompt is encoded (BOS first
/// where the model wants one). Only a prefix of the text is tokenized: one
/// that ends at a line break well past the last id wanted, so the cut
/// cannot change them.
fn first_ids(model: &Model, n: &NllText) -> Result<Vec<u32>, RunError> {
    let text = n.text.as_str();
    let mut len = (n.tokens * 16).min(text.len());
    loop {
        while !text.is_char_boundary(len) {
            len += 1;
        }
        let end = text[len..].find('\n').map_or(text.len(), |i| len + i + 1);
        let ids = model.tokenizer().encode_prompt(&text[..end], false);
        if ids.len() >= n.tokens + 64 || end == text.len() {
            if ids.len() < n.tokens {
                return Err(input(format!(
                    "{} holds {} tokens; --nll-tokens {} asks for more",
                    n.name,
                    ids.len(),
                    n.tokens
                )));
            }
            return Ok(ids[..n.tokens].to_vec());
        }
        len = (end * 2).min(text.len());
    }
}

/// Host dense's mean NLL of `ids[1..]`, each given the ones before: one
/// prefill of all the ids with every position's logits (as llama.cpp's
/// single eval), each scored by `instinfer eval`'s [`nll`]. Not
/// [`super::eval::evaluate`] itself: its KV recorder takes no sliding
/// window, so it cannot run Gemma 3.
fn nll_host_dense(model: &Model, ids: &[u32]) -> Result<f64, RunError> {
    let mut backend = HostDense::new();
    let shape = ModelShape::from(model.config());
    let mut attn = BackendAttention::open(&mut backend, 0, shape, Policy::DENSE)?;
    let logits = model.prefill(ids, &mut attn, Logits::All)?;
    attn.close()?;
    let vocab = logits.len() / ids.len().max(1);
    if vocab == 0 || ids.len() < 2 {
        return Err(input("the NLL needs at least 2 tokens"));
    }
    let total: f64 = logits
        .chunks_exact(vocab)
        .zip(&ids[1..])
        .map(|(row, &target)| nll(row, target))
        .sum();
    Ok(total / (ids.len() - 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_take_the_middle_round_of_each_rate() {
        assert_eq!(median_rates(&[]), (0.0, 0.0));
        assert_eq!(median_rates(&[(3.0, 9.0)]), (3.0, 9.0));
        // Each rate on its own: the prefill median and the decode median
        // may come from different rounds.
        assert_eq!(
            median_rates(&[(5.0, 1.0), (1.0, 7.0), (3.0, 4.0)]),
            (3.0, 4.0)
        );
        assert_eq!(median_rates(&[(1.0, 2.0), (3.0, 6.0)]), (2.0, 4.0));
    }

    #[test]
    fn ratios_are_host_dense_over_llama_cpp_with_two_decimals() {
        assert_eq!(
            ratio_line(100.0, 20.0, 400.0, 40.0),
            "host dense: decode 0.50x llama.cpp, prefill 0.25x llama.cpp (tokens/s, wall clock)"
        );
        assert_eq!(
            ratio_line(300.0, 31.0, 100.0, 10.0),
            "host dense: decode 3.10x llama.cpp, prefill 3.00x llama.cpp (tokens/s, wall clock)"
        );
        // A rate that did not run is not a ratio.
        assert!(ratio_line(1.0, 1.0, 0.0, 1.0).contains("prefill n/a"));
    }

    #[test]
    fn greedy_agreement_counts_tokens_before_the_first_divergence() {
        let g = |ours: &[u32], theirs: &[u32]| GreedyComparison {
            prompt: "p".into(),
            ours: ours.to_vec(),
            llama_cpp: theirs.to_vec(),
            margins: Vec::new(),
            stepwise: None,
        };
        let same = g(&[1, 2, 3], &[1, 2, 3]);
        assert!(same.all_match());
        assert_eq!(same.matching(), 3);
        assert_eq!(agreement(&same), "3/3 tokens match: all");
        let split = g(&[1, 2, 3, 4], &[1, 2, 9, 4]);
        assert!(!split.all_match());
        assert_eq!(split.matching(), 2);
        assert_eq!(
            agreement(&split),
            "2/4 tokens match before the first divergence"
        );
        // One stopped at end of text earlier: not all match.
        let short = g(&[1, 2], &[1, 2, 3]);
        assert!(!short.all_match());
        assert_eq!(short.matching(), 2);
        // Nothing measured, nothing said; agreement, nothing to explain.
        assert_eq!(divergence(&split), None);
        let measured = GreedyComparison {
            margins: vec![2.0, 1.5, 0.0625, 3.0],
            stepwise: Some(vec![1, 2, 3, 4]),
            ..split.clone()
        };
        assert_eq!(
            divergence(&measured).as_deref(),
            Some(
                "(at token 2 llama.cpp's top two logits are 0.062 apart; llama.cpp with the prompt fed token by token: 2/4 tokens match before the first divergence)"
            )
        );
        let agreed = GreedyComparison {
            ours: vec![1, 2, 9, 4],
            ..measured
        };
        assert_eq!(divergence(&agreed), None);
    }
}
