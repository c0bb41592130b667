//! DH-HMAC-CHAP end to end on loopback: `instinfer serve`'s target with a
//! secrets file, our initiator authenticating to it (one way and both
//! ways), refused logins, and a queue that has not authenticated kept to
//! Connect and authentication.

use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use host_driver::csd::Csd;
use host_driver::transport::{SimTransport, TransportError};
use host_driver::vectors;
use nvme_tcp::auth::{Policy, Secret, Transform};
use nvme_tcp::target::TargetAuth;
use nvme_tcp::{NvmeTcp, Target, TargetConfig, TargetHandle, TcpUrl};
use proto::auth::{DhGroup, HashId};
use proto::fabrics::{self, ConnectData, FabricsCmd, SGL_IN_CAPSULE, SGL_TRANSPORT, SglDesc};
use proto::tcp::{Digests, Pdu};
use proto::{Cqe, Opcode, Sqe};

const UNI: &str = "nqn.2026-12.test:host-uni";
const BI: &str = "nqn.2026-12.test:host-bi";

fn secret(byte: u8, t: Transform) -> String {
    Secret::new(vec![byte; 32], t).unwrap().to_text()
}

/// A fresh owner-only file holding `text`.
pub(crate) fn secrets_file(text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "instinfer-auth-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("secrets");
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// The target's file: UNI (host secret only) and BI (both secrets).
fn target_file() -> PathBuf {
    secrets_file(&format!(
        "# hosts of the test\n{UNI} {}\n{BI} {} {}\n",
        secret(1, Transform::Sha256),
        secret(2, Transform::None),
        secret(3, Transform::Sha512),
    ))
}

fn target(policy: Policy) -> TargetHandle {
    let hosts = nvme_tcp::auth::load(&target_file()).unwrap();
    let cfg = TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        page_size: 4096,
        namespace_bytes: 16 << 20,
        log: false,
        auth: Some(TargetAuth { hosts, policy }),
        ..TargetConfig::default()
    };
    Target::bind(cfg).expect("bind").spawn().expect("spawn")
}

fn url(t: &TargetHandle, host: &str, secrets: Option<&PathBuf>) -> TcpUrl {
    let mut u = TcpUrl::parse(&t.url()).unwrap();
    u.hostnqn = Some(host.to_string());
    u.secrets = secrets.cloned();
    u
}

#[test]
fn authenticated_hosts_run_the_vectors_both_ways() {
    let policies = [
        (HashId::Sha256, DhGroup::Ffdhe2048),
        (HashId::Sha512, DhGroup::Null),
    ];
    for (hash, group) in policies {
        let t = target(Policy {
            hashes: vec![hash],
            groups: vec![group],
        });
        // Each host reads its own line from the same file.
        let file = target_file();
        for host in [UNI, BI] {
            let tcp = NvmeTcp::connect(&url(&t, host, Some(&file))).expect("authenticated connect");
            let mut csd = Csd::new(tcp).expect("identify");
            let got = vectors::run(&mut csd).expect("vectors");
            let mut sim = Csd::new(SimTransport::new(4096).unwrap()).unwrap();
            let want = vectors::run(&mut sim).unwrap();
            assert_eq!(vectors::first_difference(&got, &want), None, "{host}");
        }
        let s = t.stats();
        // Admin and I/O queue of each host.
        assert_eq!(s.authentications.load(Ordering::Relaxed), 4);
        assert_eq!(s.auth_failures.load(Ordering::Relaxed), 0);
        assert_eq!(s.auth_required.load(Ordering::Relaxed), 0);
    }
}

fn refused(r: Result<NvmeTcp, TransportError>) -> String {
    r.map(|_| ()).expect_err("must be refused").to_string()
}

#[test]
fn wrong_missing_and_unknown_secrets_are_refused() {
    let t = target(Policy::default());
    // A wrong host secret.
    let wrong = secrets_file(&format!("{UNI} {}\n", secret(9, Transform::Sha256)));
    let e = refused(NvmeTcp::connect(&url(&t, UNI, Some(&wrong))));
    assert!(e.contains("refused by the controller"), "{e}");
    // The right host secret, but a stale controller secret: the host
    // catches the controller.
    let stale = secrets_file(&format!(
        "{BI} {} {}\n",
        secret(2, Transform::None),
        secret(4, Transform::Sha512)
    ));
    let e = refused(NvmeTcp::connect(&url(&t, BI, Some(&stale))));
    assert!(e.contains("controller's response is wrong"), "{e}");
    // No secret at all.
    let e = refused(NvmeTcp::connect(&url(&t, UNI, None)));
    assert!(e.contains("requires authentication"), "{e}");
    // A host the file does not name.
    let other = secrets_file(&format!(
        "nqn.2026-12.test:stranger {}\n",
        secret(1, Transform::None)
    ));
    let e = refused(NvmeTcp::connect(&url(
        &t,
        "nqn.2026-12.test:stranger",
        Some(&other),
    )));
    assert!(e.contains("may not use"), "{e}");
    // A secrets file others can read is refused before anything is sent.
    let loose = secrets_file(&format!("{UNI} {}\n", secret(1, Transform::Sha256)));
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let e = refused(NvmeTcp::connect(&url(&t, UNI, Some(&loose))));
    assert!(e.contains("chmod 600"), "{e}");
    let s = t.stats();
    assert_eq!(s.auth_failures.load(Ordering::Relaxed), 2);
    assert_eq!(s.refused_hosts.load(Ordering::Relaxed), 1);
    // The stale host proved itself but never sent Success2.
    assert_eq!(s.authentications.load(Ordering::Relaxed), 0);
    // The target still serves a host that holds its secret.
    let tcp = NvmeTcp::connect(&url(&t, UNI, Some(&target_file()))).expect("connect");
    Csd::new(tcp).expect("identify");
}

