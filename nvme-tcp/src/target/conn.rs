//! One connection (one queue): the ICReq / ICResp exchange, then command
//! capsules with in-capsule data or R2T / H2CData transfers, responses
//! with C2HData; a malformed PDU ends the connection with a C2HTermReq.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Instant;

use proto::fabrics::{self, ConnectData, FabricsCmd, SGL_IN_CAPSULE, SGL_TRANSPORT, SglDesc};
use proto::tcp::{self, Digests, Pdu};
use proto::{Cqe, DecodeSubmit, KvAppend, Opcode, SeqOpen, Sqe, Status};

use super::board::Job;
use super::controller::{self, Ctrl};
use super::{Shared, admin};
use crate::wire::{self, WireError};
use host_driver::transport::{IoData, IoRequest, IoResult};

/// In-capsule data the admin queue takes (what the Linux host assumes).
pub(crate) const ADMIN_IN_CAPSULE: usize = 8192;
/// Bytes of read data per C2HData PDU.
const C2H_CHUNK: usize = 128 << 10;

/// A change to a firmware result before it goes back to the host.
pub(crate) type Patch = Box<dyn FnOnce(&mut IoResult) + Send>;

/// What the writer thread sends.
pub(crate) enum Out {
    /// A response, after its read data (C2HData PDUs) if any.
    Resp(Cqe, Vec<u8>),
    /// Ready to transfer.
    R2T { cccid: u16, ttag: u16, len: u32 },
    /// Terminate the connection.
    Term { fes: u16, fei: u32 },
}

/// A command's data as the target has it.
pub(crate) enum Payload {
    None,
    /// Host to controller: the bytes.
    Out(Vec<u8>),
    /// Controller to host: this many bytes wanted.
    In(usize),
}

impl Payload {
    fn into_io(self) -> IoData {
        match self {
            Payload::None => IoData::None,
            Payload::Out(b) => IoData::ToDevice(b),
            Payload::In(n) => IoData::FromDevice(n),
        }
    }
}

/// Why the reader stops.
pub(crate) enum Stop {
    /// The host closed or asked to (Disconnect, H2CTermReq).
    Clean,
    /// A protocol error: terminate with this FES.
    Fatal { fes: u16, fei: u32, why: String },
}

/// A write waiting for its R2T data.
struct Transfer {
    sqe: Sqe,
    buf: Vec<u8>,
    len: usize,
    /// A PDU of it failed its data digest: the command fails once the
    /// last PDU is in.
    lost: bool,
}

/// An H2CData PDU's data, or how much of it failed its digest.
enum Received {
    Data(Vec<u8>),
    Lost(usize),
}

/// The reader's side of one connection.
pub(crate) struct Conn {
    pub shared: Arc<Shared>,
    pub peer: String,
    tx: Sender<Out>,
    stream: TcpStream,
    /// Queue id once connected.
    pub qid: Option<u16>,
    /// Controller once connected.
    pub cntlid: Option<u16>,
    /// The host NQN once connected (the owner of its sequences).
    pub hostnqn: Option<String>,
    sqsize: Arc<AtomicU32>,
    consumed: Arc<AtomicU32>,
    /// Commands received and not yet answered.
    outstanding: Arc<AtomicU32>,
    transfers: HashMap<u16, Transfer>,
    next_ttag: u16,
    /// This queue's DH-HMAC-CHAP exchange, when its host must
    /// authenticate.
    pub chap: Option<crate::auth::ControllerChap>,
}

