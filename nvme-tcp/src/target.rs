//! [`Target`]: `instinfer serve`, an NVMe/TCP target in front of the
//! simulated board running the InstCSD firmware.
//!
//! One TCP connection is one queue (admin or I/O), as NVMe/TCP defines.
//! Each connection has a reader (this side's PDU state machine, see
//! [`conn`]) and a writer thread; commands for the firmware go to one board
//! thread ([`board`]) that interleaves every connection's commands on the
//! board's own PCIe queues. Connect, properties, keep-alive, Identify and
//! the standard log pages and features are the target's ([`admin`],
//! [`controller`]); a host connecting to the discovery NQN gets a
//! discovery controller ([`discovery`]); namespace 1 is a RAM namespace
//! ([`super::namespace`]). Each host NQN has its own sequence ids
//! ([`owners`]): no host reaches another's sequences.
//!
//! Back-pressure: the board thread takes a bounded queue of commands; a
//! connection whose commands cannot be queued stops reading its socket,
//! and TCP flow control holds the host. A malformed PDU ends its
//! connection with a C2HTermReq and a logged error; other connections go
//! on.

mod admin;
mod authn;
mod board;
mod conn;
mod controller;
mod discovery;
mod owners;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use board_sim::{SimConfig, SimCsd};

use super::namespace::RamNamespace;
use controller::Registry;
use host_driver::transport::SimTransport;

/// What a target serves and how.
#[derive(Debug, Clone)]
pub struct TargetConfig {
    /// Address to listen on (loopback unless the user names another).
    pub listen: SocketAddr,
    /// The subsystem NQN hosts connect to.
    pub nqn: String,
    /// Flash page size of the simulated board.
    pub page_size: u32,
    /// Capacity of namespace 1 (RAM) in bytes.
    pub namespace_bytes: u64,
    /// Block size of namespace 1.
    pub lba_size: usize,
    /// I/O queues a controller may create.
    pub max_io_queues: u16,
    /// Entries per queue (CAP.MQES + 1).
    pub queue_entries: u16,
    /// Largest H2CData PDU taken (MAXH2CDATA).
    pub max_h2c_data: u32,
    /// In-capsule data an I/O command may carry.
    pub in_capsule: u32,
    /// Connections served at once; more are closed on arrival.
    pub max_connections: usize,
    /// Log connections, errors and expiries to stderr.
    pub log: bool,
    /// Host NQNs that may connect (`None`: any host).
    pub allowed_hosts: Option<Vec<String>>,
    /// Sequences one host may hold open at once (`None`: no limit).
    pub max_sequences_per_host: Option<u32>,
    /// KV bytes (K, V and a rotated sequence's K̃, fp16) one host's open
    /// sequences may hold (`None`: no limit).
    pub max_kv_bytes_per_host: Option<u64>,
    /// In-band authentication (DH-HMAC-CHAP): when set, only the hosts it
    /// names may connect to the subsystem, and each queue must
    /// authenticate before any command but Connect and authentication.
    pub auth: Option<TargetAuth>,
}

/// The hosts that must authenticate, their secrets, and the hashes and
/// groups the controller accepts.
#[derive(Clone, Debug, Default)]
pub struct TargetAuth {
    /// Host NQN → its secrets (from the owner-only secrets file).
    pub hosts: std::collections::HashMap<String, crate::auth::HostSecrets>,
    /// Hashes and DH groups in order of preference.
    pub policy: crate::auth::Policy,
}

impl Default for TargetConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], proto::tcp::PORT)),
            nqn: super::DEFAULT_NQN.to_string(),
            page_size: 16384,
            namespace_bytes: 256 << 20,
            lba_size: 512,
            max_io_queues: 8,
            queue_entries: 128,
            max_h2c_data: 128 << 10,
            in_capsule: 8192,
            max_connections: 256,
            log: true,
            allowed_hosts: None,
            max_sequences_per_host: None,
            max_kv_bytes_per_host: None,
            auth: None,
        }
    }
}

