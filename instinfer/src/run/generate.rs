//! `instinfer run`: generate text with the model's decode attention in the
//! drive (or on the host), streaming tokens, then a summary with wall-clock
//! speed and the device's virtual time and traffic.

use std::time::{Duration, Instant};

use model::{Logits, Model};

use crate::device::DeviceSpec;
use host_driver::array::CsdArray;
use host_driver::backend::GpuStaged;
use host_driver::backend::Recovery;
use host_driver::backend::{AttentionBackend, HostDense, InStorage, ModelShape};
use host_driver::csd::RetryPolicy;
use host_driver::csd::{CsdError, Drive, probe};
use host_driver::dma::{DmaStats, Placement};
use host_driver::measure::PhaseCounters;
use host_driver::policy::{Policy, Selection};
use host_driver::runner::{BackendAttention, argmax};

use super::sim::sim_array;
use super::ssd::SsdSetup;
use super::{RunError, input};

/// Where the decode attention runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunBackend {
    /// Simulated CSDs.
    Csd,
    /// The host (f32 reference).
    Host,
    /// The host, with the KV cache on a plain SSD (SolidAttention).
    Ssd,
}

impl std::str::FromStr for RunBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "csd" => Ok(Self::Csd),
            "host" => Ok(Self::Host),
            "ssd" => Ok(Self::Ssd),
            _ => Err(format!("unknown backend `{s}` (csd, host, ssd)")),
        }
    }
}

/// Settings of one generation.
#[derive(Clone, Debug, PartialEq)]
pub struct RunParams {
    /// The prompt.
    pub prompt: String,
    /// Wrap the prompt in the model's chat template.
    pub chat: bool,
    /// Tokens to generate at most.
    pub max_tokens: usize,
    /// Where attention runs.
    pub backend: RunBackend,
    /// Method and compression.
    pub policy: Policy,
    /// Simulated drives.
    pub devices: usize,
    /// Their flash page size.
    pub page_size: u32,
    /// The drive behind `Csd` (the simulated board by default). A plain
    /// NVMe namespace (no InstCSD capability block) gets the SSD backend
    /// with the KV store on its block device.
    pub device: DeviceSpec,
    /// The SSD KV path (`--backend ssd`, or a plain drive).
    pub ssd: SsdSetup,
    /// Name of the KV store file (the model's).
    pub kv_name: String,
    /// Where q, k, v and the outputs live on the simulated drives: host
    /// memory, or the board's modelled GPU memory reached peer to peer or
    /// through a bounce buffer.
    pub placement: Placement,
    /// Pass every decode's q, k, v and outputs through buffers on GPU 0
    /// (needs the `cuda` feature and an NVIDIA driver).
    pub gpu: bool,
    /// On a drive: how often a failed step is run again there, and whether
    /// the host keeps a copy of the KV cache to recompute from (see
    /// [`host_driver::backend::recovery`]).
    pub retry: RetryPolicy,
    /// See [`Self::retry`].
    pub host_copy: bool,
}

/// What a generation did.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// Token counts and wall times.
    pub generation: Generation,
    /// The generated text.
    pub text: String,
    /// Device counters of the decode steps (CSD backend only).
    pub device: Option<PhaseCounters>,
    /// PCIe bytes a host that streamed the whole KV cache from an SSD for
    /// every decode step would have moved (2 · S · kv_heads · d · 2 bytes
    /// per layer and step).
    pub host_offload_pcie_bytes: u64,
    /// What the SSD KV path did (SSD backend only).
    pub ssd: Vec<String>,
    /// Bytes per DMA path on the simulated drives (prefill and decode),
    /// with the placement used.
    pub dma: Option<(Placement, DmaStats)>,
    /// With `--gpu`: the GPU and the bytes bounced between it and host
    /// memory.
    pub gpu: Option<(String, u64)>,
    /// What the drive backend's recovery did (drive backends only).
    pub recovery: Option<Recovery>,
}

