//! `instinfer bench model`: prefill and decode speed of the real model on
//! this machine (wall clock), with the decode attention on the host (f32
//! dense) and on the simulated CSD (dense and SparF 1/8), plus the
//! device's virtual time per token. Nothing here asserts on time.

use std::fmt;

use model::Model;

use host_driver::policy::{Compression, Policy, Selection};

use super::RunError;
use super::generate::{RunBackend, RunParams, RunSummary, run_generation};

/// Bench settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelBenchParams {
    /// Prompt tokens (prefill).
    pub prompt_tokens: usize,
    /// Tokens generated (decode).
    pub decode_tokens: usize,
    /// Flash page size of the simulated drive.
    pub page_size: u32,
}

impl Default for ModelBenchParams {
    fn default() -> Self {
        Self {
            prompt_tokens: 512,
            decode_tokens: 32,
            page_size: 4096,
        }
    }
}

/// One row.
#[derive(Clone, Debug)]
pub struct ModelBenchRow {
    /// What ran.
    pub name: String,
    /// The run.
    pub summary: RunSummary,
}

/// The bench's results.
#[derive(Clone, Debug)]
pub struct ModelBenchReport {
    /// Settings.
    pub params: ModelBenchParams,
    /// host dense, csd dense, csd sparf 1/8.
    pub rows: Vec<ModelBenchRow>,
}

impl fmt::Display for ModelBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "bench model: SmolLM2-135M, {} prompt tokens, {} generated, {} threads",
            self.params.prompt_tokens,
            self.params.decode_tokens,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )?;
        writeln!(
            f,
            "{:<20} {:>16} {:>16} {:>20} {:>18}",
            "attention", "prefill tok/s", "decode tok/s", "virtual us/token", "pages read/token"
        )?;
        let host = self.rows.first().map(|r| decode_rate(&r.summary));
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
            writeln!(
                f,
                "{:<20} {:>16.1} {:>16.2} {:>20} {:>18}",
                r.name,
                g.prompt_tokens as f64 / g.prefill_wall.as_secs_f64().max(1e-9),
                decode_rate(&r.summary),
                virt,
                pages
            )?;
        }
        if let Some(h) = host {
            for r in self.rows.iter().skip(1) {
                writeln!(
                    f,
                    "{}: decode {:.2}x host-dense (wall)",
                    r.name,
                    decode_rate(&r.summary) / h.max(1e-9)
                )?;
            }
        }
        write!(
            f,
            "tok/s = host wall clock; virtual = simulated device time"
        )
    }
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

/// Runs the bench.
pub fn run_model_bench(model: &Model, p: &ModelBenchParams) -> Result<ModelBenchReport, RunError> {
    let text = prompt(model, p.prompt_tokens);
    let sparf = Policy::new(
        Selection::SparF,
        Compression::new(0.125).map_err(RunError::Input)?,
    );
    let mut rows = Vec::new();
    for (name, backend, policy) in [
        ("host dense", RunBackend::Host, Policy::DENSE),
        ("csd dense", RunBackend::Csd, Policy::DENSE),
        ("csd sparf 1/8", RunBackend::Csd, sparf),
    ] {
        let run = RunParams {
            prompt: text.clone(),
            chat: false,
            max_tokens: p.decode_tokens,
            backend,
            policy,
            devices: 1,
            page_size: p.page_size,
            device: crate::device::DeviceSpec::Sim,
            ssd: super::ssd::SsdSetup::in_dir(std::env::temp_dir()),
            kv_name: "bench".into(),
            placement: host_driver::dma::Placement::Host,
            gpu: false,
            retry: host_driver::csd::RetryPolicy::default(),
            host_copy: false,
        };
        // Generation may stop early at end-of-text; the rates use what ran.
        let summary = run_generation(model, &run, |_| {})?;
        rows.push(ModelBenchRow {
            name: name.to_string(),
            summary,
        });
    }
    Ok(ModelBenchReport { params: *p, rows })
}
