//! [`NvmeTcp`]: the host's NVMe/TCP initiator, a [`Transport`] to any
//! NVMe/TCP target (`instinfer serve`, the kernel's `nvmet-tcp`, …).
//!
//! It opens the admin queue (ICReq, Connect with the dynamic controller
//! id), enables the controller through the CC / CSTS properties, asks for
//! one I/O queue with Set Features and connects it. Writes up to the
//! target's in-capsule size travel in the capsule, larger ones answer the
//! target's R2Ts with H2CData PDUs of at most MAXH2CDATA bytes; reads come
//! back in C2HData PDUs. A keep-alive thread sends Keep Alive every half
//! KATO on the admin queue. Every wait for the target is bounded by the
//! command timeout.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use proto::fabrics::{
    self, ConnectData, FabricsCmd, PROP_CAP, PROP_CC, PROP_CSTS, SGL_IN_CAPSULE, SGL_TRANSPORT,
    SglDesc,
};
use proto::tcp::{Digests, Pdu};
use proto::{Cqe, Opcode, Sqe, Status};

use super::wire::{self, WireError};
use host_driver::transport::inflight::Inflight;
use host_driver::transport::{DeviceTime, IoData, IoRequest, IoResult, Transport, TransportError};

/// `tcp://HOST:PORT/NQN[?hostnqn=NQN&secrets=FILE]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TcpUrl {
    /// `HOST:PORT` (port 4420 if not given).
    pub addr: String,
    /// The subsystem NQN.
    pub nqn: String,
    /// The host NQN to connect as (`hostnqn=`; else
    /// [`super::HOST_NQN`]).
    pub hostnqn: Option<String>,
    /// The secrets file whose line for the host NQN authenticates it
    /// (`secrets=`; DH-HMAC-CHAP, when the target asks for it).
    pub secrets: Option<std::path::PathBuf>,
}

impl TcpUrl {
    /// Parses `tcp://HOST[:PORT][/NQN][?hostnqn=NQN&secrets=FILE]` (NQN
    /// defaults to [`super::DEFAULT_NQN`]).
    pub fn parse(s: &str) -> Result<Self, String> {
        let rest = s
            .strip_prefix("tcp://")
            .ok_or_else(|| format!("{s:?} is not tcp://HOST:PORT/NQN"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (mut hostnqn, mut secrets) = (None, None);
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            match kv.split_once('=') {
                Some(("hostnqn", v)) if !v.is_empty() && v.len() <= 223 => {
                    hostnqn = Some(v.to_string());
                }
                Some(("secrets", v)) if !v.is_empty() => secrets = Some(v.into()),
                _ => {
                    return Err(format!(
                        "{s:?}: unknown or empty option {kv:?} (hostnqn=NQN, secrets=FILE)"
                    ));
                }
            }
        }
        let (addr, nqn) = rest.split_once('/').unwrap_or((rest, super::DEFAULT_NQN));
        if addr.is_empty() {
            return Err(format!("{s:?}: no host"));
        }
        if nqn.is_empty() || nqn.len() > 223 {
            return Err(format!("{s:?}: the NQN must be 1 to 223 bytes"));
        }
        let addr = if addr.starts_with('[') {
            if addr.contains("]:") {
                addr.to_string()
            } else {
                format!("{addr}:{}", proto::tcp::PORT)
            }
        } else if addr.contains(':') {
            let (_, port) = addr.rsplit_once(':').unwrap_or_default();
            port.parse::<u16>()
                .map_err(|_| format!("{s:?}: port {port:?} is not a number"))?;
            addr.to_string()
        } else {
            format!("{addr}:{}", proto::tcp::PORT)
        };
        Ok(Self {
            addr,
            nqn: nqn.to_string(),
            hostnqn,
            secrets,
        })
    }
}

impl std::fmt::Display for TcpUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tcp://{}/{}", self.addr, self.nqn)?;
        let mut sep = '?';
        if let Some(h) = &self.hostnqn {
            write!(f, "{sep}hostnqn={h}")?;
            sep = '&';
        }
        if let Some(p) = &self.secrets {
            write!(f, "{sep}secrets={}", p.display())?;
        }
        Ok(())
    }
}