impl RunSummary {
    /// Human-readable lines (wall and virtual time labelled).
    pub fn lines(&self) -> Vec<String> {
        let g = &self.generation;
        let mut out = vec![format!(
            "prompt {} tokens, prefill {:.1} tokens/s (wall); generated {} tokens, decode {:.2} tokens/s (wall)",
            g.prompt_tokens,
            rate(g.prompt_tokens, g.prefill_wall.as_secs_f64()),
            g.tokens.len(),
            rate(
                g.tokens.len().saturating_sub(1),
                g.decode_wall.as_secs_f64()
            ),
        )];
        if let Some(c) = &self.device {
            let steps = g.tokens.len().saturating_sub(1).max(1) as f64;
            out.push(format!(
                "device: {:.1} us virtual per token, {:.0} flash pages read and {:.0} skipped per token, {:.0} engine bytes per token",
                c.virtual_ns as f64 / 1e3 / steps,
                c.flash_pages_read as f64 / steps,
                c.flash_pages_skipped as f64 / steps,
                c.engine_bytes as f64 / steps,
            ));
            out.push(format!(
                "PCIe: {} bytes for the decode steps vs {} bytes for a host streaming the KV cache ({:.1}x less)",
                c.pcie_bytes,
                self.host_offload_pcie_bytes,
                self.host_offload_pcie_bytes as f64 / c.pcie_bytes.max(1) as f64
            ));
        }
        out.extend(self.ssd.iter().cloned());
        if let Some((name, bytes)) = &self.gpu {
            out.push(format!(
                "GPU: q, k, v and outputs in {name} memory; {bytes} bytes bounced through host memory (no peer-to-peer path to this drive)"
            ));
        }
        if let Some(r) = self.recovery.filter(|r| *r != Recovery::default()) {
            out.push(format!(
                "recovery: {} batches with failed steps, {} re-runs, {} failed steps then completed on the drive, {} recomputed and {} computed from the host copy ({} sequences moved), {} failed for good",
                r.batches_failed,
                r.retries,
                r.steps_recovered,
                r.steps_recomputed,
                r.steps_on_host,
                r.sequences_moved,
                r.failed
            ));
        }
        if let Some((p, d)) = &self.dma {
            out.push(format!(
                "DMA ({}): {} bytes peer to peer with GPU memory, {} bytes of drive DMA through host DRAM, {} bytes bounced in {} copies ({:.1} us virtual)",
                p.name(),
                d.p2p_bytes,
                d.device_host_dram_bytes,
                d.bounce_bytes,
                d.bounce_copies,
                d.bounce_busy_ns as f64 / 1e3
            ));
        }
        out
    }
}

fn rate(n: usize, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

/// The SmolLM2 chat template for one user turn.
pub fn chat_prompt(prompt: &str) -> String {
    format!("<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n")
}

/// Token counts and wall times of a generation.
#[derive(Clone, Debug, Default)]
pub struct Generation {
    /// Generated token ids (the prompt excluded).
    pub tokens: Vec<u32>,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Wall time of the prefill.
    pub prefill_wall: Duration,
    /// Wall time of the decode steps.
    pub decode_wall: Duration,
    /// Whether generation stopped at the end-of-text token.
    pub stopped_at_eos: bool,
}

/// Turns token bytes into text, holding back incomplete UTF-8 characters.
#[derive(Debug, Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        let s = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        s
    }
}

