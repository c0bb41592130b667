//! The kernel's host against `instinfer serve --auth-secrets` (with
//! `--dhchap-groups` / `--dhchap-hashes`, the controller's preferences):
//! the end-to-end comparisons of the fabric test over a bidirectionally
//! authenticated connection, a unidirectional host, other preferences; a
//! wrong host or controller secret, no secret, a host not in the file and
//! a secret the file no longer holds (stale, after the file changed and
//! the target restarted) are refused by the connect.

use std::process::Child;

use host_driver::transport::{LinuxNvme, SimTransport, UringNvme};
use nvme_linux::Device;
use nvme_tcp::auth::Transform;

use super::host::Connect;
use super::keys::{HOST, HOST2, STRANGER, secret, write_file};
use super::kmsg::Kmsg;
use crate::fabric::{
    NQN, compare, kernel_disconnect, namespaces, start_target_with, vendor_status,
};

const SECRETS: &str = "/tmp/secrets";

/// Runs `f` with `instinfer serve` using the secrets file and the
/// preferences; stops the target whatever `f` returns.
fn with_target(
    groups: &str,
    hashes: &str,
    f: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let mut target: Child = start_target_with(&[
        "--auth-secrets",
        SECRETS,
        "--dhchap-groups",
        groups,
        "--dhchap-hashes",
        hashes,
    ])?;
    let r = f();
    let _ = target.kill();
    let _ = target.wait();
    r
}

fn sim() -> Result<SimTransport, String> {
    SimTransport::new(16384).map_err(|e| e.to_string())
}

/// Connects, runs a vendor command through the kernel, disconnects.
fn quick(label: &str, c: &Connect<'_>) -> Result<(), String> {
    let inst = c.connect().map_err(|e| format!("{label}: {e}"))?;
    let (_, chr) = namespaces(inst)?;
    vendor_status(label, &chr)?;
    kernel_disconnect(inst)
}

fn refused(label: &str, c: &Connect<'_>, log: &mut Kmsg) -> Result<(), String> {
    let why = c.refused().map_err(|e| format!("{label}: {e}"))?;
    println!(
        "guest-test auth: kernel host on instinfer serve with {label}: refused ({why}); kernel: {}",
        log.nvme().join(" | ")
    );
    Ok(())
}

/// The test.
pub(crate) fn kernel_host_on_our_target() -> Result<(), String> {
    let mut log = Kmsg::open()?;
    let k48 = secret(48, 21, Transform::Sha384)?;
    let c32 = secret(32, 22, Transform::None)?;
    let k64 = secret(64, 23, Transform::Sha512)?;
    let wrong = secret(48, 29, Transform::Sha384)?;
    write_file(
        SECRETS,
        0o600,
        &[(HOST, &k48, Some(&c32)), (HOST2, &k64, None)],
    )?;
    let both = Connect {
        host: HOST,
        port: 4420,
        nqn: NQN,
        secret: Some(&k48),
        ctrl_secret: Some(&c32),
    };
    let one = Connect {
        host: HOST2,
        secret: Some(&k64),
        ctrl_secret: None,
        ..both
    };
    with_target("ffdhe2048,null", "sha256,sha384", || {
        let inst = both.connect()?;
        let (_, chr) = namespaces(inst)?;
        let ioctl = LinuxNvme::new(Device::open(&chr).map_err(|e| e.to_string())?);
        compare("auth nvme-tcp (ioctl, bidirectional)", ioctl, sim()?)?;
        let uring = UringNvme::open(&chr).map_err(|e| e.to_string())?;
        compare("auth nvme-tcp (io_uring, bidirectional)", uring, sim()?)?;
        vendor_status("auth nvme-tcp", &chr)?;
        kernel_disconnect(inst)?;
        let inst = one.connect()?;
        let (_, chr) = namespaces(inst)?;
        let ioctl = LinuxNvme::new(Device::open(&chr).map_err(|e| e.to_string())?);
        compare("auth nvme-tcp (ioctl, unidirectional)", ioctl, sim()?)?;
        kernel_disconnect(inst)?;
        for (label, c) in [
            (
                "a wrong host secret",
                Connect {
                    secret: Some(&wrong),
                    ..both
                },
            ),
            (
                "no secret",
                Connect {
                    secret: None,
                    ctrl_secret: None,
                    ..both
                },
            ),
            (
                "a wrong controller secret",
                Connect {
                    ctrl_secret: Some(&wrong),
                    ..both
                },
            ),
            (
                "a host not in the file",
                Connect {
                    host: STRANGER,
                    ..both
                },
            ),
        ] {
            refused(label, &c, &mut log)?;
        }
        Ok(())
    })?;
    // Other preferences: the controller picks among what the host offers.
    with_target("null,ffdhe3072", "sha512", || {
        quick("auth nvme-tcp (null group first, sha512)", &both)?;
        quick("auth nvme-tcp (unidirectional, sha512)", &one)
    })?;
    // The host's secret changes in the file: the old one is stale.
    let k48_new = secret(48, 24, Transform::Sha384)?;
    write_file(SECRETS, 0o600, &[(HOST, &k48_new, Some(&c32))])?;
    with_target("ffdhe2048", "sha256", || {
        refused("a stale secret", &both, &mut log)?;
        quick(
            "auth nvme-tcp (the new secret)",
            &Connect {
                secret: Some(&k48_new),
                ..both
            },
        )
    })?;
    println!(
        "guest-test auth: kernel host on instinfer serve --auth-secrets: bidirectional and unidirectional, two preference lists, wrong / missing / stale secrets and an unknown host refused"
    );
    Ok(())
}
