//! `instinfer attend`: one decode step on .npy inputs; prints one JSON line.

use std::path::PathBuf;

use instinfer::RunError;
use instinfer::device::DeviceSpec;
use instinfer::run::attend::{AttendFiles, DeviceChoice, MethodChoice, SparseChoice, attend_files};

/// Attention method.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum MethodArg {
    /// Full attention over every token.
    Dense,
    /// InstInfer's SparF (approximate scores on r dims, exact pass on top-k tokens).
    Sparf,
}

/// Arguments of `attend`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keys, [kv_heads, S, d], fp16 or f32.
    #[arg(long)]
    k: PathBuf,
    /// Values, [kv_heads, S, d], fp16 or f32.
    #[arg(long)]
    v: PathBuf,
    /// Query, [q_heads, d] (q_heads a multiple of kv_heads), fp16 or f32.
    #[arg(long)]
    q: PathBuf,
    /// Attention method.
    #[arg(long, value_enum)]
    method: MethodArg,
    /// SparF: query dims for approximate scores [default: d/8].
    #[arg(long)]
    r: Option<usize>,
    /// SparF: tokens attended exactly [default: S/8, at least 1].
    #[arg(long)]
    topk: Option<usize>,
    /// SparF: most recent tokens always kept [default: topk/4].
    #[arg(long)]
    local: Option<usize>,
    /// The device: `sim` (the simulated board), `qemu:zynqmp` /
    /// `qemu:zynq7000` (the firmware under QEMU; `cargo xtask qemu` builds
    /// it), a Linux NVMe namespace (`/dev/ngXnY`) or a drive bound to
    /// vfio-pci (`vfio:0000:00:04.0`), or a controller on an NVMe/TCP
    /// target (`tcp://HOST:PORT/NQN`, see `instinfer serve`).
    #[arg(long, default_value = "sim", value_parser = super::device_parser)]
    device: DeviceSpec,
    /// Drives sharing the KV heads.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Flash page size of the simulated drives, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
    /// Dims per page of the dim-indexed K copy (divides d, at most 8); 1
    /// skips the most dim pages (see `instinfer bench attend`).
    #[arg(long, default_value_t = 1)]
    dim_group: u8,
    /// Output [q_heads, d] f32.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let files = AttendFiles {
        k: a.k,
        v: a.v,
        q: a.q,
        out: a.out,
    };
    let method = match a.method {
        MethodArg::Dense => MethodChoice::Dense,
        MethodArg::Sparf => MethodChoice::SparF,
    };
    let sparse = SparseChoice {
        r: a.r,
        topk: a.topk,
        local: a.local,
    };
    let dev = DeviceChoice {
        device: a.device,
        devices: a.devices,
        page_size: super::page_size(&a.page_size),
        dim_group: a.dim_group,
    };
    let report = attend_files(&files, method, sparse, dev)?;
    println!("{}", report.to_json());
    Ok(())
}