/// Serves one connection to its end.
pub(crate) fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a: SocketAddr| a.to_string());
    let _ = stream.set_nodelay(true);
    let (Ok(rd), Ok(wr)) = (stream.try_clone(), stream.try_clone()) else {
        return;
    };
    let mut reader = BufReader::with_capacity(256 << 10, rd);
    let mut writer = BufWriter::with_capacity(256 << 10, wr);
    let digests = match handshake(&mut reader, &mut writer, &shared) {
        Ok(d) => d,
        Err(why) => {
            shared.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
            shared.log(format_args!("{peer}: connection refused: {why}"));
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    };
    let (tx, rx) = channel();
    let sqsize = Arc::new(AtomicU32::new(0));
    let consumed = Arc::new(AtomicU32::new(0));
    let outstanding = Arc::new(AtomicU32::new(0));
    let w = {
        let q = Queue {
            sqsize: sqsize.clone(),
            consumed: consumed.clone(),
            outstanding: outstanding.clone(),
        };
        std::thread::spawn(move || write_loop(writer, rx, digests, &q))
    };
    let mut c = Conn {
        shared: shared.clone(),
        peer,
        tx,
        stream,
        qid: None,
        cntlid: None,
        hostnqn: None,
        sqsize,
        consumed,
        outstanding,
        transfers: HashMap::new(),
        next_ttag: 0,
        chap: None,
    };
    let cfg = &shared.cfg;
    let max_plen = (cfg.max_h2c_data.max(cfg.in_capsule) as usize).max(ADMIN_IN_CAPSULE)
        + tcp::MAX_HEADER
        + 2 * tcp::DIGEST;
    let stop = loop {
        let (pdu, data) = match wire::read_pdu(&mut reader, digests, max_plen as u32) {
            Ok((p, d)) => (p, Received::Data(d)),
            Err(WireError::Closed) => break Stop::Clean,
            Err(WireError::Io(e)) => {
                c.shared
                    .log(format_args!("{}: connection lost: {e}", c.peer));
                break Stop::Clean;
            }
            Err(WireError::Pdu(e)) => {
                break Stop::Fatal {
                    fes: e.fes(),
                    fei: 0,
                    why: e.to_string(),
                };
            }
            // The header is sound (its own digest, if any, passed): the
            // command the data belongs to fails, the connection goes on.
            Err(WireError::DataDigest { pdu, len }) => {
                c.shared
                    .stats
                    .data_digest_errors
                    .fetch_add(1, Ordering::Relaxed);
                c.shared.log(format_args!(
                    "{}: data digest mismatch ({len} bytes): failing the command",
                    c.peer
                ));
                (*pdu, Received::Lost(len))
            }
        };
        let step = match (pdu, data) {
            (Pdu::CapsuleCmd(sqe), Received::Data(data)) => c.command(sqe, data),
            (Pdu::CapsuleCmd(sqe), Received::Lost(_)) => c.command_lost_data(sqe),
            (
                Pdu::H2CData {
                    cccid,
                    ttag,
                    datao,
                    last,
                    ..
                },
                data,
            ) => c.h2c(cccid, ttag, datao, last, data),
            (
                Pdu::TermReq {
                    from_host: true,
                    fes,
                    ..
                },
                _,
            ) => {
                c.shared.log(format_args!(
                    "{}: host terminated the connection (FES {fes:#x})",
                    c.peer
                ));
                Err(Stop::Clean)
            }
            (other, _) => Err(Stop::Fatal {
                fes: tcp::FES_INVALID_HEADER,
                fei: 0,
                why: format!("a host does not send PDU type {:#04x}", other.pdu_type()),
            }),
        };
        if let Err(s) = step {
            break s;
        }
    };
    if let Stop::Fatal { fes, fei, why } = stop {
        c.shared
            .stats
            .protocol_errors
            .fetch_add(1, Ordering::Relaxed);
        c.shared.log(format_args!(
            "{}: protocol error, closing the connection: {why}",
            c.peer
        ));
        let _ = c.tx.send(Out::Term { fes, fei });
    } else {
        let _ = c.stream.shutdown(Shutdown::Read);
    }
    c.leave();
    drop(c);
    let _ = w.join();
}

/// ICReq in, ICResp out: the connection's digests.
fn handshake(
    r: &mut BufReader<TcpStream>,
    w: &mut BufWriter<TcpStream>,
    shared: &Shared,
) -> Result<Digests, String> {
    let (pdu, _) = wire::read_pdu(r, Digests::default(), 128).map_err(|e| e.to_string())?;
    let Pdu::IcReq {
        pfv, hpda, digests, ..
    } = pdu
    else {
        let _ = wire::write_pdu(
            w,
            &Pdu::TermReq {
                from_host: false,
                fes: tcp::FES_SEQUENCE,
                fei: 0,
            },
            Digests::default(),
            &[],
        );
        let _ = w.flush();
        return Err(format!(
            "first PDU is type {:#04x}, not ICReq",
            pdu.pdu_type()
        ));
    };
    if pfv != 0 || hpda != 0 {
        let _ = wire::write_pdu(
            w,
            &Pdu::TermReq {
                from_host: false,
                fes: tcp::FES_UNSUPPORTED,
                fei: if pfv != 0 { 8 } else { 10 },
            },
            Digests::default(),
            &[],
        );
        let _ = w.flush();
        return Err(format!(
            "ICReq PFV {pfv} / HPDA {hpda} not supported (0 / 0 are)"
        ));
    }
    let resp = Pdu::IcResp {
        pfv: 0,
        cpda: 0,
        digests,
        maxdata: shared.cfg.max_h2c_data,
    };
    wire::write_pdu(w, &resp, Digests::default(), &[]).map_err(|e| e.to_string())?;
    w.flush().map_err(|e| e.to_string())?;
    Ok(digests)
}