/// How the initiator connects.
#[derive(Debug, Clone)]
pub struct TcpOptions {
    /// Header and data digests to ask for.
    pub digests: Digests,
    /// Keep-alive timeout in ms (0: none; Keep Alive every half of it).
    pub kato_ms: u32,
    /// I/O queue entries asked for.
    pub queue_entries: u16,
    /// Longest wait for the target on any command.
    pub timeout: Duration,
    /// The host NQN.
    pub hostnqn: String,
    /// The host's DH-HMAC-CHAP secrets, used when a Connect response asks
    /// for authentication.
    pub auth: Option<crate::auth::HostSecrets>,
}

impl Default for TcpOptions {
    fn default() -> Self {
        Self {
            digests: Digests::default(),
            kato_ms: 10_000,
            queue_entries: 64,
            timeout: Duration::from_secs(30),
            hostnqn: super::HOST_NQN.to_string(),
            auth: None,
        }
    }
}

impl TcpOptions {
    /// The defaults with the URL's host NQN and, if it names a secrets
    /// file, that host's secrets from it.
    pub fn for_url(url: &TcpUrl) -> Result<Self, TransportError> {
        let mut o = Self::default();
        if let Some(h) = &url.hostnqn {
            o.hostnqn.clone_from(h);
        }
        if let Some(path) = &url.secrets {
            let hosts = crate::auth::load(path).map_err(|e| setup("authentication", e))?;
            let mine = hosts.get(&o.hostnqn).cloned().ok_or_else(|| {
                setup(
                    "authentication",
                    format!("{} has no line for host {}", path.display(), o.hostnqn),
                )
            })?;
            o.auth = Some(mine);
        }
        Ok(o)
    }
}

fn setup(what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(format!("{what}: {e}"))
}

impl From<WireError> for TransportError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Io(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                TransportError::DeviceFailed("the NVMe/TCP target did not answer in time".into())
            }
            WireError::Io(e) => TransportError::Io(e),
            WireError::Closed => {
                TransportError::DeviceFailed("the NVMe/TCP target closed the connection".into())
            }
            WireError::Pdu(p) => {
                TransportError::DeviceFailed(format!("malformed PDU from the target: {p}"))
            }
            e @ WireError::DataDigest { .. } => {
                TransportError::DeviceFailed(format!("from the target: {e}"))
            }
        }
    }
}

/// A command waiting for its completion.
#[derive(Debug, Default)]
struct Outstanding {
    /// Data to send when the target asks (R2T).
    out: Vec<u8>,
    /// Read data received so far.
    read: Vec<u8>,
    /// Read data expected.
    want: usize,
}

/// One queue: one TCP connection.
#[derive(Debug)]
struct Queue {
    r: BufReader<TcpStream>,
    w: TcpStream,
    d: Digests,
    maxh2c: usize,
    in_capsule: usize,
    qid: u16,
}

