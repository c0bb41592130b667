//! `instinfer demo`: the synthetic decode loop; prints a table per method.

use instinfer::RunError;
use instinfer::device::DeviceSpec;
use instinfer::run::demo::{DemoParams, run_demo};

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Layers per sequence.
    #[arg(long, default_value_t = 4)]
    layers: usize,
    /// Sequences decoded together.
    #[arg(long, default_value_t = 8)]
    seqs: usize,
    /// Decode steps.
    #[arg(long, default_value_t = 64)]
    steps: usize,
    /// Prompt tokens prefilled per sequence.
    #[arg(long, default_value_t = 1024)]
    prompt: usize,
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
}

pub fn run(a: Args) -> Result<(), RunError> {
    let p = DemoParams {
        layers: a.layers,
        seqs: a.seqs,
        steps: a.steps,
        prompt: a.prompt,
        device: a.device,
        devices: a.devices,
        page_size: super::page_size(&a.page_size),
        ..DemoParams::default()
    };
    println!("{}", run_demo(&p)?);
    Ok(())
}
