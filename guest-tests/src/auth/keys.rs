//! The tests' fixed secrets in their `DHHC-1:` text form, the hosts that
//! use them, and the owner-only secrets file of our initiator and target.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use nvme_tcp::auth::{Secret, Transform};

/// A host: its NQN and the host ID the kernel host sends with it (the
/// kernel refuses one host ID under two NQNs, so each has its own).
#[derive(Clone, Copy)]
pub(crate) struct Host {
    pub(crate) nqn: &'static str,
    pub(crate) id: &'static str,
}

/// The host the target knows (the NQN of the other fabric tests).
pub(crate) const HOST: Host = Host {
    nqn: crate::fabric::HOSTNQN,
    id: "00000000-0000-4000-8000-0000000000aa",
};
/// A second known host (unidirectional in the secrets file).
pub(crate) const HOST2: Host = Host {
    nqn: "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000ab",
    id: "00000000-0000-4000-8000-0000000000ab",
};
/// A host the target does not know.
pub(crate) const STRANGER: Host = Host {
    nqn: "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000ee",
    id: "00000000-0000-4000-8000-0000000000ee",
};

/// A fixed secret of `len` (32, 48 or 64) bytes made from `seed`, in text
/// form.
pub(crate) fn secret(len: usize, seed: u8, transform: Transform) -> Result<String, String> {
    let key = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    Secret::new(key, transform)
        .map(|s| s.to_text())
        .map_err(|e| e.to_string())
}

/// A secrets file's line: the host, its secret, the controller's.
pub(crate) type Line<'a> = (Host, &'a str, Option<&'a str>);

/// Writes a secrets file (`HOSTNQN HOST_SECRET [CTRL_SECRET]` lines) with
/// `mode`.
pub(crate) fn write_file(path: &str, mode: u32, lines: &[Line<'_>]) -> Result<(), String> {
    let _ = std::fs::remove_file(path);
    let mut text = String::from("# host NQN, host secret, controller secret\n");
    for (h, host, ctrl) in lines {
        text.push_str(&format!("{} {host} {}\n", h.nqn, ctrl.unwrap_or("")));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{path}: {e}"))
}