/// A failure to start a target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The configuration cannot be served.
    #[error("target configuration: {0}")]
    Config(String),
    /// Binding or accepting failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The simulated board did not start.
    #[error("simulated board: {0}")]
    Board(#[from] host_driver::transport::TransportError),
}

/// Counters of a running target.
#[derive(Debug, Default)]
pub struct TargetStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open now.
    pub open_connections: AtomicU64,
    /// Connections closed on arrival because `max_connections` were open.
    pub refused_connections: AtomicU64,
    /// Connections ended because of a malformed or unexpected PDU.
    pub protocol_errors: AtomicU64,
    /// Connects refused because the host NQN is not on the allow-list.
    pub refused_hosts: AtomicU64,
    /// Commands refused because their host reached a quota.
    pub quota_refusals: AtomicU64,
    /// Commands failed (Transient Transport Error) because their data
    /// failed its digest; their connections went on.
    pub data_digest_errors: AtomicU64,
    /// Queues that authenticated (DH-HMAC-CHAP).
    pub authentications: AtomicU64,
    /// Authentication exchanges that failed (wrong secret, out-of-order
    /// or malformed message, no common hash or group).
    pub auth_failures: AtomicU64,
    /// Commands refused with Authentication Required (sent before the
    /// queue authenticated).
    pub auth_required: AtomicU64,
    /// Commands completed (every queue).
    pub commands: AtomicU64,
    /// Commands that went to the firmware.
    pub firmware_commands: AtomicU64,
    /// Controllers removed because their keep-alive timer expired.
    pub keep_alive_expiries: AtomicU64,
    /// Keep Alive commands received.
    pub keep_alives: AtomicU64,
}

/// What every connection shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cfg: TargetConfig,
    pub mdts_bytes: usize,
    pub registry: Mutex<Registry>,
    /// Each host's sequence ids on the board.
    pub owners: Mutex<owners::Owners>,
    pub namespace: Mutex<RamNamespace>,
    pub board: board::BoardQueue,
    pub stats: TargetStats,
    pub stop: AtomicBool,
    /// Every open connection, to close them all on stop.
    pub streams: Mutex<Vec<TcpStream>>,
}

impl Shared {
    pub(crate) fn log(&self, msg: std::fmt::Arguments<'_>) {
        if self.cfg.log {
            eprintln!("instinfer serve: {msg}");
        }
    }
}

/// A bound, not yet serving, target.
#[derive(Debug)]
pub struct Target {
    listener: TcpListener,
    shared: Arc<Shared>,
    board: JoinHandle<()>,
}

impl Target {
    /// Starts the board and binds the listening socket.
    pub fn bind(cfg: TargetConfig) -> Result<Self, TargetError> {
        if cfg.nqn.is_empty() || cfg.nqn.len() > 223 {
            return Err(TargetError::Config(format!(
                "NQN {:?} must be 1 to 223 bytes",
                cfg.nqn
            )));
        }
        if cfg.max_io_queues == 0 || cfg.queue_entries < 32 || cfg.queue_entries > 4096 {
            return Err(TargetError::Config(
                "need at least one I/O queue and 32..=4096 queue entries".into(),
            ));
        }
        if cfg.max_h2c_data < 4096
            || !cfg.max_h2c_data.is_multiple_of(4)
            || cfg.in_capsule > 1 << 20
        {
            return Err(TargetError::Config(
                "MAXH2CDATA must be a multiple of 4 of at least 4096; in-capsule data at most 1 MiB"
                    .into(),
            ));
        }
        let namespace =
            RamNamespace::new(cfg.namespace_bytes, cfg.lba_size).map_err(TargetError::Config)?;
        let sim = SimConfig::new(cfg.page_size);
        let mdts_bytes = sim.mdts_bytes as usize;
        let dev = SimCsd::new(sim).map_err(host_driver::transport::TransportError::from)?;
        let t = SimTransport::with_device(dev, 64)?;
        let (queue, board) = board::start(t);
        let listener = TcpListener::bind(cfg.listen)?;
        let shared = Arc::new(Shared {
            cfg,
            mdts_bytes,
            registry: Mutex::new(Registry::default()),
            owners: Mutex::new(owners::Owners::default()),
            namespace: Mutex::new(namespace),
            board: queue,
            stats: TargetStats::default(),
            stop: AtomicBool::new(false),
            streams: Mutex::new(Vec::new()),
        });
        Ok(Self {
            listener,
            shared,
            board,
        })
    }