/// The queue counters the writer reads.
struct Queue {
    sqsize: Arc<AtomicU32>,
    consumed: Arc<AtomicU32>,
    outstanding: Arc<AtomicU32>,
}

fn write_loop(mut w: BufWriter<TcpStream>, rx: Receiver<Out>, d: Digests, q: &Queue) {
    let fin = |w: &mut BufWriter<TcpStream>| {
        let _ = w.flush();
        let _ = w.get_ref().shutdown(Shutdown::Both);
    };
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(out) = next.take() {
            let r = match out {
                Out::Resp(mut cqe, data) => {
                    // Counted as answered before the host can see it, so
                    // that its next command never looks like one too many.
                    q.outstanding.fetch_sub(1, Ordering::Relaxed);
                    let mut r = Ok(());
                    for (i, chunk) in data.chunks(C2H_CHUNK).enumerate() {
                        let p = Pdu::C2HData {
                            cccid: cqe.cid,
                            datao: (i * C2H_CHUNK) as u32,
                            datal: chunk.len() as u32,
                            last: (i + 1) * C2H_CHUNK >= data.len(),
                            success: false,
                        };
                        r = r.and_then(|()| wire::write_pdu(&mut w, &p, d, chunk));
                    }
                    let entries = q.sqsize.load(Ordering::Relaxed) + 1;
                    cqe.sq_head = (q.consumed.load(Ordering::Relaxed) % entries) as u16;
                    r.and_then(|()| wire::write_pdu(&mut w, &Pdu::CapsuleResp(cqe), d, &[]))
                }
                Out::R2T { cccid, ttag, len } => wire::write_pdu(
                    &mut w,
                    &Pdu::R2T {
                        cccid,
                        ttag,
                        r2to: 0,
                        r2tl: len,
                    },
                    d,
                    &[],
                ),
                Out::Term { fes, fei } => {
                    let p = Pdu::TermReq {
                        from_host: false,
                        fes,
                        fei,
                    };
                    let _ = wire::write_pdu(&mut w, &p, d, &[]);
                    fin(&mut w);
                    return;
                }
            };
            if r.is_err() {
                fin(&mut w);
                return;
            }
            next = rx.try_recv().ok();
        }
        if w.flush().is_err() {
            fin(&mut w);
            return;
        }
    }
    fin(&mut w);
}

/// Hands a completion to the writer: read data only with success.
fn complete(tx: &Sender<Out>, shared: &Shared, cqe: Cqe, data: Vec<u8>) {
    shared.stats.commands.fetch_add(1, Ordering::Relaxed);
    let data = if cqe.status().is_success() {
        data
    } else {
        Vec::new()
    };
    let _ = tx.send(Out::Resp(cqe, data));
}

fn fatal(fes: u16, why: impl Into<String>) -> Stop {
    Stop::Fatal {
        fes,
        fei: 0,
        why: why.into(),
    }
}

impl Conn {
    /// Completes a command with `status`, dwords 0 and 1, and read data.
    pub(crate) fn respond(&self, sqe: &Sqe, status: Status, dw0: u32, dw1: u32, data: Vec<u8>) {
        let mut cqe = Cqe::new(sqe.cid(), self.qid.unwrap_or(0), 0, status, dw0, false);
        cqe.dw1 = dw1;
        complete(&self.tx, &self.shared, cqe, data);
    }

    /// Completes with a status and nothing else.
    /// The address the host reached this target at.
    pub(crate) fn local_addr(&self) -> Option<SocketAddr> {
        self.stream.local_addr().ok()
    }

    pub(crate) fn status(&self, sqe: &Sqe, status: Status) {
        self.respond(sqe, status, 0, 0, Vec::new());
    }