impl Queue {
    fn connect(url: &TcpUrl, o: &TcpOptions, qid: u16) -> Result<Self, TransportError> {
        let addrs: Vec<_> = url
            .addr
            .to_socket_addrs()
            .map_err(|e| setup(&url.addr, e))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, o.timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let s = stream.ok_or_else(|| {
            setup(
                &format!("connecting to {}", url.addr),
                last.map_or_else(|| "no address".to_string(), |e| e.to_string()),
            )
        })?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(o.timeout))?;
        s.set_write_timeout(Some(o.timeout))?;
        let mut q = Self {
            r: BufReader::with_capacity(256 << 10, s.try_clone()?),
            w: s,
            d: Digests::default(),
            maxh2c: 0,
            in_capsule: if qid == 0 { 8192 } else { 0 },
            qid,
        };
        let req = Pdu::IcReq {
            pfv: 0,
            hpda: 0,
            digests: o.digests,
            maxr2t: 0,
        };
        wire::write_pdu(&mut q.w, &req, Digests::default(), &[])?;
        let (resp, _) = wire::read_pdu(&mut q.r, Digests::default(), 256)?;
        match resp {
            Pdu::IcResp {
                pfv: 0,
                cpda: 0,
                digests,
                maxdata,
            } if digests == o.digests && maxdata >= 4096 && maxdata % 4 == 0 => {
                q.d = digests;
                q.maxh2c = maxdata as usize;
                Ok(q)
            }
            Pdu::TermReq { fes, .. } => Err(setup(
                "NVMe/TCP connection",
                format!("the target refused the ICReq (FES {fes:#x})"),
            )),
            other => Err(setup(
                "NVMe/TCP connection",
                format!("unusable ICResp {other:?}"),
            )),
        }
    }

    /// Sends a command capsule: write data in the capsule when it fits,
    /// else kept (not copied) for the target's R2Ts.
    fn send(&mut self, mut sqe: Sqe, data: IoData) -> Result<Outstanding, TransportError> {
        let len = data.len();
        if len > u32::MAX as usize {
            return Err(TransportError::BadTransfer {
                len,
                reason: "above 4 GiB".into(),
            });
        }
        let mut o = Outstanding::default();
        let inline = match data {
            IoData::ToDevice(b) if b.len() <= self.in_capsule => b,
            IoData::ToDevice(b) => {
                o.out = b;
                Vec::new()
            }
            IoData::FromDevice(n) => {
                o.want = n;
                Vec::new()
            }
            IoData::None => Vec::new(),
        };
        let kind = if inline.is_empty() {
            SGL_TRANSPORT
        } else {
            SGL_IN_CAPSULE
        };
        SglDesc {
            addr: 0,
            len: len as u32,
            kind,
        }
        .put(&mut sqe);
        wire::write_pdu(&mut self.w, &Pdu::CapsuleCmd(sqe), self.d, &inline)?;
        Ok(o)
    }

    /// Reads PDUs until a command completes; answers R2Ts on the way.
    fn next_completion(
        &mut self,
        pending: &mut HashMap<u16, Outstanding>,
    ) -> Result<(u16, IoResult), TransportError> {
        let bad = |why: String| TransportError::DeviceFailed(format!("NVMe/TCP target: {why}"));
        // A target may send a read's data in one C2HData PDU.
        let biggest = pending.values().map(|o| o.want).max().unwrap_or(0);
        let max = (self.maxh2c.max(biggest).max(1 << 20) + 256).min(u32::MAX as usize) as u32;
        loop {
            let (pdu, data) = wire::read_pdu(&mut self.r, self.d, max)?;
            match pdu {
                Pdu::CapsuleResp(cqe) => {
                    let o = pending
                        .remove(&cqe.cid)
                        .ok_or_else(|| bad(format!("response for unknown cid {}", cqe.cid)))?;
                    return Ok((
                        cqe.cid,
                        IoResult {
                            cqe,
                            data: if cqe.status().is_success() {
                                o.read
                            } else {
                                Vec::new()
                            },
                        },
                    ));
                }
                Pdu::C2HData {
                    cccid,
                    datao,
                    success,
                    ..
                } => {
                    let o = pending
                        .get_mut(&cccid)
                        .ok_or_else(|| bad(format!("data for unknown cid {cccid}")))?;
                    if datao as usize != o.read.len() || o.read.len() + data.len() > o.want {
                        return Err(bad(format!(
                            "C2HData at {datao} (+{}) of {}",
                            data.len(),
                            o.want
                        )));
                    }
                    o.read.extend_from_slice(&data);
                    if success {
                        let o = pending.remove(&cccid).unwrap_or_default();
                        let cqe = Cqe::new(cccid, self.qid, 0, Status::SUCCESS, 0, false);
                        return Ok((cccid, IoResult { cqe, data: o.read }));
                    }
                }
                Pdu::R2T {
                    cccid,
                    ttag,
                    r2to,
                    r2tl,
                } => {
                    let o = pending
                        .get(&cccid)
                        .ok_or_else(|| bad(format!("R2T for unknown cid {cccid}")))?;
                    let (from, len) = (r2to as usize, r2tl as usize);
                    if len == 0 || from + len > o.out.len() {
                        return Err(bad(format!(
                            "R2T for {len} bytes at {from} of {}",
                            o.out.len()
                        )));
                    }
                    let range = &o.out[from..from + len];
                    let mut buf = Vec::with_capacity(len + 64 * len.div_ceil(self.maxh2c));
                    for (i, chunk) in range.chunks(self.maxh2c).enumerate() {
                        let off = i * self.maxh2c;
                        let p = Pdu::H2CData {
                            cccid,
                            ttag,
                            datao: (from + off) as u32,
                            datal: chunk.len() as u32,
                            last: off + chunk.len() == len,
                        };
                        wire::write_pdu(&mut buf, &p, self.d, chunk)?;
                    }
                    self.w.write_all(&buf)?;
                }
                Pdu::TermReq { fes, fei, .. } => {
                    return Err(bad(format!(
                        "terminated the connection (FES {fes:#x}, FEI {fei})"
                    )));
                }
                other => {
                    return Err(bad(format!(
                        "unexpected PDU type {:#04x}",
                        other.pdu_type()
                    )));
                }
            }
        }
    }
}