    /// The address it listens on (the port, when bound to port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until stopped: accepts connections, one reader and one
    /// writer thread each, and expires controllers whose keep-alive timer
    /// runs out.
    pub fn serve(self) -> Result<(), TargetError> {
        let Target {
            listener,
            shared,
            board,
        } = self;
        let watchdog = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                while !shared.stop.load(Ordering::Relaxed) {
                    controller::expire(&shared);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        shared.log(format_args!(
            "{} listening on {} (simulated board, {} B pages; namespace 1: {} MiB in RAM)",
            shared.cfg.nqn,
            listener.local_addr()?,
            shared.cfg.page_size,
            shared.cfg.namespace_bytes >> 20
        ));
        for stream in listener.incoming() {
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            let stream = match stream {
                Ok(s) => s,
                Err(e) => {
                    shared.log(format_args!("accept: {e}"));
                    continue;
                }
            };
            shared.stats.connections.fetch_add(1, Ordering::Relaxed);
            let open = shared.stats.open_connections.load(Ordering::Relaxed);
            if open >= shared.cfg.max_connections as u64 {
                shared
                    .stats
                    .refused_connections
                    .fetch_add(1, Ordering::Relaxed);
                shared.log(format_args!(
                    "{open} connections open (the most allowed): closing a new one"
                ));
                let _ = stream.shutdown(std::net::Shutdown::Both);
                continue;
            }
            shared
                .stats
                .open_connections
                .fetch_add(1, Ordering::Relaxed);
            if let Ok(s) = stream.try_clone()
                && let Ok(mut all) = shared.streams.lock()
            {
                all.retain(|s| s.peer_addr().is_ok());
                all.push(s);
            }
            let shared = shared.clone();
            std::thread::spawn(move || {
                conn::serve(stream, shared.clone());
                shared
                    .stats
                    .open_connections
                    .fetch_sub(1, Ordering::Relaxed);
            });
        }
        let _ = watchdog.join();
        shared.board.close();
        let _ = board.join();
        Ok(())
    }

    /// Serves on a background thread; the handle stops it.
    pub fn spawn(self) -> Result<TargetHandle, TargetError> {
        let addr = self.local_addr()?;
        let shared = self.shared.clone();
        let thread = std::thread::spawn(move || {
            let _ = self.serve();
        });
        Ok(TargetHandle {
            addr,
            shared,
            thread: Some(thread),
        })
    }
}

/// A target serving on a background thread.
#[derive(Debug)]
pub struct TargetHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl TargetHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters.
    pub fn stats(&self) -> &TargetStats {
        &self.shared.stats
    }

    /// A host's sequences open and KV bytes held (what its quotas count).
    pub fn host_usage(&self, hostnqn: &str) -> (u32, u64) {
        self.shared.owners.lock().map_or((0, 0), |o| {
            let u = o.usage(hostnqn);
            (u.seqs, u.kv_bytes)
        })
    }

    /// The `tcp://` device string of this target.
    pub fn url(&self) -> String {
        format!("tcp://{}/{}", self.addr, self.shared.cfg.nqn)
    }

    /// Stops accepting, closes every connection and the board.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Ok(all) = self.shared.streams.lock() {
            for s in all.iter() {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for TargetHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
