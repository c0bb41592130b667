//! NVMe/TCP end to end on loopback: `instinfer serve`'s target in a thread,
//! the host's `NvmeTcp` initiator in front of it, and the results compared
//! bit for bit with the simulated board reached directly.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use host_driver::csd::Csd;
use host_driver::transport::{IoData, IoRequest, SimTransport, Transport, TransportError};
use host_driver::vectors;
use nvme_tcp::initiator::TcpOptions;
use nvme_tcp::{NvmeTcp, Target, TargetConfig, TargetHandle, TcpUrl};
use proto::tcp::{Digests, Pdu};
use proto::{Opcode, Sqe, Status};

fn target(page_size: u32) -> TargetHandle {
    let cfg = TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        page_size,
        namespace_bytes: 64 << 20,
        log: false,
        ..TargetConfig::default()
    };
    Target::bind(cfg).expect("bind").spawn().expect("spawn")
}

fn url(t: &TargetHandle) -> TcpUrl {
    TcpUrl::parse(&t.url()).expect("url")
}

fn with_digests(header: bool, data: bool) -> TcpOptions {
    TcpOptions {
        digests: Digests { header, data },
        ..TcpOptions::default()
    }
}

#[test]
fn vectors_over_nvme_tcp_equal_the_simulated_board() {
    for (page_size, dig) in [(4096u32, (false, false)), (16384, (true, true))] {
        let t = target(page_size);
        let tcp = NvmeTcp::connect_with(&url(&t), &with_digests(dig.0, dig.1)).expect("connect");
        let mut csd = Csd::new(tcp).expect("identify over NVMe/TCP");
        let got = vectors::run(&mut csd).expect("vectors over NVMe/TCP");
        let mut sim = Csd::new(SimTransport::new(page_size).expect("sim")).expect("identify");
        let want = vectors::run(&mut sim).expect("vectors on the simulated board");
        assert_eq!(got.len(), 12);
        assert_eq!(
            vectors::first_difference(&got, &want),
            None,
            "page size {page_size}, digests {dig:?}"
        );
        assert!(t.stats().firmware_commands.load(Ordering::Relaxed) > 20);
        assert_eq!(t.stats().protocol_errors.load(Ordering::Relaxed), 0);
    }
}

fn rw(lba: u64, blocks: u32, write: bool) -> Sqe {
    let mut s = Sqe::new(Opcode(if write { 0x01 } else { 0x02 }));
    s.nsid = 1;
    s.cdw10 = lba as u32;
    s.cdw11 = (lba >> 32) as u32;
    s.cdw12 = blocks - 1;
    s
}

#[test]
fn namespace_data_crosses_in_capsule_and_through_r2t() {
    let t = target(4096);
    let mut tcp = NvmeTcp::connect(&url(&t)).expect("connect");
    let mut lba = 0u64;
    // One block, the in-capsule limit, above it, and many H2CData PDUs.
    for size in [512usize, 8192, 8704, 1 << 20] {
        let data: Vec<u8> = (0..size).map(|i| (i * 13 + size) as u8).collect();
        let blocks = (size / 512) as u32;
        // NVMe does not order commands: the read goes after the write's
        // completion.
        let w = tcp
            .submit(IoRequest {
                sqe: rw(lba, blocks, true),
                data: IoData::ToDevice(data.clone()),
            })
            .expect("submit write");
        let (c1, a) = tcp.reap().expect("write completes");
        let r = tcp
            .submit(IoRequest {
                sqe: rw(lba, blocks, false),
                data: IoData::FromDevice(size),
            })
            .expect("submit read");
        let (c2, b) = tcp.reap().expect("read completes");
        assert_eq!((c1, c2), (w, r));
        assert!(a.cqe.status().is_success(), "{}", a.cqe.status());
        assert!(b.cqe.status().is_success(), "{}", b.cqe.status());
        assert!(b.data == data, "{size} bytes read back differently");
        lba += u64::from(blocks);
    }
    // Past the end: LBA out of range, nothing moved.
    tcp.submit(IoRequest {
        sqe: rw((64 << 20) / 512 - 1, 2, false),
        data: IoData::FromDevice(1024),
    })
    .unwrap();
    let (_, res) = tcp.reap().unwrap();
    assert_eq!(res.cqe.status().sc, 0x80);
    assert!(res.data.is_empty());
    // A transfer length that disagrees with the block count.
    tcp.submit(IoRequest {
        sqe: rw(0, 2, false),
        data: IoData::FromDevice(512),
    })
    .unwrap();
    let (_, res) = tcp.reap().unwrap();
    assert_eq!(res.cqe.status(), proto::fabrics::DATA_SGL_LENGTH_INVALID);
}