    /// Sends a command to the firmware; `patch` may change the result
    /// before it goes back (Identify's fabrics fields).
    pub(crate) fn to_board(
        &self,
        admin: bool,
        mut sqe: Sqe,
        payload: Payload,
        patch: Option<Patch>,
    ) {
        let host_sqe = sqe;
        sqe.cdw0 &= !(0b11 << 14);
        sqe.prp1 = 0;
        sqe.prp2 = 0;
        let tx = self.tx.clone();
        let shared = self.shared.clone();
        let qid = self.qid.unwrap_or(0);
        let reply = Box::new(move |mut res: IoResult| {
            if let Some(p) = patch {
                p(&mut res);
            }
            let mut cqe = res.cqe;
            cqe.cid = host_sqe.cid();
            cqe.sq_id = qid;
            cqe.status &= !1;
            complete(&tx, &shared, cqe, res.data);
        });
        self.shared
            .stats
            .firmware_commands
            .fetch_add(1, Ordering::Relaxed);
        let job = Job {
            admin,
            req: IoRequest {
                sqe,
                data: payload.into_io(),
            },
            reply,
        };
        if !self.shared.board.send(job) {
            self.status(&host_sqe, Status::INTERNAL_ERROR);
        }
    }

    fn in_capsule_limit(&self) -> usize {
        match self.qid {
            Some(q) if q > 0 => self.shared.cfg.in_capsule as usize,
            _ => ADMIN_IN_CAPSULE,
        }
    }

    /// Counts a command capsule in: a host keeps at most its queue's
    /// entries outstanding (before Connect: the Connect itself); more is a
    /// protocol violation that would let one host hold unbounded memory.
    fn admit(&mut self) -> Result<(), Stop> {
        self.consumed.fetch_add(1, Ordering::Relaxed);
        let limit = match self.qid {
            Some(_) => self.sqsize.load(Ordering::Relaxed) + 1,
            None => 1,
        };
        if self.outstanding.fetch_add(1, Ordering::Relaxed) >= limit {
            return Err(fatal(
                tcp::FES_DATA_LIMIT,
                format!("more than {limit} commands outstanding on a {limit}-entry queue"),
            ));
        }
        Ok(())
    }

    /// A command capsule whose in-capsule data failed its digest: it
    /// fails with a transient transport error, unexecuted.
    fn command_lost_data(&mut self, sqe: Sqe) -> Result<(), Stop> {
        self.admit()?;
        self.status(&sqe, Status::TRANSIENT_TRANSPORT_ERROR);
        Ok(())
    }

    /// A command capsule and its in-capsule data.
    fn command(&mut self, sqe: Sqe, data: Vec<u8>) -> Result<(), Stop> {
        self.admit()?;
        let fabric = sqe.opcode() == fabrics::OPCODE;
        let writes = if fabric {
            FabricsCmd::fctype(&sqe) & 1 == 1
        } else {
            sqe.opcode().0 & 1 == 1
        };
        let sgl = SglDesc::of(&sqe);
        if !data.is_empty() {
            if data.len() > self.in_capsule_limit() {
                return Err(fatal(
                    tcp::FES_DATA_LIMIT,
                    format!("{} bytes of in-capsule data", data.len()),
                ));
            }
            if sgl.kind != SGL_IN_CAPSULE || sgl.addr != 0 || sgl.len as usize != data.len() {
                self.status(&sqe, fabrics::INVALID_SGL_DESCRIPTOR);
                return Ok(());
            }
            if !writes {
                self.status(&sqe, Status::INVALID_FIELD);
                return Ok(());
            }
            return self.execute(sqe, Payload::Out(data));
        }
        if sgl.len == 0 {
            return self.execute(sqe, Payload::None);
        }
        if sgl.kind != SGL_TRANSPORT || sqe.psdt() != 1 {
            self.status(&sqe, fabrics::INVALID_SGL_DESCRIPTOR);
            return Ok(());
        }
        let len = sgl.len as usize;
        if len > self.shared.mdts_bytes {
            self.status(&sqe, fabrics::DATA_SGL_LENGTH_INVALID);
            return Ok(());
        }
        if !writes {
            return self.execute(sqe, Payload::In(len));
        }
        if self.transfers.len() >= self.shared.cfg.queue_entries as usize {
            return Err(fatal(
                tcp::FES_DATA_LIMIT,
                "more writes waiting for data than the queue holds",
            ));
        }
        let ttag = self.next_ttag;
        self.next_ttag = self.next_ttag.wrapping_add(1);
        self.transfers.insert(
            ttag,
            Transfer {
                sqe,
                buf: Vec::with_capacity(len),
                len,
                lost: false,
            },
        );
        let _ = self.tx.send(Out::R2T {
            cccid: sqe.cid(),
            ttag,
            len: len as u32,
        });
        Ok(())
    }

