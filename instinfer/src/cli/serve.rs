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
    /// A host NQN that may connect (repeat for more); without any, every
    /// host may.
    #[arg(long = "allow-host", value_name = "NQN")]
    allow_hosts: Vec<String>,
    /// Sequences one host may hold open at once.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_sequences_per_host: Option<u32>,
    /// KV cache one host's sequences may hold (K, V and a rotated K̃, fp16), MiB.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1 << 30)))]
    max_kv_mib_per_host: Option<u64>,
    /// Require DH-HMAC-CHAP: the file (mode 600) names each host that may
    /// connect, one line `HOSTNQN HOST_SECRET [CTRL_SECRET]` with secrets
    /// in nvme-cli's `DHHC-1:…` form; a CTRL_SECRET lets the host
    /// authenticate the controller too. Other hosts are refused.
    #[arg(long, value_name = "FILE")]
    auth_secrets: Option<std::path::PathBuf>,
    /// Hashes the controller accepts, preferred first (sha256, sha384, sha512).
    #[arg(long, value_name = "LIST", requires = "auth_secrets")]
    dhchap_hashes: Option<String>,
    /// DH groups the controller accepts, preferred first (null,
    /// ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144, ffdhe8192).
    #[arg(long, value_name = "LIST", requires = "auth_secrets")]
    dhchap_groups: Option<String>,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let auth = match &a.auth_secrets {
        None => None,
        Some(path) => {
            let hosts =
                nvme_tcp::auth::load(path).map_err(|e| TargetError::Config(e.to_string()))?;
            let policy = nvme_tcp::auth::Policy::parse(
                a.dhchap_hashes.as_deref(),
                a.dhchap_groups.as_deref(),
            )
            .map_err(TargetError::Config)?;
            Some(nvme_tcp::target::TargetAuth { hosts, policy })
        }
    };
    let cfg = TargetConfig {
        auth,
        listen: a.listen,
        nqn: a.nqn,
        page_size: super::page_size(&a.page_size),
        namespace_bytes: a.namespace_mib << 20,
        lba_size: a.lba_size as usize,
        max_io_queues: a.io_queues,
        log: !a.quiet,
        allowed_hosts: (!a.allow_hosts.is_empty()).then_some(a.allow_hosts),
        max_sequences_per_host: a.max_sequences_per_host,
        max_kv_bytes_per_host: a.max_kv_mib_per_host.map(|m| m << 20),
        ..TargetConfig::default()
    };
    let t = Target::bind(cfg)?;
    if a.quiet {
        println!("{}", t.local_addr().map_err(TargetError::from)?);
    }
    Ok(t.serve()?)
}