/// The admin queue (shared with the keep-alive thread).
#[derive(Debug)]
struct Admin {
    q: Queue,
    next_cid: u16,
}

impl Admin {
    fn run(&mut self, mut sqe: Sqe, data: IoData) -> Result<IoResult, TransportError> {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        sqe.set_cid(cid);
        let o = self.q.send(sqe, data)?;
        let mut pending = HashMap::from([(cid, o)]);
        let (got, res) = self.q.next_completion(&mut pending)?;
        if got != cid {
            return Err(TransportError::UnexpectedCompletion { cid: got, sq_id: 0 });
        }
        Ok(res)
    }

    fn fabrics(&mut self, cmd: FabricsCmd, data: IoData) -> Result<Cqe, TransportError> {
        Ok(self.run(cmd.to_sqe(), data)?.cqe)
    }

    /// Runs DH-HMAC-CHAP on this queue if the Connect response `cqe` asks
    /// for it (AUTHREQ.ATR).
    fn authenticate_if_asked(
        &mut self,
        cqe: &Cqe,
        url: &TcpUrl,
        o: &TcpOptions,
        qid: u16,
    ) -> Result<(), TransportError> {
        if cqe.dw0 & fabrics::AUTHREQ_ATR == 0 {
            return Ok(());
        }
        let Some(secrets) = &o.auth else {
            return Err(setup(
                &format!("queue {qid}"),
                "the target requires authentication (DH-HMAC-CHAP) and no secret was given \
                 (tcp://…/NQN?hostnqn=NQN&secrets=FILE)",
            ));
        };
        crate::auth::host::authenticate(self, &o.hostnqn, &url.nqn, secrets, qid)
            .map(|_| ())
            .map_err(|e| setup(&format!("queue {qid}"), e))
    }
}

impl crate::auth::host::Channel for Admin {
    fn send(&mut self, msg: &[u8]) -> Result<(), crate::auth::AuthError> {
        let cmd = FabricsCmd::AuthSend {
            secp: fabrics::SECP_AUTH,
            spsp: fabrics::SPSP_DHCHAP,
            tl: msg.len() as u32,
        };
        let cqe = self
            .fabrics(cmd, IoData::ToDevice(msg.to_vec()))
            .map_err(|e| crate::auth::AuthError::Transport(e.to_string()))?;
        ok("Authentication Send", &cqe)
            .map_err(|e| crate::auth::AuthError::Transport(e.to_string()))
    }

    fn receive(&mut self, al: u32) -> Result<Vec<u8>, crate::auth::AuthError> {
        let cmd = FabricsCmd::AuthReceive {
            secp: fabrics::SECP_AUTH,
            spsp: fabrics::SPSP_DHCHAP,
            al,
        };
        let r = self
            .run(cmd.to_sqe(), IoData::FromDevice(al as usize))
            .map_err(|e| crate::auth::AuthError::Transport(e.to_string()))?;
        ok("Authentication Receive", &r.cqe)
            .map_err(|e| crate::auth::AuthError::Transport(e.to_string()))?;
        Ok(r.data)
    }
}

