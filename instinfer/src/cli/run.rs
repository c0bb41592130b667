//! `instinfer run`: the main job — generate text with the decode attention
//! in the (simulated) drive, streaming it, then a summary.

use std::io::Write;
use std::path::PathBuf;

use host_driver::csd::RetryPolicy;
use host_driver::dma::Placement;
use host_driver::policy::{Compression, Policy, Selection};
use instinfer::RunError;
use instinfer::device::DeviceSpec;
use instinfer::run::generate::{RunBackend, RunParams, run_generation};
use instinfer::run::ssd::kv_name;
use solid_attention::Budget;

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The prompt.
    #[arg(long, default_value = "The capital of France is")]
    prompt: String,
    /// Use the model's chat template (SmolLM2-Instruct is a chat model).
    #[arg(long)]
    chat: bool,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// Where decode attention runs: csd (the drive of --device, simulated
    /// by default), host, or ssd (the host, with the KV cache on a plain
    /// SSD: SolidAttention).
    #[arg(long, default_value = "csd")]
    backend: RunBackend,
    /// Attention method: dense, sparf, sparq, h2o, local, block (default:
    /// sparf; block with --backend ssd or a plain drive).
    #[arg(long)]
    method: Option<Selection>,
    /// KV read per step relative to dense (1/8 = SparF as in the paper).
    #[arg(long, default_value = "1/8")]
    compression: Compression,
    /// Simulated drives sharing the KV heads.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Flash page size of the simulated drives, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
    /// The drive: `sim`, `qemu:zynqmp`, `qemu:zynq7000`, a Linux NVMe
    /// namespace (`/dev/ngXnY`: an InstCSD runs attention, a plain drive
    /// holds the KV cache on its block device — its data is overwritten)
    /// `vfio:<PCI address>` or an NVMe/TCP target (`tcp://HOST:PORT/NQN`).
    #[arg(long, default_value = "sim", value_parser = super::device_parser)]
    device: DeviceSpec,
    /// Where q, k, v and the outputs live on the simulated drive: `host`,
    /// or its modelled GPU memory reached peer to peer (`gpu-p2p`) or
    /// through a host bounce buffer (`gpu-bounce`).
    #[arg(long, default_value = "host", value_parser = Placement::parse)]
    placement: Placement,
    /// Pass q, k, v and the outputs through buffers on GPU 0 (needs the
    /// `cuda` feature and an NVIDIA driver; says why not otherwise).
    #[arg(long)]
    gpu: bool,
    /// On a drive: how often a step the drive failed is run again there
    /// (a status without Do Not Retry, or no completion).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=16))]
    retries: u32,
    /// Keep a copy of the KV cache in host memory and recompute there a
    /// step the drive fails for good (its sequence then stays on the host).
    #[arg(long)]
    host_copy: bool,
    #[command(flatten)]
    ssd: super::ssd::SsdArgs,
    #[command(flatten)]
    guard: super::guard::GuardArgs,
    #[command(flatten)]
    pages: super::pages::PagesArgs,
    /// The model: a known name (`instinfer model list`; default
    /// smollm2-135m), fetched into the cache on first use, or a GGUF file.
    #[arg(long, value_name = "NAME|PATH")]
    model: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let model = super::model::load(a.model.as_deref())?;
    let p = RunParams {
        prompt: a.prompt,
        chat: a.chat,
        max_tokens: a.max_tokens,
        backend: a.backend,
        policy: Policy {
            selection: a.method.unwrap_or(match a.backend {
                RunBackend::Ssd => Selection::Block,
                _ => Selection::SparF,
            }),
            compression: a.compression,
            guard: a.guard.setting()?,
            per_layer: a.guard.per_layer,
            pages: a.pages.setting(&a.page_size)?,
        },
        devices: a.devices,
        page_size: super::page_size(&a.page_size),
        device: a.device,
        ssd: a.ssd.setup(Budget::Default)?,
        kv_name: kv_name(a.model.as_deref()),
        placement: a.placement,
        gpu: a.gpu,
        retry: RetryPolicy {
            attempts: a.retries,
        },
        host_copy: a.host_copy,
    };
    if p.host_copy && p.backend != RunBackend::Csd {
        return Err(RunError::Input(
            "--host-copy backs up a drive's KV cache; it needs --backend csd".into(),
        ));
    }
    if p.placement != Placement::Host && p.device != DeviceSpec::Sim {
        return Err(RunError::Input(format!(
            "--placement {} models GPU memory on the simulated drive; {} has none (see `instinfer gpu`)",
            p.placement.name(),
            p.device
        )));
    }
    let mut out = std::io::stdout();
    let summary = run_generation(&model, &p, |piece| {
        print!("{piece}");
        let _ = out.flush();
    })?;
    println!();
    let label = match (p.backend, p.policy.selection) {
        (RunBackend::Ssd, Selection::Block) => format!(
            "block-sparse ({}, blocks of {}, prefetch {:?})",
            match p.ssd.budget {
                Budget::Tokens(t) => format!("{t} tokens"),
                _ => "budget auto".into(),
            },
            p.ssd.block,
            p.ssd.prefetch
        ),
        _ => p.policy.to_string(),
    };
    eprintln!("--- {label} on {:?}", p.backend);
    for line in summary.lines() {
        eprintln!("{line}");
    }
    Ok(())
}