/// Generates greedily; `on_text` receives the prompt (unless it is a chat
/// turn) and then the text of each token as it arrives. The device is measured over the decode steps only (the
/// prefill stores the prompt's KV, it reads none).
pub fn run_generation(
    model: &Model,
    p: &RunParams,
    mut on_text: impl FnMut(&str),
) -> Result<RunSummary, RunError> {
    if p.prompt.trim().is_empty() {
        return Err(input("--prompt must not be empty"));
    }
    let tok = model.tokenizer();
    // BOS first where the model asks for it (`add_bos_token`: Gemma yes,
    // SmolLM2 no).
    let prompt = if p.chat {
        tok.encode_prompt(&chat_prompt(&p.prompt), true)
    } else {
        tok.encode_prompt(&p.prompt, false)
    };
    let cfg = model.config();
    if prompt.is_empty() || prompt.len() + p.max_tokens > cfg.context_len {
        return Err(input(format!(
            "prompt ({} tokens) + --max-tokens {} must fit the model's context of {}",
            prompt.len(),
            p.max_tokens,
            cfg.context_len
        )));
    }
    let shape = ModelShape::from(cfg);
    let capacity = prompt.len() + p.max_tokens + 1;
    let mut policy = p.policy;
    let mut ssd_setup = p.ssd.clone();
    let mut csd = None;
    let mut dev = None;
    let mut host = None;
    let mut ssd = None;
    let backend: &mut dyn AttentionBackend = match (p.backend, &p.device) {
        (RunBackend::Csd, DeviceSpec::Sim) => {
            check_device_method(policy)?;
            let mut array = sim_array(p.devices, p.page_size)?;
            for d in array.devices_mut() {
                d.transport_mut().set_placement(p.placement);
            }
            csd.insert(on_drive(array, policy, p)?)
        }
        (RunBackend::Csd, spec) => {
            let t = spec.open(p.page_size).map_err(CsdError::from)?;
            match probe(t)? {
                Drive::InstCsd(c) => {
                    check_device_method(policy)?;
                    dev.insert(on_drive(CsdArray::new(vec![*c])?, policy, p)?)
                }
                Drive::Plain(t, plain) => {
                    // A plain drive: the KV cache on its namespace, block-
                    // sparse attention on the host.
                    drop(t);
                    ssd_setup.location = plain_location(spec, &plain.model)?;
                    if policy.selection != Selection::Dense {
                        policy.selection = Selection::Block;
                    }
                    ssd.insert(build_ssd(&ssd_setup, &p.kv_name, shape, capacity, policy)?)
                }
            }
        }
        (RunBackend::Host, _) => host.insert(HostDense::new()),
        (RunBackend::Ssd, _) => {
            if !matches!(policy.selection, Selection::Dense | Selection::Block) {
                return Err(input(format!(
                    "the SSD backend runs block and dense; not {}",
                    policy.selection
                )));
            }
            ssd.insert(build_ssd(&ssd_setup, &p.kv_name, shape, capacity, policy)?)
        }
    };
    let mut staged = None;
    let backend: &mut dyn AttentionBackend = if p.gpu {
        let gpu = gpu::open(0).map_err(|e| {
            input(format!(
                "--gpu: {e}; the simulated drive models GPU memory with --placement gpu-p2p or gpu-bounce"
            ))
        })?;
        staged.insert(GpuStaged::new(backend, gpu))
    } else {
        backend
    };
    let mut attn = BackendAttention::open(backend, 0, shape, policy)?;
    if !p.chat {
        // A completion continues the prompt: show it first.
        on_text(&p.prompt);
    }
    let mut g = Generation {
        prompt_tokens: prompt.len(),
        ..Generation::default()
    };
    let mut text = String::new();
    let mut stream = Utf8Stream::default();
    let eos = tok.eos();
    let t = Instant::now();
    let logits = model.prefill(&prompt, &mut attn, Logits::Last)?;
    g.prefill_wall = t.elapsed();
    let phase = attn.backend().measure_begin()?;
    let t = Instant::now();
    let mut next = argmax(&logits);
    let mut pos = prompt.len();
    let mut interrupted = false;
    if p.max_tokens > 0 {
        loop {
            if next == eos {
                g.stopped_at_eos = true;
                break;
            }
            g.tokens.push(next);
            let piece = stream.push(&tok.token_bytes(next));
            on_text(&piece);
            text.push_str(&piece);
            if g.tokens.len() == p.max_tokens {
                break;
            }
            if super::cancel::requested() {
                interrupted = true;
                break;
            }
            let logits = model.decode(next, pos, &mut attn)?;
            pos += 1;
            next = argmax(&logits);
        }
    }
    g.decode_wall = t.elapsed();
    let device = match phase {
        Some(ph) => attn.backend().measure_end(ph)?.map(|(_, c)| c),
        None => None,
    };
    attn.close()?;
    if interrupted {
        return Err(RunError::Interrupted {
            tokens: g.tokens.len(),
        });
    }
    let gpu = staged
        .as_ref()
        .map(|s| (s.gpu().name.clone(), s.bounce_bytes));
    let dma = csd.as_ref().map(|b| {
        let total = b
            .array()
            .devices()
            .iter()
            .map(|d| d.transport().dma_stats())
            .fold(DmaStats::default(), |a, x| a + x);
        (p.placement, total)
    });
    let ssd = ssd_report(ssd.as_ref(), g.tokens.len().saturating_sub(1));
    let s0 = prompt.len() as u64;
    let steps = g.tokens.len().saturating_sub(1) as u64;
    // Σ over decode steps of the tokens attended (s0 + 1 … s0 + steps).
    let tokens_read = steps * s0 + steps * (steps + 1) / 2;
    let host_offload_pcie_bytes =
        tokens_read * (2 * cfg.n_kv_heads * cfg.head_dim * 2 * cfg.n_layers) as u64;
    let recovery = csd
        .as_ref()
        .map(InStorage::recovery)
        .or_else(|| dev.as_ref().map(InStorage::recovery));
    Ok(RunSummary {
        recovery,
        generation: g,
        text,
        device,
        host_offload_pcie_bytes,
        ssd,
        dma,
        gpu,
    })
}