    /// Host data for a write.
    fn h2c(
        &mut self,
        cccid: u16,
        ttag: u16,
        datao: u32,
        last: bool,
        data: Received,
    ) -> Result<(), Stop> {
        let n = match &data {
            Received::Data(d) => d.len(),
            Received::Lost(n) => *n,
        };
        let Some(t) = self.transfers.get_mut(&ttag) else {
            return Err(fatal(
                tcp::FES_INVALID_HEADER,
                format!("H2CData for transfer tag {ttag}, which has no R2T"),
            ));
        };
        if t.sqe.cid() != cccid {
            return Err(fatal(
                tcp::FES_INVALID_HEADER,
                "H2CData cid and tag disagree",
            ));
        }
        if n > self.shared.cfg.max_h2c_data as usize {
            return Err(fatal(tcp::FES_DATA_LIMIT, "H2CData above MAXH2CDATA"));
        }
        if datao as usize != t.buf.len() || t.buf.len() + n > t.len {
            return Err(fatal(
                tcp::FES_DATA_RANGE,
                format!("H2CData at {datao} (+{n}) of {}", t.len),
            ));
        }
        match data {
            Received::Data(d) => t.buf.extend_from_slice(&d),
            Received::Lost(n) => {
                t.lost = true;
                t.buf.resize(t.buf.len() + n, 0);
            }
        }
        let done = t.buf.len() == t.len;
        if done != last {
            return Err(fatal(
                tcp::FES_SEQUENCE,
                "LAST_PDU does not mark the end of the data",
            ));
        }
        if done && let Some(t) = self.transfers.remove(&ttag) {
            if t.lost {
                self.status(&t.sqe, Status::TRANSIENT_TRANSPORT_ERROR);
                return Ok(());
            }
            return self.execute(t.sqe, Payload::Out(t.buf));
        }
        Ok(())
    }

    fn execute(&mut self, sqe: Sqe, payload: Payload) -> Result<(), Stop> {
        if !self.may_run(&sqe)? {
            return Ok(());
        }
        if sqe.opcode() == fabrics::OPCODE {
            return self.fabrics(sqe, payload);
        }
        match self.qid {
            None => {
                self.status(&sqe, fabrics::COMMAND_SEQUENCE_ERROR);
                Ok(())
            }
            Some(0) => {
                admin::command(self, sqe, payload);
                Ok(())
            }
            Some(_) => {
                self.io(sqe, payload);
                Ok(())
            }
        }
    }

    /// The connection's controller, locked.
    pub(crate) fn with_ctrl<R>(&self, f: impl FnOnce(&mut Ctrl) -> R) -> Option<R> {
        let id = self.cntlid?;
        let mut reg = self.shared.registry.lock().ok()?;
        reg.ctrls.get_mut(&id).map(f)
    }

