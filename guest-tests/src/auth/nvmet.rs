//! The kernel's target (`nvmet-tcp`) with authentication, configured in
//! configfs: a subsystem that admits only the hosts linked into its
//! `allowed_hosts` (`attr_allow_any_host=0`), each host entry holding its
//! DH-HMAC-CHAP secrets, hash and DH group, on 127.0.0.1:4422. Its
//! namespace is a tmpfs file whose first blocks hold a known pattern.

use super::keys::{HOST, Host};
use crate::fabric::write;

/// The subsystem.
pub(crate) const NQN: &str = "nqn.2026-11.io.instinfer:nvmet-auth";
/// Its port.
pub(crate) const PORT: u16 = 4422;
const CONFIG: &str = "/sys/kernel/config/nvmet";
const IMAGE: &str = "/tmp/nvmet-auth.img";

/// The namespace's first bytes.
pub(crate) fn pattern() -> Vec<u8> {
    (0..8192u32).map(|i| (i * 13 + 7) as u8).collect()
}

fn mkdir(path: &str) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("{path}: {e}"))
}

/// The subsystem, its namespace and port, and [`HOST`] allowed (without
/// secrets until [`set_host`]).
pub(crate) fn start() -> Result<(), String> {
    crate::sys::mount_configfs()?;
    let _ = std::fs::create_dir_all("/tmp");
    let mut img = pattern();
    img.resize(16 << 20, 0);
    std::fs::write(IMAGE, &img).map_err(|e| format!("{IMAGE}: {e}"))?;
    let sub = format!("{CONFIG}/subsystems/{NQN}");
    mkdir(&sub)?;
    write(&format!("{sub}/attr_allow_any_host"), "0")?;
    let ns = format!("{sub}/namespaces/1");
    mkdir(&ns)?;
    write(&format!("{ns}/device_path"), IMAGE)?;
    write(&format!("{ns}/buffered_io"), "1")?;
    write(&format!("{ns}/enable"), "1")?;
    let host = format!("{CONFIG}/hosts/{}", HOST.nqn);
    mkdir(&host)?;
    std::os::unix::fs::symlink(&host, format!("{sub}/allowed_hosts/{}", HOST.nqn))
        .map_err(|e| format!("allowing {}: {e}", HOST.nqn))?;
    let port = format!("{CONFIG}/ports/2");
    mkdir(&port)?;
    write(&format!("{port}/addr_trtype"), "tcp")?;
    write(&format!("{port}/addr_adrfam"), "ipv4")?;
    write(&format!("{port}/addr_traddr"), "127.0.0.1")?;
    write(&format!("{port}/addr_trsvcid"), &PORT.to_string())?;
    std::os::unix::fs::symlink(&sub, format!("{port}/subsystems/{NQN}"))
        .map_err(|e| format!("linking the subsystem to the port: {e}"))
}

/// What nvmet asks of one host.
pub(crate) struct HostAuth<'a> {
    /// `hmac(sha256)`, `hmac(sha384)` or `hmac(sha512)`.
    pub(crate) hash: &'a str,
    /// `null` or `ffdhe2048` … `ffdhe8192`.
    pub(crate) dhgroup: &'a str,
    /// The secret the host proves it holds.
    pub(crate) host_key: &'a str,
    /// The secret the controller proves it holds when the host asks
    /// (left as it was when `None`).
    pub(crate) ctrl_key: Option<&'a str>,
}

/// Sets `host`'s entry (no controller of it may be connected).
pub(crate) fn set_host(host: Host, a: &HostAuth<'_>) -> Result<(), String> {
    let dir = format!("{CONFIG}/hosts/{}", host.nqn);
    write(&format!("{dir}/dhchap_hash"), a.hash)?;
    write(&format!("{dir}/dhchap_dhgroup"), a.dhgroup)?;
    write(&format!("{dir}/dhchap_key"), a.host_key)?;
    if let Some(k) = a.ctrl_key {
        write(&format!("{dir}/dhchap_ctrl_key"), k)?;
    }
    Ok(())
}
