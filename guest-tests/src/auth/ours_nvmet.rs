//! Our initiator against the kernel's target with DH-HMAC-CHAP: the URL
//! names the host and its secrets file (`?hostnqn=…&secrets=…`, mode 0600,
//! `HOSTNQN HOST_SECRET [CTRL_SECRET]` lines), and when nvmet's Connect
//! response asks for authentication the initiator runs the exchange with
//! that host's line. Unidirectional and bidirectional, with and without a
//! DH group, each reading nvmet's pattern and writing a block back; a
//! wrong secret, a wrong controller secret, a host without a line and a
//! file others may read are refused.

use nvme_tcp::auth::Transform;
use nvme_tcp::{NvmeTcp, TcpUrl};

use host_driver::csd::{Drive, probe};
use host_driver::transport::{IoData, IoRequest, Transport};
use proto::{Opcode, Sqe};

use super::keys::{HOST, HOST2, Host, Line, secret, write_file};
use super::nvmet::{self, HostAuth};

const SECRETS: &str = "/tmp/host-secrets";

fn url(host: Host) -> Result<TcpUrl, String> {
    TcpUrl::parse(&format!(
        "tcp://127.0.0.1:{}/{}?hostnqn={}&secrets={SECRETS}",
        nvmet::PORT,
        nvmet::NQN,
        host.nqn
    ))
}

/// One command on the I/O queue; its data.
fn io<T: Transport>(t: &mut T, op: u8, lba: u64, data: IoData) -> Result<Vec<u8>, String> {
    let mut sqe = Sqe::new(Opcode(op));
    sqe.nsid = 1;
    sqe.cdw10 = lba as u32;
    sqe.cdw11 = (lba >> 32) as u32;
    t.submit(IoRequest { sqe, data })
        .map_err(|e| e.to_string())?;
    let (_, r) = t.reap().map_err(|e| e.to_string())?;
    if !r.cqe.status().is_success() {
        return Err(format!("nvmet {op:#04x}: {}", r.cqe.status()));
    }
    Ok(r.data)
}

/// Connects with the secrets file as it is; reads the pattern's first
/// block and writes then reads block 100.
fn session(host: Host) -> Result<(), String> {
    let t = NvmeTcp::connect(&url(host)?).map_err(|e| e.to_string())?;
    let (mut t, plain) = match probe(t).map_err(|e| e.to_string())? {
        Drive::Plain(t, p) => (t, p),
        Drive::InstCsd(_) => return Err("nvmet-tcp probed as an InstCSD".into()),
    };
    let lba = plain.lba_size;
    let got = io(&mut t, 0x02, 0, IoData::FromDevice(lba))?;
    if got[..] != nvmet::pattern()[..lba] {
        return Err("block 0 is not the pattern nvmet holds".into());
    }
    let data: Vec<u8> = (0..lba).map(|i| (i * 5 + 1) as u8).collect();
    io(&mut t, 0x01, 100, IoData::ToDevice(data.clone()))?;
    if io(&mut t, 0x02, 100, IoData::FromDevice(lba))? != data {
        return Err("block 100 read back differently".into());
    }
    Ok(())
}

/// The test.
pub(crate) fn our_initiator_on_nvmet() -> Result<(), String> {
    let k32 = secret(32, 11, Transform::None)?;
    let k48 = secret(48, 12, Transform::Sha384)?;
    let c64 = secret(64, 13, Transform::Sha512)?;
    let c32 = secret(32, 14, Transform::Sha256)?;
    let accepted: [(&str, &str, &str, &str, Option<&str>); 4] = [
        ("unidirectional", "hmac(sha256)", "ffdhe2048", &k32, None),
        ("unidirectional", "hmac(sha512)", "null", &k48, None),
        (
            "bidirectional",
            "hmac(sha384)",
            "ffdhe3072",
            &k48,
            Some(&c64),
        ),
        (
            "bidirectional",
            "hmac(sha256)",
            "ffdhe2048",
            &k32,
            Some(&c32),
        ),
    ];
    for (what, hash, dhgroup, host_key, ctrl_key) in accepted {
        nvmet::set_host(
            HOST,
            &HostAuth {
                hash,
                dhgroup,
                host_key,
                ctrl_key,
            },
        )?;
        write_file(SECRETS, 0o600, &[(HOST, host_key, ctrl_key)])?;
        let start = std::time::Instant::now();
        session(HOST).map_err(|e| format!("our initiator, {what} {hash} {dhgroup}: {e}"))?;
        println!(
            "guest-test auth: our initiator on nvmet, {what} {hash} {dhgroup}: authenticated, pattern read, block written back ({:.2} s)",
            start.elapsed().as_secs_f64()
        );
    }
    // nvmet now holds k32 and c32 with hmac(sha256), ffdhe2048.
    let wrong = secret(32, 19, Transform::None)?;
    let refused: [(&str, u32, Vec<Line<'_>>); 4] = [
        ("a wrong host secret", 0o600, vec![(HOST, &wrong, None)]),
        (
            "a wrong controller secret",
            0o600,
            vec![(HOST, &k32, Some(&wrong))],
        ),
        ("no line for the host", 0o600, vec![(HOST2, &k32, None)]),
        ("a file others may read", 0o644, vec![(HOST, &k32, None)]),
    ];
    for (what, mode, lines) in refused {
        write_file(SECRETS, mode, &lines)?;
        match session(HOST) {
            Ok(()) => return Err(format!("our initiator on nvmet with {what}: connected")),
            Err(e) => {
                println!("guest-test auth: our initiator on nvmet with {what}: refused ({e})")
            }
        }
    }
    Ok(())
}