    fn fabrics(&mut self, sqe: Sqe, payload: Payload) -> Result<(), Stop> {
        let Ok(cmd) = FabricsCmd::parse(&sqe) else {
            self.status(&sqe, Status::INVALID_FIELD);
            return Ok(());
        };
        let admin = self.qid == Some(0);
        match cmd {
            FabricsCmd::Connect {
                recfmt,
                qid,
                sqsize,
                kato,
                ..
            } => self.connect(&sqe, recfmt, qid, sqsize, kato, payload),
            _ if self.qid.is_none() => self.status(&sqe, fabrics::COMMAND_SEQUENCE_ERROR),
            FabricsCmd::PropertyGet { wide, offset } if admin => {
                let shared = self.shared.clone();
                match self.with_ctrl(|c| controller::get(&shared, c, wide, offset)) {
                    Some(Ok(v)) => {
                        let (lo, hi) = fabrics::property_dwords(v);
                        self.respond(&sqe, Status::SUCCESS, lo, hi, Vec::new());
                    }
                    Some(Err(s)) => self.status(&sqe, s),
                    None => self.status(&sqe, fabrics::COMMAND_SEQUENCE_ERROR),
                }
            }
            FabricsCmd::PropertySet {
                wide,
                offset,
                value,
            } if admin => match self.with_ctrl(|c| controller::set(c, wide, offset, value)) {
                Some(Ok(())) => self.status(&sqe, Status::SUCCESS),
                Some(Err(s)) => self.status(&sqe, s),
                None => self.status(&sqe, fabrics::COMMAND_SEQUENCE_ERROR),
            },
            FabricsCmd::AuthSend { secp, spsp, tl } => {
                return self.auth_send(&sqe, secp, spsp, tl, payload);
            }
            FabricsCmd::AuthReceive { secp, spsp, al } => {
                return self.auth_receive(&sqe, secp, spsp, al, payload);
            }
            FabricsCmd::Disconnect if !admin => {
                self.status(&sqe, Status::SUCCESS);
                return Err(Stop::Clean);
            }
            _ => self.status(&sqe, Status::INVALID_FIELD),
        }
        Ok(())
    }

    fn connect(
        &mut self,
        sqe: &Sqe,
        recfmt: u16,
        qid: u16,
        sqsize: u16,
        kato: u32,
        payload: Payload,
    ) {
        let bad = |data: bool, offset: u16| (data, offset);
        let check = || -> Result<ConnectData, Result<(bool, u16), Status>> {
            if self.qid.is_some() {
                return Err(Err(fabrics::COMMAND_SEQUENCE_ERROR));
            }
            if recfmt != 0 {
                return Err(Err(fabrics::CONNECT_INCOMPATIBLE_FORMAT));
            }
            let Payload::Out(bytes) = &payload else {
                return Err(Ok(bad(false, 24)));
            };
            let cd = ConnectData::from_bytes(bytes).map_err(|_| Ok(bad(false, 24)))?;
            let discovery = cd.subnqn() == Some(proto::discovery::DISCOVERY_NQN);
            if cd.subnqn() != Some(self.shared.cfg.nqn.as_str()) && !discovery {
                return Err(Ok(bad(true, ConnectData::SUBNQN_OFFSET)));
            }
            // A discovery controller has no I/O queues.
            if discovery && qid != 0 {
                return Err(Ok(bad(false, 42)));
            }
            if cd.hostnqn().is_none_or(str::is_empty) {
                return Err(Ok(bad(true, ConnectData::HOSTNQN_OFFSET)));
            }
            let min = if qid == 0 { 31 } else { 1 };
            if sqsize < min || sqsize >= self.shared.cfg.queue_entries {
                return Err(Ok(bad(false, 44)));
            }
            Ok(cd)
        };
        let cd = match check() {
            Ok(cd) => cd,
            Err(Ok((data, offset))) => {
                return self.respond(
                    sqe,
                    fabrics::CONNECT_INVALID_PARAMETERS,
                    fabrics::invalid_parameter(data, offset),
                    0,
                    Vec::new(),
                );
            }
            Err(Err(s)) => return self.status(sqe, s),
        };
        let hostnqn = cd.hostnqn().unwrap_or_default().to_string();
        if let Some(allowed) = &self.shared.cfg.allowed_hosts
            && !allowed.contains(&hostnqn)
        {
            self.shared
                .stats
                .refused_hosts
                .fetch_add(1, Ordering::Relaxed);
            self.shared.log(format_args!(
                "{}: host {hostnqn} refused: not on the allow-list",
                self.peer
            ));
            return self.respond(sqe, fabrics::CONNECT_INVALID_HOST, 0, 0, Vec::new());
        }
        let discovery = cd.subnqn() == Some(proto::discovery::DISCOVERY_NQN);
        let chap = match self.authenticator(&hostnqn, discovery) {
            Ok(c) => c,
            Err(()) => return self.respond(sqe, fabrics::CONNECT_INVALID_HOST, 0, 0, Vec::new()),
        };
        let Ok(stream) = self.stream.try_clone() else {
            return self.status(sqe, Status::INTERNAL_ERROR);
        };
        let Ok(mut reg) = self.shared.registry.lock() else {
            return self.status(sqe, Status::INTERNAL_ERROR);
        };
        let cntlid = if qid == 0 {
            if cd.cntlid != fabrics::CNTLID_DYNAMIC && cd.cntlid != 0xFFFE {
                drop(reg);
                return self.respond(
                    sqe,
                    fabrics::CONNECT_INVALID_PARAMETERS,
                    fabrics::invalid_parameter(true, 16),
                    0,
                    Vec::new(),
                );
            }
            let ctrl = Ctrl {
                hostnqn: hostnqn.clone(),
                hostid: cd.hostid,
                cc: 0,
                csts: 0,
                kato: std::time::Duration::from_millis(u64::from(kato)),
                last_keep_alive: Instant::now(),
                io_queues: 0,
                connected: Default::default(),
                streams: vec![stream],
                discovery: cd.subnqn() == Some(proto::discovery::DISCOVERY_NQN),
            };
            match reg.create(ctrl) {
                Some(id) => id,
                None => {
                    drop(reg);
                    return self.status(sqe, fabrics::CONNECT_CONTROLLER_BUSY);
                }
            }
        } else {
            let Some(c) = reg.ctrls.get_mut(&cd.cntlid) else {
                drop(reg);
                return self.respond(
                    sqe,
                    fabrics::CONNECT_INVALID_PARAMETERS,
                    fabrics::invalid_parameter(true, 16),
                    0,
                    Vec::new(),
                );
            };
            let refusal = if c.hostnqn != hostnqn || c.hostid != cd.hostid {
                Some((fabrics::CONNECT_INVALID_HOST, 0))
            } else if !c.enabled() {
                Some((fabrics::COMMAND_SEQUENCE_ERROR, 0))
            } else if qid > c.io_queues || c.connected.contains(&qid) {
                Some((
                    fabrics::CONNECT_INVALID_PARAMETERS,
                    fabrics::invalid_parameter(false, 42),
                ))
            } else {
                None
            };
            if let Some((s, dw0)) = refusal {
                drop(reg);
                return self.respond(sqe, s, dw0, 0, Vec::new());
            }
            c.connected.insert(qid);
            c.streams.push(stream);
            cd.cntlid
        };
        drop(reg);
        self.qid = Some(qid);
        self.cntlid = Some(cntlid);
        self.hostnqn = Some(hostnqn.clone());
        self.sqsize.store(u32::from(sqsize), Ordering::Relaxed);
        self.shared.log(format_args!(
            "{}: {hostnqn} connected {} queue {qid} of controller {cntlid} ({} entries, KATO {kato} ms)",
            self.peer,
            if qid == 0 { "admin" } else { "I/O" },
            u32::from(sqsize) + 1,
        ));
        let atr = if chap.is_some() {
            fabrics::AUTHREQ_ATR
        } else {
            0
        };
        self.chap = chap;
        self.respond(sqe, Status::SUCCESS, u32::from(cntlid) | atr, 0, Vec::new());
    }

