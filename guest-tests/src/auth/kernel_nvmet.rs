//! The kernel's host against the kernel's target, both with DH-HMAC-CHAP:
//! the guest's setup checked on its own. Unidirectional and bidirectional,
//! with and without a DH exchange, each connection reading the
//! namespace's pattern back; a wrong host secret, no secret, a wrong
//! controller secret and a host not allowed are refused by the connect.

use std::io::Read;
use std::time::Instant;

use nvme_tcp::auth::Transform;

use super::host::Connect;
use super::keys::{HOST, STRANGER, secret};
use super::kmsg::Kmsg;
use super::nvmet::{self, HostAuth};
use crate::fabric::{kernel_disconnect, namespaces};

/// The namespace's first blocks through the kernel host, against the
/// pattern nvmet's file holds.
fn read_pattern(inst: u32) -> Result<(), String> {
    let (blk, _) = namespaces(inst)?;
    let want = nvmet::pattern();
    let mut got = vec![0u8; want.len()];
    std::fs::File::open(&blk)
        .and_then(|mut f| f.read_exact(&mut got))
        .map_err(|e| format!("{}: {e}", blk.display()))?;
    if got != want {
        return Err(format!("{}: not the pattern nvmet holds", blk.display()));
    }
    Ok(())
}

/// The kernel's lines about authentication, for the log.
fn said(log: &mut Kmsg) -> String {
    let lines: Vec<String> = log
        .nvme()
        .into_iter()
        .filter(|l| l.contains("auth") || l.contains("DH-HMAC-CHAP") || l.contains("failed"))
        .collect();
    if lines.is_empty() {
        "nothing".into()
    } else {
        lines.join(" | ")
    }
}

/// The test.
pub(crate) fn kernel_host_on_nvmet() -> Result<(), String> {
    let mut log = Kmsg::open()?;
    let k32 = secret(32, 1, Transform::None)?;
    let k48 = secret(48, 2, Transform::Sha384)?;
    let k64 = secret(64, 3, Transform::Sha512)?;
    let c64 = secret(64, 4, Transform::Sha512)?;
    let c32 = secret(32, 5, Transform::Sha256)?;
    let accepted: [(&str, &str, &str, &str, Option<&str>); 4] = [
        ("unidirectional", "hmac(sha256)", "ffdhe2048", &k32, None),
        (
            "bidirectional",
            "hmac(sha384)",
            "ffdhe3072",
            &k48,
            Some(&c64),
        ),
        ("bidirectional", "hmac(sha512)", "null", &k64, Some(&c32)),
        (
            "bidirectional",
            "hmac(sha256)",
            "ffdhe2048",
            &k32,
            Some(&c64),
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
        let start = Instant::now();
        let c = Connect {
            host: HOST,
            port: nvmet::PORT,
            nqn: nvmet::NQN,
            secret: Some(host_key),
            ctrl_secret: ctrl_key,
        };
        let inst = c
            .connect()
            .map_err(|e| format!("{what} {hash} {dhgroup}: {e}; kernel: {}", said(&mut log)))?;
        let took = start.elapsed().as_secs_f64();
        read_pattern(inst)?;
        kernel_disconnect(inst)?;
        println!(
            "guest-test auth: kernel host on nvmet, {what} {hash} {dhgroup} (host secret {}…): connected in {took:.2} s, pattern read back; kernel: {}",
            &host_key[..10],
            said(&mut log)
        );
    }
    // nvmet now holds k32 and c64 with hmac(sha256), ffdhe2048.
    let wrong = secret(32, 9, Transform::None)?;
    let base = Connect {
        host: HOST,
        port: nvmet::PORT,
        nqn: nvmet::NQN,
        secret: Some(&k32),
        ctrl_secret: Some(&c64),
    };
    let refused = [
        (
            "a wrong host secret",
            Connect {
                secret: Some(&wrong),
                ..base
            },
        ),
        (
            "no secret",
            Connect {
                secret: None,
                ctrl_secret: None,
                ..base
            },
        ),
        (
            "a wrong controller secret",
            Connect {
                ctrl_secret: Some(&wrong),
                ..base
            },
        ),
        (
            "a host not allowed",
            Connect {
                host: STRANGER,
                ..base
            },
        ),
    ];
    for (what, c) in refused {
        let start = Instant::now();
        let why = c.refused().map_err(|e| format!("{what}: {e}"))?;
        println!(
            "guest-test auth: kernel host on nvmet with {what}: refused in {:.2} s ({why}); kernel: {}",
            start.elapsed().as_secs_f64(),
            said(&mut log)
        );
    }
    // The right secrets still connect after the refusals.
    let inst = base.connect()?;
    read_pattern(inst)?;
    kernel_disconnect(inst)
}
