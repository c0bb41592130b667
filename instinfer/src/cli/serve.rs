//! `instinfer serve`: the simulated CSD (the firmware on the simulated
//! board) as an NVMe/TCP target.

use std::net::SocketAddr;

use instinfer::RunError;
use nvme_tcp::target::TargetError;
use nvme_tcp::{Target, TargetConfig};

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address and port to listen on. Loopback by default; any other
    /// address exposes the device to that network, and must be named here.
    #[arg(long, default_value = "127.0.0.1:4420")]
    listen: SocketAddr,
    /// The subsystem NQN hosts connect to.
    #[arg(long, default_value = nvme_tcp::DEFAULT_NQN)]
    nqn: String,
    /// Flash page size of the simulated drive, bytes.
    #[arg(long, default_value = "16384", value_parser = super::page_size_parser())]
    page_size: String,
    /// Capacity of namespace 1 (held in RAM by this process), MiB.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=65536))]
    namespace_mib: u64,
    /// Block size of namespace 1.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(512..=4096))]
    lba_size: u32,
    /// I/O queues (connections) a controller may open.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    io_queues: u16,
    /// Print the listening address once bound (for scripts that pass
    /// port 0) and nothing else unless something goes wrong.
    #[arg(long)]
    quiet: bool,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let cfg = TargetConfig {
        listen: a.listen,
        nqn: a.nqn,
        page_size: super::page_size(&a.page_size),
        namespace_bytes: a.namespace_mib << 20,
        lba_size: a.lba_size as usize,
        max_io_queues: a.io_queues,
        log: !a.quiet,
        ..TargetConfig::default()
    };
    let t = Target::bind(cfg)?;
    if a.quiet {
        println!("{}", t.local_addr().map_err(TargetError::from)?);
    }
    Ok(t.serve()?)
}