#[test]
fn a_vendor_status_reaches_the_host_unchanged() {
    let t = target(4096);
    let mut tcp = NvmeTcp::connect(&url(&t)).expect("connect");
    let mut sim = SimTransport::new(4096).unwrap();
    // Fetch of a sequence that is not open: the firmware's vendor status.
    let fetch = proto::DecodeFetch {
        seq: 77,
        layer: 0,
        ndt: 1024,
    };
    let sqe = fetch.to_sqe();
    for tr in [&mut tcp as &mut dyn Transport, &mut sim] {
        tr.submit(IoRequest {
            sqe,
            data: IoData::FromDevice(4096),
        })
        .unwrap();
    }
    let (_, a) = tcp.reap().unwrap();
    let (_, b) = sim.reap().unwrap();
    assert_eq!(a.cqe.status(), b.cqe.status());
    assert_eq!(a.cqe.status().sct, Status::SCT_VENDOR);
    assert_eq!(a.cqe.status, b.cqe.status & !1, "every status bit kept");
    // Unknown I/O opcode below the vendor range: Invalid Opcode.
    tcp.submit(IoRequest {
        sqe: Sqe::new(Opcode(0x7C)),
        data: IoData::None,
    })
    .unwrap();
    assert_eq!(tcp.reap().unwrap().1.cqe.status(), Status::INVALID_OPCODE);
}

#[test]
fn connects_are_checked() {
    let t = target(4096);
    let wrong = TcpUrl {
        nqn: "nqn.2026-11.io.instinfer:other".into(),
        ..url(&t)
    };
    let e = NvmeTcp::connect(&wrong).unwrap_err().to_string();
    assert!(
        e.contains("0x10100"),
        "invalid SUBNQN at data offset 256: {e}"
    );
    assert!(e.contains("no subsystem of that NQN"), "{e}");
    let e = NvmeTcp::connect(&TcpUrl {
        addr: "127.0.0.1:1".into(),
        nqn: "x".into(),
        ..TcpUrl::default()
    })
    .unwrap_err();
    assert!(matches!(e, TransportError::Setup(_)), "{e}");
    // Several controllers at once, each its own queues.
    let a = NvmeTcp::connect(&url(&t)).unwrap();
    let b = NvmeTcp::connect(&url(&t)).unwrap();
    assert_ne!(a.cntlid(), b.cntlid());
}

#[test]
fn keep_alive_keeps_a_controller_and_its_absence_ends_it() {
    let t = target(4096);
    let o = TcpOptions {
        kato_ms: 400,
        timeout: Duration::from_secs(5),
        ..TcpOptions::default()
    };
    let mut alive = NvmeTcp::connect_with(&url(&t), &o).unwrap();
    let mut silent = NvmeTcp::connect_with(&url(&t), &o).unwrap();
    silent.stop_keep_alive();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(t.stats().keep_alives.load(Ordering::Relaxed) >= 2);
    assert_eq!(t.stats().keep_alive_expiries.load(Ordering::Relaxed), 1);
    let probe = |tr: &mut NvmeTcp| {
        tr.submit(IoRequest {
            sqe: rw(0, 1, false),
            data: IoData::FromDevice(512),
        })
        .and_then(|_| tr.reap())
    };
    assert!(probe(&mut alive).unwrap().1.cqe.status().is_success());
    let e = probe(&mut silent).unwrap_err();
    assert!(
        matches!(e, TransportError::DeviceFailed(_) | TransportError::Io(_)),
        "{e}"
    );
}