/// A raw queue: ICReq, then commands with in-capsule data.
struct Raw {
    s: TcpStream,
    cid: u16,
}

impl Raw {
    fn open(t: &TargetHandle) -> Self {
        Self {
            s: super::fabric::raw(t),
            cid: 0,
        }
    }

    /// Sends `sqe` with `data` in the capsule (or asks for `read` bytes);
    /// the response and any data.
    fn run(&mut self, mut sqe: Sqe, data: &[u8], read: u32) -> Option<(Cqe, Vec<u8>)> {
        self.cid += 1;
        sqe.set_cid(self.cid);
        let (len, kind) = if data.is_empty() {
            (read, SGL_TRANSPORT)
        } else {
            (data.len() as u32, SGL_IN_CAPSULE)
        };
        if len > 0 {
            SglDesc { addr: 0, len, kind }.put(&mut sqe);
        }
        nvme_tcp::wire::write_pdu(&mut self.s, &Pdu::CapsuleCmd(sqe), Digests::default(), data)
            .ok()?;
        let mut got = Vec::new();
        loop {
            let (p, d) = nvme_tcp::wire::read_pdu(&mut self.s, Digests::default(), 1 << 20).ok()?;
            match p {
                Pdu::CapsuleResp(cqe) => return Some((cqe, got)),
                Pdu::C2HData { .. } => got.extend_from_slice(&d),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    fn connect(&mut self, host: &str) -> Cqe {
        let data = ConnectData::new([5; 16], 0xFFFF, nvme_tcp::DEFAULT_NQN, host)
            .unwrap()
            .to_bytes();
        let sqe = FabricsCmd::Connect {
            recfmt: 0,
            qid: 0,
            sqsize: 31,
            cattr: 0,
            kato: 0,
        }
        .to_sqe();
        self.run(sqe, &data, 0).expect("connect answered").0
    }
}

#[test]
fn an_unauthenticated_queue_gets_nothing_but_connect_and_authentication() {
    use proptest::prelude::*;
    let t = target(Policy::default());
    let mut q = Raw::open(&t);
    let cqe = q.connect(UNI);
    assert!(cqe.status().is_success());
    assert_ne!(
        cqe.dw0 & fabrics::AUTHREQ_ATR,
        0,
        "the Connect response asks for authentication"
    );
    let auth_required = |r: Option<(Cqe, Vec<u8>)>| {
        let (cqe, data) = r.expect("answered");
        cqe.status().same_code(&fabrics::AUTHENTICATION_REQUIRED) && data.is_empty()
    };
    // Properties (enable!), Identify, Keep Alive, a vendor command.
    let prop = FabricsCmd::PropertySet {
        wide: false,
        offset: 0x14,
        value: 1,
    }
    .to_sqe();
    assert!(auth_required(q.run(prop, &[], 0)));
    let mut identify = Sqe::new(Opcode(0x06));
    identify.cdw10 = 1;
    assert!(auth_required(q.run(identify, &[], 4096)));
    assert!(auth_required(q.run(Sqe::new(Opcode(0x18)), &[], 0)));
    assert!(auth_required(q.run(Sqe::new(Opcode(0x81)), &[0; 64], 0)));
    // Any other command, with or without data, before any authentication
    // message or between garbage ones.
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
    let cmd = (
        any::<u8>(),
        any::<u8>(),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..80),
        any::<bool>(),
    );
    let q = std::cell::RefCell::new(q);
    let seen = std::cell::Cell::new(4u64);
    runner
        .run(&cmd, |(op, fctype, cdw10, data, auth_first)| {
            let q = &mut *q.borrow_mut();
            if auth_first {
                // A malformed authentication message first.
                let send = FabricsCmd::AuthSend {
                    secp: 0xE9,
                    spsp: [1, 1],
                    tl: data.len().max(1) as u32,
                };
                let mut d = data.clone();
                if d.is_empty() {
                    d.push(0xFF);
                }
                let _ = q.run(send.to_sqe(), &d, 0);
            }
            let mut sqe = Sqe::new(Opcode(op));
            if op == fabrics::OPCODE.0 {
                // Connect and the two authentication commands are the
                // ones a queue may send.
                let f = if matches!(fctype, 0x01 | 0x05 | 0x06) {
                    0x04
                } else {
                    fctype
                };
                sqe.nsid = u32::from(f);
            }
            sqe.cdw10 = cdw10;
            // Without data: a read-direction command asks for 512 bytes
            // back (a write-direction one would get an R2T for them).
            let dir = if op == fabrics::OPCODE.0 {
                sqe.nsid as u8
            } else {
                op
            };
            let read = if data.is_empty() && dir & 1 == 0 {
                512
            } else {
                0
            };
            match q.run(sqe, &data, read) {
                // The connection closed (a failed exchange ends it).
                None => {
                    *q = Raw::open(&t);
                    assert!(q.connect(UNI).status().is_success());
                }
                // Refused without running: Authentication Required, or a
                // malformed command's own error before it.
                Some((cqe, data)) => {
                    if cqe.status().same_code(&fabrics::AUTHENTICATION_REQUIRED) {
                        seen.set(seen.get() + 1);
                    }
                    prop_assert!(
                        !cqe.status().is_success() && data.is_empty(),
                        "{}",
                        cqe.status()
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    let s = t.stats();
    assert!(seen.get() > 20, "most random commands reach the gate");
    assert_eq!(s.auth_required.load(Ordering::Relaxed), seen.get());
    assert_eq!(s.authentications.load(Ordering::Relaxed), 0);
}
