//! `instinfer identify`: the capability block, human readable or JSON.

use host_driver::csd::{CsdError, DeviceInfo, Drive, probe};
use instinfer::RunError;
use instinfer::device::DeviceSpec;
use serde_json::json;

/// Arguments of `identify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The device: `sim` (the simulated board), `qemu:zynqmp` /
    /// `qemu:zynq7000` (the firmware under QEMU; `cargo xtask qemu` builds
    /// it), a Linux NVMe namespace (`/dev/ngXnY`) or a drive bound to
    /// vfio-pci (`vfio:0000:00:04.0`), or a controller on an NVMe/TCP
    /// target (`tcp://HOST:PORT/NQN`, see `instinfer serve`).
    #[arg(long, default_value = "sim", value_parser = super::device_parser)]
    device: DeviceSpec,
    /// Flash page size of the simulated drive, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let t = a
        .device
        .open(super::page_size(&a.page_size))
        .map_err(CsdError::from)?;
    let csd = match probe(t)? {
        Drive::InstCsd(csd) => *csd,
        Drive::Plain(_, p) => {
            // A plain NVMe drive: the KV cache goes on it, attention stays
            // on the host.
            if a.json {
                println!(
                    "{}",
                    json!({
                        "kind": "plain-nvme",
                        "model": p.model,
                        "block_bytes": p.lba_size,
                        "blocks": p.lbas,
                        "max_transfer_bytes": p.max_transfer,
                        "backend": "solid-ssd",
                        "backend_attend_demo": "ssd-offload",
                    })
                );
            } else {
                println!(
                    "plain NVMe drive (no InstCSD capability block): {}\n\
                     namespace 1           {} blocks of {} B\n\
                     max transfer         {} B\n\
                     backend              run: block-sparse with the KV store on the namespace's block device (SolidAttention);\n\
                     \x20                    attend, demo: ssd-offload (KV on the drive, attention on the host)",
                    p.model, p.lbas, p.lba_size, p.max_transfer
                );
            }
            return Ok(());
        }
    };
    let info = csd.info();
    if a.json {
        println!("{}", to_json(info));
    } else {
        print!("{}", to_text(info));
    }
    Ok(())
}

fn methods(info: &DeviceInfo) -> Vec<&'static str> {
    let mut m = Vec::new();
    if info.caps.supports(proto::Method::DENSE) {
        m.push("dense");
    }
    if info.caps.supports(proto::Method::SPARF) {
        m.push("sparf");
    }
    m
}

fn to_json(info: &DeviceInfo) -> serde_json::Value {
    let c = &info.caps;
    json!({
        "model": info.model,
        "serial": info.serial,
        "firmware": info.firmware,
        "version": c.version,
        "methods": methods(info),
        "page_size": c.page_size,
        "channels": c.channels,
        "ways": c.ways,
        "blocks_per_die": c.blocks_per_die,
        "pages_per_block": c.pages_per_block,
        "max_head_dim": c.max_head_dim,
        "max_group": c.max_group,
        "max_dim_group": c.max_dim_group,
        "max_kv_heads": c.max_kv_heads,
        "max_layers": c.max_layers,
        "max_sequences": c.max_sequences,
        "max_tokens_per_stream": c.max_tokens_per_stream,
        "engine_clock_khz": c.engine_clock_khz,
        "engine_lanes": c.engine_lanes,
        "dram_budget_bytes": c.dram_budget_bytes,
        "mdts_bytes": c.mdts_bytes,
        "max_transfer": info.max_transfer,
    })
}

fn to_text(info: &DeviceInfo) -> String {
    let c = &info.caps;
    let capacity = u64::from(c.page_size)
        * u64::from(c.channels)
        * u64::from(c.ways)
        * u64::from(c.blocks_per_die)
        * u64::from(c.pages_per_block);
    let rows: Vec<(&str, String)> = vec![
        ("model", info.model.clone()),
        ("serial", info.serial.clone()),
        ("firmware", info.firmware.clone()),
        ("capability version", c.version.to_string()),
        ("methods", methods(info).join(", ")),
        ("flash page", format!("{} B", c.page_size)),
        (
            "flash array",
            format!(
                "{} channels x {} ways, {} blocks/die x {} pages/block",
                c.channels, c.ways, c.blocks_per_die, c.pages_per_block
            ),
        ),
        (
            "raw capacity",
            format!("{:.1} MiB", capacity as f64 / (1u64 << 20) as f64),
        ),
        ("max head dim", c.max_head_dim.to_string()),
        ("max group", c.max_group.to_string()),
        ("max dim group", c.max_dim_group.to_string()),
        ("max kv heads", c.max_kv_heads.to_string()),
        ("max layers", c.max_layers.to_string()),
        ("max sequences", c.max_sequences.to_string()),
        ("max tokens/stream", c.max_tokens_per_stream.to_string()),
        (
            "engine",
            format!(
                "{} lanes @ {:.1} MHz",
                c.engine_lanes,
                f64::from(c.engine_clock_khz) / 1e3
            ),
        ),
        ("device DRAM budget", format!("{} B", c.dram_budget_bytes)),
        ("max transfer", format!("{} B", info.max_transfer)),
    ];
    rows.iter().map(|(k, v)| format!("{k:<20} {v}\n")).collect()
}