/// Opens a raw connection that has done ICReq / ICResp.
pub(crate) fn raw(t: &TargetHandle) -> TcpStream {
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = Pdu::IcReq {
        pfv: 0,
        hpda: 0,
        digests: Digests::default(),
        maxr2t: 0,
    };
    s.write_all(req.encode_header(Digests::default(), 0).as_bytes())
        .unwrap();
    let mut resp = [0u8; 128];
    s.read_exact(&mut resp).unwrap();
    assert_eq!(resp[0], proto::tcp::ICRESP);
    s
}

/// Reads until the target closes; true if it ended with a C2HTermReq or a
/// clean close (never hangs: the read timeout bounds it).
fn closes(mut s: TcpStream) -> bool {
    let mut all = Vec::new();
    match s.read_to_end(&mut all) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

#[test]
fn malformed_pdus_end_only_their_connection() {
    use proptest::prelude::*;
    let t = target(4096);
    let mut good = NvmeTcp::connect(&url(&t)).unwrap();
    let sqe = Sqe::new(Opcode(0x02));
    let capsule = Pdu::CapsuleCmd(sqe)
        .encode_header(Digests::default(), 0)
        .as_bytes()
        .to_vec();
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 48,
        ..Default::default()
    });
    let strategy = (
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 8..200),
        0usize..72,
        any::<u8>(),
    );
    runner
        .run(&strategy, |(after_ic, junk, at, flip)| {
            let mut s = if after_ic {
                raw(&t)
            } else {
                let s = TcpStream::connect(t.addr()).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s
            };
            // Either garbage, or a capsule with one byte changed that
            // makes its header invalid (type, length or offset).
            let bytes = if junk[0] % 2 == 0 {
                junk
            } else {
                let mut c = capsule.clone();
                c[at % 8] ^= flip | 1;
                c
            };
            let _ = s.write_all(&bytes);
            let _ = s.shutdown(std::net::Shutdown::Write);
            prop_assert!(closes(s));
            Ok(())
        })
        .unwrap();
    // The target still serves the connection made before, and new ones.
    good.submit(IoRequest {
        sqe: rw(0, 1, false),
        data: IoData::FromDevice(512),
    })
    .unwrap();
    assert!(good.reap().unwrap().1.cqe.status().is_success());
    assert!(NvmeTcp::connect(&url(&t)).is_ok());
    assert!(t.stats().protocol_errors.load(Ordering::Relaxed) > 0);
}

#[test]
fn concurrent_hosts_share_one_board() {
    let t = target(4096);
    let u = url(&t);
    let threads: Vec<_> = (0..3u64)
        .map(|i| {
            let u = u.clone();
            std::thread::spawn(move || {
                let mut tcp = NvmeTcp::connect(&u).unwrap();
                let data: Vec<u8> = (0..64 << 10).map(|j| (j as u64 * 7 + i) as u8).collect();
                let lba = i * 8 * 128;
                for round in 0..5u64 {
                    // Eight writes in flight, then eight reads.
                    for j in 0..8 {
                        tcp.submit(IoRequest {
                            sqe: rw(lba + j * 128, 128, true),
                            data: IoData::ToDevice(data.clone()),
                        })
                        .unwrap();
                    }
                    for _ in 0..8 {
                        assert!(tcp.reap().unwrap().1.cqe.status().is_success());
                    }
                    for j in 0..8 {
                        tcp.submit(IoRequest {
                            sqe: rw(lba + j * 128, 128, false),
                            data: IoData::FromDevice(64 << 10),
                        })
                        .unwrap();
                    }
                    for _ in 0..8 {
                        let r = tcp.reap().unwrap().1;
                        assert!(r.data == data, "host {i} round {round}");
                    }
                }
            })
        })
        .collect();
    for h in threads {
        h.join().expect("host thread");
    }
}