fn ok(what: &str, cqe: &Cqe) -> Result<(), TransportError> {
    let s = cqe.status();
    if s.is_success() {
        return Ok(());
    }
    // Connect Invalid Parameters names the refused field in dw0.
    let field = if s.same_code(&fabrics::CONNECT_INVALID_PARAMETERS) {
        match ((cqe.dw0 >> 16) & 1, cqe.dw0 as u16) {
            (1, ConnectData::SUBNQN_OFFSET) => ": the target serves no subsystem of that NQN",
            (1, ConnectData::HOSTNQN_OFFSET) => ": the target refused this host NQN",
            (1, 16) => ": no such controller",
            (0, 44) => ": queue size refused",
            _ => "",
        }
    } else if s.same_code(&fabrics::CONNECT_INVALID_HOST) {
        ": this host may not use that controller"
    } else {
        ""
    };
    Err(TransportError::Setup(format!(
        "{what}: {s} (dw0 {:#x}){field}",
        cqe.dw0
    )))
}

fn connect_data(
    url: &TcpUrl,
    o: &TcpOptions,
    cntlid: u16,
    hostid: [u8; 16],
) -> Result<IoData, TransportError> {
    let cd = ConnectData::new(hostid, cntlid, &url.nqn, &o.hostnqn)
        .map_err(|e| setup("Connect data", e))?;
    Ok(IoData::ToDevice(cd.to_bytes().to_vec()))
}

/// One record of a target's Discovery Log Page, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveredPort {
    /// Subsystem type ([`proto::discovery::SUBTYPE_NVM`] or
    /// [`proto::discovery::SUBTYPE_CURRENT_DISCOVERY`]).
    pub subtype: u8,
    /// The subsystem's NQN.
    pub subnqn: String,
    /// Its address and TCP port.
    pub traddr: String,
    /// Its TCP port, as text.
    pub trsvcid: String,
    /// Address family.
    pub adrfam: u8,
    /// Port id.
    pub portid: u16,
}

impl DiscoveredPort {
    /// The `tcp://` URL a host connects to.
    pub fn url(&self) -> String {
        if self.adrfam == proto::discovery::ADRFAM_IPV6 {
            format!("tcp://[{}]:{}/{}", self.traddr, self.trsvcid, self.subnqn)
        } else {
            format!("tcp://{}:{}/{}", self.traddr, self.trsvcid, self.subnqn)
        }
    }
}

/// Reads the Discovery Log Page of the target at `addr` (`HOST:PORT`):
/// connects an admin queue to the well-known discovery NQN, reads the
/// page's header, then the whole page, and disconnects (what `nvme
/// discover` does).
pub fn discover(addr: &str, o: &TcpOptions) -> Result<Vec<DiscoveredPort>, TransportError> {
    use proto::discovery::{self, RECORD_SIZE};
    let url = TcpUrl {
        addr: addr.to_string(),
        nqn: discovery::DISCOVERY_NQN.to_string(),
        ..TcpUrl::default()
    };
    let mut hostid = [0u8; 16];
    hostid[..4].copy_from_slice(&proto::tcp::crc32c(o.hostnqn.as_bytes()).to_le_bytes());
    let (mut admin, _, _) = NvmeTcp::admin_enabled(&url, o, hostid)?;
    let mut read = |bytes: usize| -> Result<Vec<u8>, TransportError> {
        let sqe = proto::log::get_log_page(discovery::LID_DISCOVERY, bytes as u32);
        let r = admin.run(sqe, IoData::FromDevice(bytes))?;
        ok("Get Log Page (discovery)", &r.cqe)?;
        Ok(r.data)
    };
    let head = read(RECORD_SIZE)?;
    let (_, numrec) = discovery::parse_header(&head).map_err(|e| bad_page(&e))?;
    // A page larger than one command moves is not expected from a
    // discovery controller; 64 records is far above any target here.
    let n = usize::try_from(numrec)
        .ok()
        .filter(|&n| n <= 64)
        .ok_or_else(|| {
            TransportError::DeviceFailed(format!("discovery log of {numrec} records"))
        })?;
    let page = read(RECORD_SIZE * (n + 1))?;
    (0..n)
        .map(|i| {
            let e = discovery::entry(&page, i).map_err(|e| bad_page(&e))?;
            Ok(DiscoveredPort {
                subtype: e.subtype,
                subnqn: e.subnqn.to_string(),
                traddr: e.traddr.to_string(),
                trsvcid: e.trsvcid.to_string(),
                adrfam: e.adrfam,
                portid: e.portid,
            })
        })
        .collect()
}