/// The drive runs dense, SparF, SparF+ and pages.
fn check_device_method(policy: Policy) -> Result<(), RunError> {
    let sel = policy.selection;
    if matches!(
        sel,
        Selection::Dense | Selection::SparF | Selection::Pages | Selection::Quest
    ) || sel.sparf_plus().is_some()
    {
        Ok(())
    } else {
        Err(input(format!(
            "the drive runs dense, sparf, the sparf+ methods and pages; run {sel} with --backend host"
        )))
    }
}

/// The in-storage backend for `policy`: a SparF+ method in a rotated basis
/// opens its sequences rotated; recovery as `p` asks.
fn on_drive<T: host_driver::transport::Transport>(
    array: CsdArray<T>,
    policy: Policy,
    p: &RunParams,
) -> Result<InStorage<T>, RunError> {
    let mut b = InStorage::new(array, 1);
    if let Some((basis, _)) = policy.selection.sparf_plus() {
        b.set_basis(basis);
    }
    if matches!(policy.selection, Selection::Pages | Selection::Quest) {
        b.set_placement(policy.pages.for_selection(policy.selection).placement());
    }
    b.set_retry(p.retry);
    if p.host_copy {
        b.keep_host_copy()?;
    }
    Ok(b)
}

/// Where the KV store goes on a plain drive: its namespace's block device.
fn plain_location(spec: &DeviceSpec, model: &str) -> Result<solid_attention::KvLocation, RunError> {
    match spec {
        #[cfg(target_os = "linux")]
        DeviceSpec::Linux(ns) => Ok(solid_attention::KvLocation::Raw(
            solid_attention::setup::block_device_of(ns),
        )),
        _ => Err(input(format!(
            "{model:?} is a plain NVMe drive without a block device here; keep the KV cache in a file with --backend ssd --kv-dir DIR"
        ))),
    }
}

#[cfg(target_os = "linux")]
fn build_ssd(
    setup: &SsdSetup,
    name: &str,
    shape: ModelShape,
    capacity: usize,
    policy: Policy,
) -> Result<solid_attention::SolidBackend, RunError> {
    let step = if policy.selection == Selection::Dense {
        capacity
    } else {
        0
    };
    super::ssd::ssd_backend(setup, name, shape, capacity, step)
}

#[cfg(not(target_os = "linux"))]
fn build_ssd(
    _: &SsdSetup,
    _: &str,
    _: ModelShape,
    _: usize,
    _: Policy,
) -> Result<HostDense, RunError> {
    Err(super::ssd::unsupported())
}

#[cfg(target_os = "linux")]
fn ssd_report(b: Option<&solid_attention::SolidBackend>, steps: usize) -> Vec<String> {
    b.map(|b| super::ssd::report(b, steps)).unwrap_or_default()
}

#[cfg(not(target_os = "linux"))]
fn ssd_report(_: Option<&HostDense>, _: usize) -> Vec<String> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_holds_back_split_characters() {
        let mut s = Utf8Stream::default();
        let e = "é".as_bytes();
        assert_eq!(s.push(&e[..1]), "");
        assert_eq!(s.push(&e[1..]), "é");
        assert_eq!(s.push(b"ab"), "ab");
    }
}