    /// An I/O queue command: namespace Read / Write / Flush here, vendor
    /// commands to the firmware.
    fn io(&mut self, sqe: Sqe, payload: Payload) {
        if self.with_ctrl(|c| c.enabled()) != Some(true) {
            return self.status(&sqe, fabrics::COMMAND_SEQUENCE_ERROR);
        }
        let op = sqe.opcode().0;
        if op >= 0x80 {
            return self.vendor(sqe, payload);
        }
        if !matches!(op, 0x00..=0x02) {
            return self.status(&sqe, Status::INVALID_OPCODE);
        }
        if sqe.nsid != 1 && !(op == 0 && sqe.nsid == u32::MAX) {
            return self.status(&sqe, Status::INVALID_NAMESPACE);
        }
        let slba = u64::from(sqe.cdw10) | u64::from(sqe.cdw11) << 32;
        let blocks = u64::from(sqe.cdw12 & 0xFFFF) + 1;
        let Ok(mut ns) = self.shared.namespace.lock() else {
            return self.status(&sqe, Status::INTERNAL_ERROR);
        };
        let r = match (op, payload) {
            (0x00, Payload::None) => Ok(Vec::new()),
            (0x01, Payload::Out(data)) => ns.write(slba, blocks, &data).map(|()| Vec::new()),
            (0x02, Payload::In(len)) => ns
                .check(slba, blocks, len)
                .and_then(|()| ns.read(slba, blocks)),
            _ => Err(fabrics::DATA_SGL_LENGTH_INVALID),
        };
        drop(ns);
        match r {
            Ok(data) => self.respond(&sqe, Status::SUCCESS, 0, 0, data),
            Err(s) => self.status(&sqe, s),
        }
    }