fn bad_page(e: &proto::ProtoError) -> TransportError {
    TransportError::DeviceFailed(format!("malformed discovery log page: {e}"))
}

/// A controller on an NVMe/TCP target, with one I/O queue.
#[derive(Debug)]
pub struct NvmeTcp {
    url: TcpUrl,
    opts: TcpOptions,
    hostid: [u8; 16],
    admin: Arc<Mutex<Admin>>,
    io: Queue,
    cntlid: u16,
    depth: usize,
    /// I/O commands outstanding (what each expects back) or completed.
    cmds: Inflight<Outstanding>,
    keep_alive: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    /// The I/O connection failed; reconnect before the next command.
    broken: bool,
    reconnects: u32,
}

impl NvmeTcp {
    /// Connects with default options and the URL's host NQN and secrets
    /// ([`TcpOptions::for_url`]).
    pub fn connect(url: &TcpUrl) -> Result<Self, TransportError> {
        Self::connect_with(url, &TcpOptions::for_url(url)?)
    }

    /// Connects, enables the controller and creates one I/O queue.
    pub fn connect_with(url: &TcpUrl, o: &TcpOptions) -> Result<Self, TransportError> {
        let mut hostid = [0u8; 16];
        let seed = format!("{}:{}:{:?}", o.hostnqn, std::process::id(), Instant::now());
        hostid[..4].copy_from_slice(&proto::tcp::crc32c(seed.as_bytes()).to_le_bytes());
        hostid[4..8].copy_from_slice(&proto::tcp::crc32c(o.hostnqn.as_bytes()).to_le_bytes());
        let (admin, io, cntlid, depth) = Self::establish(url, o, hostid)?;
        let mut t = Self {
            url: url.clone(),
            opts: o.clone(),
            hostid,
            admin: Arc::new(Mutex::new(admin)),
            io,
            cntlid,
            depth,
            cmds: Inflight::default(),
            keep_alive: None,
            broken: false,
            reconnects: 0,
        };
        t.start_keep_alive();
        Ok(t)
    }