#[test]
fn a_decode_loop_over_two_targets_equals_two_simulated_boards() {
    use host_driver::array::CsdArray;
    let targets = [target(16384), target(16384)];
    let tcp: Vec<Csd<NvmeTcp>> = targets
        .iter()
        .map(|t| Csd::new(NvmeTcp::connect(&url(t)).unwrap()).unwrap())
        .collect();
    let got = vectors::decode_loop(CsdArray::new(tcp).unwrap(), 3, 200, 6).expect("over NVMe/TCP");
    let sims: Vec<Csd<SimTransport>> = (0..2)
        .map(|_| Csd::new(SimTransport::new(16384).unwrap()).unwrap())
        .collect();
    let want = vectors::decode_loop(CsdArray::new(sims).unwrap(), 3, 200, 6).expect("in process");
    assert_eq!(got.len(), 3 * 2 * 6 * 9 * 64);
    assert_eq!(got.len(), want.len());
    assert!(got.iter().any(|&x| x != 0.0));
    assert!(
        got.iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
    // Both targets served heads.
    for t in &targets {
        assert!(t.stats().firmware_commands.load(Ordering::Relaxed) > 30);
    }
}

#[test]
fn a_host_past_its_queue_size_or_the_connection_limit_is_cut_off() {
    let cfg = TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_connections: 3,
        log: false,
        ..TargetConfig::default()
    };
    let t = Target::bind(cfg).unwrap().spawn().unwrap();
    // Before Connect a queue holds one command: a write whose data never
    // comes stays outstanding, and a second command is one too many.
    let mut s = raw(&t);
    let mut sqe = Sqe::new(Opcode(0x01));
    proto::fabrics::SglDesc {
        addr: 0,
        len: 4096,
        kind: proto::fabrics::SGL_TRANSPORT,
    }
    .put(&mut sqe);
    let bytes = Pdu::CapsuleCmd(sqe).encode_header(Digests::default(), 0);
    for _ in 0..2 {
        s.write_all(bytes.as_bytes()).unwrap();
    }
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    // The first got its R2T, then a C2HTermReq ended the connection.
    assert_eq!(got[0], proto::tcp::R2T);
    assert_eq!(got[24], proto::tcp::C2H_TERM_REQ);
    assert_eq!(
        u16::from_le_bytes([got[32], got[33]]),
        proto::tcp::FES_DATA_LIMIT
    );
    // Three connections open: a fourth is closed at once.
    let held: Vec<_> = (0..3).map(|_| raw(&t)).collect();
    let mut extra = TcpStream::connect(t.addr()).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 1];
    assert!(matches!(extra.read(&mut buf), Ok(0) | Err(_)));
    assert_eq!(t.stats().refused_connections.load(Ordering::Relaxed), 1);
    drop(held);
}