    /// A vendor I/O command: the host's sequence id becomes the board's
    /// (every InstCSD command names its sequence in cdw11); an id the host
    /// has not opened never reaches the board.
    fn vendor(&mut self, mut sqe: Sqe, payload: Payload) {
        let op = sqe.opcode();
        if op.vendor_io_name().is_none() {
            return self.to_board(false, sqe, payload, None);
        }
        let host = self.hostnqn.clone().unwrap_or_default();
        let seq = sqe.cdw11;
        let Ok(mut owners) = self.shared.owners.lock() else {
            return self.status(&sqe, Status::INTERNAL_ERROR);
        };
        let cfg = &self.shared.cfg;
        // The command's fields as the board will see them (PRPs, not an SGL).
        let mut pcie = sqe;
        pcie.cdw0 &= !(0b11 << 14);
        let (id, opened) = match (owners.get(&host, seq), op) {
            (Some(id), _) => (id, false),
            (None, Opcode::SEQ_OPEN) => {
                // KV bytes per token and layer: K and V (and K̃), fp16.
                let per_token = SeqOpen::parse(&pcie).map_or(0, |o| {
                    u64::from(o.kv_heads) * u64::from(o.head_dim) * 2 * (2 + u64::from(o.rotated))
                });
                let id = owners.bind(&host, seq);
                if !owners.open(&host, seq, per_token, cfg.max_sequences_per_host) {
                    owners.release(&host, seq);
                    drop(owners);
                    return self.over_quota(&sqe, &host, "sequences");
                }
                (id, true)
            }
            (None, _) => {
                drop(owners);
                return self.status(&sqe, Status::SEQ_NOT_OPEN);
            }
        };
        // Tokens this command appends, charged before it runs.
        let tokens = match op {
            Opcode::KV_APPEND => KvAppend::parse(&pcie).map_or(0, |a| u64::from(a.tokens)),
            Opcode::DECODE_SUBMIT => {
                DecodeSubmit::parse(&pcie).map_or(0, |d| u64::from(d.flags.append_kv()))
            }
            _ => 0,
        };
        let charged = if tokens > 0 {
            match owners.charge(&host, seq, tokens, cfg.max_kv_bytes_per_host) {
                Some(b) => b,
                None => {
                    drop(owners);
                    return self.over_quota(&sqe, &host, "KV bytes");
                }
            }
        } else {
            0
        };
        drop(owners);
        sqe.cdw11 = id;
        let closing = op == Opcode::SEQ_CLOSE;
        let patch: Option<Patch> = if opened || closing || charged > 0 {
            let shared = self.shared.clone();
            Some(Box::new(move |res: &mut IoResult| {
                let ok = res.cqe.status().is_success();
                let Ok(mut o) = shared.owners.lock() else {
                    return;
                };
                // A failed open frees the id; a successful close too.
                if (opened && !ok) || (closing && ok) {
                    o.release(&host, seq);
                } else if charged > 0 && !ok {
                    o.refund(&host, seq, charged);
                }
            }))
        } else {
            None
        };
        self.to_board(false, sqe, payload, patch)
    }

    /// A command refused because its host reached a quota.
    fn over_quota(&self, sqe: &Sqe, host: &str, what: &str) {
        self.shared
            .stats
            .quota_refusals
            .fetch_add(1, Ordering::Relaxed);
        self.shared.log(format_args!(
            "{}: host {host} at its quota of {what}: {} refused",
            self.peer,
            sqe.opcode().vendor_io_name().unwrap_or("command")
        ));
        self.status(sqe, Status::HOST_QUOTA);
    }

    /// The connection ends: an admin queue takes its controller with it.
    fn leave(&mut self) {
        let (Some(q), Some(id)) = (self.qid, self.cntlid) else {
            return;
        };
        let Ok(mut reg) = self.shared.registry.lock() else {
            return;
        };
        if q == 0 {
            reg.remove(id);
            self.shared.log(format_args!(
                "{}: controller {id} gone (admin queue closed)",
                self.peer
            ));
        } else if let Some(c) = reg.ctrls.get_mut(&id) {
            c.connected.remove(&q);
        }
    }
}