    /// Opens the admin queue, enables the controller and connects one I/O
    /// queue: (admin, I/O queue, controller id, queue depth).
    /// Connects an admin queue to `url`'s subsystem and enables its
    /// controller: the queue, the controller id and CAP.MQES + 1.
    fn admin_enabled(
        url: &TcpUrl,
        o: &TcpOptions,
        hostid: [u8; 16],
    ) -> Result<(Admin, u16, usize), TransportError> {
        let mut admin = Admin {
            q: Queue::connect(url, o, 0)?,
            next_cid: 0,
        };
        let cqe = admin.fabrics(
            FabricsCmd::Connect {
                recfmt: 0,
                qid: 0,
                sqsize: 31,
                cattr: 0,
                kato: o.kato_ms,
            },
            connect_data(url, o, fabrics::CNTLID_DYNAMIC, hostid)?,
        )?;
        ok("Connect (admin queue)", &cqe)?;
        let cntlid = cqe.dw0 as u16;
        admin.authenticate_if_asked(&cqe, url, o, 0)?;
        let cap = admin.fabrics(
            FabricsCmd::PropertyGet {
                wide: true,
                offset: PROP_CAP,
            },
            IoData::None,
        )?;
        ok("Property Get CAP", &cap)?;
        let cap = u64::from(cap.dw0) | u64::from(cap.dw1) << 32;
        let mqes = (cap & 0xFFFF) as usize + 1;
        let ready_within = Duration::from_millis(500 * ((cap >> 24) & 0xFF).max(1));
        // CC: EN, 64-byte SQEs, 16-byte CQEs, NVM command set, 4 KiB pages.
        let cc = 1 | 6 << 16 | 4 << 20;
        ok(
            "Property Set CC",
            &admin.fabrics(
                FabricsCmd::PropertySet {
                    wide: false,
                    offset: PROP_CC,
                    value: cc,
                },
                IoData::None,
            )?,
        )?;
        let start = Instant::now();
        loop {
            let csts = admin.fabrics(
                FabricsCmd::PropertyGet {
                    wide: false,
                    offset: PROP_CSTS,
                },
                IoData::None,
            )?;
            ok("Property Get CSTS", &csts)?;
            if csts.dw0 & 2 != 0 {
                return Err(setup("enable", "controller fatal status (CSTS.CFS)"));
            }
            if csts.dw0 & 1 == 1 {
                break;
            }
            if start.elapsed() > ready_within {
                return Err(setup("enable", "CSTS.RDY not set within CAP.TO"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok((admin, cntlid, mqes))
    }

    fn establish(
        url: &TcpUrl,
        o: &TcpOptions,
        hostid: [u8; 16],
    ) -> Result<(Admin, Queue, u16, usize), TransportError> {
        let (mut admin, cntlid, mqes) = Self::admin_enabled(url, o, hostid)?;
        let mut nq = Sqe::new(Opcode(0x09));
        nq.cdw10 = 0x07;
        let r = admin.run(nq, IoData::None)?;
        ok("Set Features (Number of Queues)", &r.cqe)?;
        let entries = usize::from(o.queue_entries).clamp(2, mqes);
        let mut io = Queue::connect(url, o, 1)?;
        // The in-capsule size a target takes on I/O queues is in its
        // Identify Controller (IOCCSZ); 8 KiB is what `instinfer serve`
        // and nvmet-tcp take by default, and a target that takes less
        // answers with an SGL error, so ask for it.
        io.in_capsule = Self::ioccsz(&mut admin).unwrap_or(0);
        let mut conn = Admin { q: io, next_cid: 0 };
        let cqe = conn.fabrics(
            FabricsCmd::Connect {
                recfmt: 0,
                qid: 1,
                sqsize: (entries - 1) as u16,
                cattr: 0,
                kato: 0,
            },
            connect_data(url, o, cntlid, hostid)?,
        )?;
        ok("Connect (I/O queue)", &cqe)?;
        conn.authenticate_if_asked(&cqe, url, o, 1)?;
        Ok((admin, conn.q, cntlid, entries - 1))
    }

    fn start_keep_alive(&mut self) {
        if self.opts.kato_ms == 0 {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (a, st) = (self.admin.clone(), stop.clone());
        let every = Duration::from_millis(u64::from(self.opts.kato_ms / 2).max(50));
        let h = std::thread::spawn(move || keep_alive(&a, &st, every));
        self.keep_alive = Some((stop, h));
    }

    /// Drops the connections and makes new ones (a new controller of the
    /// same host NQN: the target keeps the host's sequences). Commands in
    /// flight on the old connection are lost: they were reported failed.
    pub fn reconnect(&mut self) -> Result<(), TransportError> {
        self.stop_keep_alive();
        let (admin, io, cntlid, depth) = Self::establish(&self.url, &self.opts, self.hostid)?;
        self.admin = Arc::new(Mutex::new(admin));
        self.io = io;
        self.cntlid = cntlid;
        self.depth = depth;
        self.cmds.pending.clear();
        self.broken = false;
        self.reconnects += 1;
        self.start_keep_alive();
        Ok(())
    }

    /// Reconnections made so far.
    pub fn reconnects(&self) -> u32 {
        self.reconnects
    }

    /// A transport failure breaks the connection: what was in flight is
    /// lost (the error says so), the next command reconnects.
    fn broke(&mut self, e: TransportError) -> TransportError {
        if matches!(e, TransportError::Io(_) | TransportError::DeviceFailed(_)) {
            self.broken = true;
            let lost = self.cmds.pending.len();
            self.cmds.pending.clear();
            if lost > 0 {
                return TransportError::DeviceFailed(format!(
                    "{e}; {lost} command(s) in flight lost, the next one reconnects"
                ));
            }
        }
        e
    }

    /// In-capsule bytes of the I/O queues, from Identify Controller.
    fn ioccsz(admin: &mut Admin) -> Option<usize> {
        let mut sqe = Sqe::new(Opcode::IDENTIFY);
        sqe.cdw10 = 1;
        let r = admin.run(sqe, IoData::FromDevice(4096)).ok()?;
        if !r.cqe.status().is_success() || r.data.len() != 4096 {
            return None;
        }
        let (_, _, ioccsz, _) = fabrics::identify_fabrics_fields(&r.data).ok()?;
        let ioccsz = ioccsz as usize;
        Some((ioccsz * 16).saturating_sub(64))
    }

    /// The target.
    pub fn url(&self) -> &TcpUrl {
        &self.url
    }

    /// The controller id the target gave.
    pub fn cntlid(&self) -> u16 {
        self.cntlid
    }

    /// Sends one Keep Alive now.
    pub fn keep_alive_now(&self) -> Result<(), TransportError> {
        let mut a = self
            .admin
            .lock()
            .map_err(|_| TransportError::DeviceFailed("admin queue poisoned".into()))?;
        let r = a.run(Sqe::new(Opcode(0x18)), IoData::None)?;
        ok("Keep Alive", &r.cqe)
    }

    /// Stops sending Keep Alive (tests of the target's timer).
    pub fn stop_keep_alive(&mut self) {
        if let Some((stop, h)) = self.keep_alive.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
    }

    fn pump(&mut self) -> Result<(), TransportError> {
        match self.io.next_completion(&mut self.cmds.pending) {
            Ok((cid, res)) => {
                self.cmds.complete(cid, res);
                Ok(())
            }
            Err(e) => Err(self.broke(e)),
        }
    }
}

fn keep_alive(admin: &Mutex<Admin>, stop: &AtomicBool, every: Duration) {
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        if last.elapsed() < every {
            continue;
        }
        last = Instant::now();
        let Ok(mut a) = admin.lock() else { return };
        if a.run(Sqe::new(Opcode(0x18)), IoData::None).is_err() {
            return;
        }
    }
}

impl Drop for NvmeTcp {
    fn drop(&mut self) {
        self.stop_keep_alive();
        // Orderly shutdown (CC.SHN = normal); the target then sees the
        // connections close.
        if let Ok(mut a) = self.admin.lock() {
            let _ = a.fabrics(
                FabricsCmd::PropertySet {
                    wide: false,
                    offset: PROP_CC,
                    value: 1 | 6 << 16 | 4 << 20 | 1 << 14,
                },
                IoData::None,
            );
        }
    }
}

impl Transport for NvmeTcp {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        if self.broken {
            self.reconnect()?;
        }
        let mut a = self
            .admin
            .lock()
            .map_err(|_| TransportError::DeviceFailed("admin queue poisoned".into()))?;
        a.run(req.sqe, req.data)
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        if self.broken {
            self.reconnect()?;
        }
        while self.cmds.pending.len() >= self.depth {
            self.pump()?;
        }
        let cid = self.cmds.free_cid();
        let mut sqe = req.sqe;
        sqe.set_cid(cid);
        let o = match self.io.send(sqe, req.data) {
            Ok(o) => o,
            Err(e) => return Err(self.broke(e)),
        };
        self.cmds.pending.insert(cid, o);
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        if self.cmds.must_harvest()? {
            self.pump()?;
        }
        self.cmds.pop()
    }

    fn in_flight(&self) -> usize {
        self.cmds.len()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }
}