/// A connection the target drops (here: keep-alive expired) fails what
/// was in flight loudly; the next command reconnects, and the host's
/// sequences on the target are still there.
#[test]
fn a_dropped_connection_reconnects_and_keeps_the_sequences() {
    use proto::{KvAppend, SeqOpen, SeqShape};
    let t = target(4096);
    let o = TcpOptions {
        kato_ms: 300,
        timeout: Duration::from_secs(5),
        ..TcpOptions::default()
    };
    let mut tcp = NvmeTcp::connect_with(&url(&t), &o).unwrap();
    let shape = SeqShape {
        layers: 1,
        kv_heads: 1,
        group: 1,
        head_dim: 64,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let run = |tcp: &mut NvmeTcp, sqe: Sqe, data: IoData| {
        tcp.submit(IoRequest { sqe, data })
            .and_then(|_| tcp.reap())
            .map(|(_, r)| r.cqe.status())
    };
    assert!(
        run(&mut tcp, SeqOpen::new(5, shape).to_sqe(), IoData::None)
            .unwrap()
            .is_success()
    );
    let append = |pos| KvAppend::new(5, 0, pos, 4, &shape).unwrap().to_sqe();
    let kv = IoData::ToDevice(vec![0x3c; 2 * 4 * 64 * 2]);
    assert!(run(&mut tcp, append(0), kv.clone()).unwrap().is_success());
    tcp.stop_keep_alive();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(t.stats().keep_alive_expiries.load(Ordering::Relaxed), 1);
    // The connection is gone: this command fails, loudly.
    assert!(run(&mut tcp, append(4), kv.clone()).is_err());
    // The next reconnects, as the same host: sequence 5 is still there.
    let s = run(&mut tcp, append(4), kv).unwrap();
    assert!(s.is_success(), "{s}");
    assert_eq!(tcp.reconnects(), 1);
}

/// `demo` on a remote drive reports the drive's own flash page size, not
/// the one asked for a simulated drive.
#[test]
fn demo_over_nvme_tcp_reports_the_remote_page_size() {
    use instinfer::device::DeviceSpec;
    use instinfer::run::demo::{DemoParams, run_demo};
    let t = target(16384);
    let p = DemoParams {
        layers: 1,
        seqs: 1,
        steps: 2,
        prompt: 40,
        devices: 1,
        page_size: 4096,
        device: DeviceSpec::parse(&t.url()).expect("device"),
        ..DemoParams::default()
    };
    let r = run_demo(&p).expect("demo over NVMe/TCP");
    assert!(r.rows.iter().all(|row| row.page_size == 16384));
    assert!(r.to_string().contains("16384 B pages"), "{r}");
}

/// A capsule whose in-capsule data fails its digest fails with a
/// transient transport error, unexecuted, and the same connection serves
/// the next command (here: the same Connect, sent intact).
#[test]
fn a_data_digest_error_fails_one_command_and_the_connection_goes_on() {
    use proto::fabrics::{ConnectData, FabricsCmd, SGL_IN_CAPSULE, SglDesc};
    let t = target(4096);
    let digests = Digests {
        header: true,
        data: true,
    };
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = Pdu::IcReq {
        pfv: 0,
        hpda: 0,
        digests,
        maxr2t: 0,
    };
    nvme_tcp::wire::write_pdu(&mut s, &req, Digests::default(), &[]).unwrap();
    let (resp, _) = nvme_tcp::wire::read_pdu(&mut s, Digests::default(), 128).unwrap();
    assert!(matches!(resp, Pdu::IcResp { digests: d, .. } if d == digests));
    let data = ConnectData::new(
        [7; 16],
        0xFFFF,
        nvme_tcp::DEFAULT_NQN,
        "nqn.2026-12.test:digest",
    )
    .unwrap()
    .to_bytes();
    // An admin-queue Connect for `data`, in the capsule or through R2T.
    let connect_sqe = |cid: u16, kind: u8| {
        let mut sqe = FabricsCmd::Connect {
            recfmt: 0,
            qid: 0,
            sqsize: 31,
            cattr: 0,
            kato: 0,
        }
        .to_sqe();
        sqe.set_cid(cid);
        SglDesc {
            addr: 0,
            len: data.len() as u32,
            kind,
        }
        .put(&mut sqe);
        sqe
    };
    let connect = |cid: u16| {
        let sqe = connect_sqe(cid, SGL_IN_CAPSULE);
        let mut bytes = Vec::new();
        nvme_tcp::wire::write_pdu(&mut bytes, &Pdu::CapsuleCmd(sqe), digests, &data).unwrap();
        bytes
    };
    let status_of = |s: &mut TcpStream| {
        let (p, _) = nvme_tcp::wire::read_pdu(s, digests, 4096).unwrap();
        match p {
            Pdu::CapsuleResp(cqe) => (cqe.cid, cqe.status()),
            other => panic!("expected a response, got {other:?}"),
        }
    };
    // One bit of the data flipped: the digest no longer matches.
    let mut bad = connect(1);
    let at = bad.len() - 10;
    bad[at] ^= 0x10;
    s.write_all(&bad).unwrap();
    let (cid, st) = status_of(&mut s);
    assert_eq!(cid, 1);
    assert!(st.same_code(&Status::TRANSIENT_TRANSPORT_ERROR), "{st}");
    assert!(!st.dnr);
    // The same command intact, on the same connection: connected.
    s.write_all(&connect(2)).unwrap();
    let (cid, st) = status_of(&mut s);
    assert_eq!((cid, st.is_success()), (2, true), "{st}");
    assert_eq!(t.stats().data_digest_errors.load(Ordering::Relaxed), 1);
    assert_eq!(t.stats().protocol_errors.load(Ordering::Relaxed), 0);
    // The same through R2T: a Connect whose data the target asks for, one
    // H2CData PDU with a corrupted digest: that Connect fails; the next one
    // (cid 5) is served on the same connection.
    let sqe = connect_sqe(4, proto::fabrics::SGL_TRANSPORT);
    nvme_tcp::wire::write_pdu(&mut s, &Pdu::CapsuleCmd(sqe), digests, &[]).unwrap();
    let (r2t, _) = nvme_tcp::wire::read_pdu(&mut s, digests, 4096).unwrap();
    let Pdu::R2T { cccid: 4, ttag, .. } = r2t else {
        panic!("expected an R2T for cid 4, got {r2t:?}");
    };
    let h2c = Pdu::H2CData {
        cccid: 4,
        ttag,
        datao: 0,
        datal: data.len() as u32,
        last: true,
    };
    let mut bytes = Vec::new();
    nvme_tcp::wire::write_pdu(&mut bytes, &h2c, digests, &data).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0x80;
    s.write_all(&bytes).unwrap();
    let (cid, st) = status_of(&mut s);
    assert_eq!(cid, 4);
    assert!(st.same_code(&Status::TRANSIENT_TRANSPORT_ERROR), "{st}");
    s.write_all(&connect(5)).unwrap();
    let (cid, st) = status_of(&mut s);
    // This connection's admin queue is connected already (cid 2): a second
    // Connect is a sequence error, answered — the connection still serves.
    assert_eq!(cid, 5, "{st}");
    assert_eq!(t.stats().data_digest_errors.load(Ordering::Relaxed), 2);
    // A header digest error still ends the connection.
    let mut bad_header = connect(3);
    bad_header[10] ^= 0x01;
    s.write_all(&bad_header).unwrap();
    assert!(closes(s));
    assert_eq!(t.stats().protocol_errors.load(Ordering::Relaxed), 1);
}

/// The discovery controller: `nvme discover`'s reads find the subsystem
/// at the address the host used, the entry's URL connects, and the
/// discovery controller serves nothing of the subsystem.
#[test]
fn discovery_finds_the_subsystem() {
    use nvme_tcp::initiator::discover;
    use proto::discovery::{DISCOVERY_NQN, SUBTYPE_CURRENT_DISCOVERY, SUBTYPE_NVM};
    let t = target(4096);
    let ports = discover(&t.addr().to_string(), &TcpOptions::default()).expect("discover");
    assert_eq!(ports.len(), 2, "{ports:?}");
    let nvm = ports
        .iter()
        .find(|p| p.subtype == SUBTYPE_NVM)
        .expect("the NVM subsystem");
    assert_eq!(nvm.subnqn, nvme_tcp::DEFAULT_NQN);
    assert_eq!(nvm.traddr, "127.0.0.1");
    assert_eq!(nvm.trsvcid, t.addr().port().to_string());
    assert!(
        ports
            .iter()
            .any(|p| p.subtype == SUBTYPE_CURRENT_DISCOVERY && p.subnqn == DISCOVERY_NQN)
    );
    // The entry's URL reaches an InstCSD.
    let tcp = NvmeTcp::connect(&TcpUrl::parse(&nvm.url()).unwrap()).expect("connect to the entry");
    assert!(Csd::new(tcp).is_ok());
    // The discovery NQN takes no I/O queue, and its controller runs no
    // subsystem command.
    let url = TcpUrl {
        addr: t.addr().to_string(),
        nqn: DISCOVERY_NQN.into(),
        ..TcpUrl::default()
    };
    let e = NvmeTcp::connect(&url).expect_err("no I/O queue on a discovery controller");
    assert!(
        e.to_string().contains("Number of Queues") || e.to_string().contains("Connect"),
        "{e}"
    );
    assert_eq!(t.stats().protocol_errors.load(Ordering::Relaxed), 0);
}

/// The allow-list refuses a host not on it; quotas refuse one host's
/// sequence or append past its share with HOST_QUOTA, and the other host
/// is untouched; closing frees the share.
#[test]
fn allow_list_and_host_quotas() {
    use proto::SeqShape;
    let (a, b, c) = (
        "nqn.2026-12.test:a",
        "nqn.2026-12.test:b",
        "nqn.2026-12.test:c",
    );
    // KV bytes per token and layer: 2 kv heads × 64 dims × 2 (K, V) × 2 B.
    let per_token = 2 * 64 * 2 * 2;
    let cfg = TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        page_size: 4096,
        namespace_bytes: 16 << 20,
        log: false,
        allowed_hosts: Some(vec![a.into(), b.into()]),
        max_sequences_per_host: Some(2),
        max_kv_bytes_per_host: Some(100 * per_token),
        ..TargetConfig::default()
    };
    let t = Target::bind(cfg).unwrap().spawn().unwrap();
    let host = |nqn: &str| TcpOptions {
        hostnqn: nqn.into(),
        ..TcpOptions::default()
    };
    let e = NvmeTcp::connect_with(&url(&t), &host(c)).expect_err("c is not on the list");
    assert!(e.to_string().contains("may not"), "{e}");
    assert_eq!(t.stats().refused_hosts.load(Ordering::Relaxed), 1);
    let mut ha = Csd::new(NvmeTcp::connect_with(&url(&t), &host(a)).unwrap()).unwrap();
    let mut hb = Csd::new(NvmeTcp::connect_with(&url(&t), &host(b)).unwrap()).unwrap();
    let shape = SeqShape {
        layers: 1,
        kv_heads: 2,
        group: 1,
        head_dim: 64,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let quota = |r: Result<(), host_driver::csd::CsdError>| match r {
        Err(host_driver::csd::CsdError::Status { status, .. }) => {
            status.same_code(&Status::HOST_QUOTA)
        }
        _ => false,
    };
    ha.open(1, shape).unwrap();
    ha.open(2, shape).unwrap();
    assert!(quota(ha.open(3, shape)), "a third sequence of a");
    hb.open(1, shape).unwrap();
    hb.open(2, shape).unwrap();
    let kv = |n: usize| vec![0x3c00u16; 2 * n * 64];
    ha.append(1, 0, 0, &kv(60), &kv(60)).unwrap();
    assert!(
        quota(ha.append(2, 0, 0, &kv(41), &kv(41))),
        "101 tokens of a"
    );
    assert_eq!(t.host_usage(a), (2, 60 * per_token));
    // b's share is its own: a full 100 tokens.
    hb.append(1, 0, 0, &kv(100), &kv(100)).unwrap();
    assert_eq!(t.host_usage(b), (2, 100 * per_token));
    // Closing frees a's share: now 40 more fit, and a third sequence.
    ha.close(1).unwrap();
    ha.append(2, 0, 0, &kv(100), &kv(100)).unwrap();
    ha.open(3, shape).unwrap();
    assert_eq!(t.host_usage(a), (2, 100 * per_token));
    assert_eq!(t.stats().quota_refusals.load(Ordering::Relaxed), 2);
    // b's data was never touched: a decode over its 100 tokens works.
    let q = vec![0x3c00u16; 2 * 64];
    let ticket = hb
        .submit_decode(1, 0, 99, &q, None, attention::shape::Method::Dense)
        .unwrap();
    let out = hb.fetch(ticket).unwrap();
    assert_eq!(out.report.tokens_attended, 100);
}
