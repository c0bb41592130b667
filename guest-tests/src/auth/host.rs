//! The kernel's host with DH-HMAC-CHAP: `dhchap_secret=` (the host's
//! secret) and `dhchap_ctrl_secret=` (the controller's, which makes it
//! bidirectional) in the options written to `/dev/nvme-fabrics`.

use super::keys::Host;
use crate::fabric::{kernel_connect_opts, kernel_disconnect};

/// Where and how the kernel host connects.
#[derive(Clone, Copy)]
pub(crate) struct Connect<'a> {
    pub(crate) host: Host,
    pub(crate) port: u16,
    pub(crate) nqn: &'a str,
    /// The host's secret (none: no authentication offered).
    pub(crate) secret: Option<&'a str>,
    /// The controller's secret (bidirectional).
    pub(crate) ctrl_secret: Option<&'a str>,
}

impl Connect<'_> {
    fn options(&self) -> String {
        let mut o = format!(
            "nqn={},transport=tcp,traddr=127.0.0.1,trsvcid={},hostnqn={},hostid={},keep_alive_tmo=5",
            self.nqn, self.port, self.host.nqn, self.host.id
        );
        if let Some(s) = self.secret {
            o.push_str(&format!(",dhchap_secret={s}"));
        }
        if let Some(s) = self.ctrl_secret {
            o.push_str(&format!(",dhchap_ctrl_secret={s}"));
        }
        o
    }

    /// Connects; the controller instance number.
    pub(crate) fn connect(&self) -> Result<u32, String> {
        kernel_connect_opts(&self.options()).map_err(|e| format!("{}: {}", self.nqn, errno(&e)))
    }

    /// Expects the connect write to fail; what it failed with.
    pub(crate) fn refused(&self) -> Result<String, String> {
        match kernel_connect_opts(&self.options()) {
            Err(e) => Ok(errno(&e).to_owned()),
            Ok(inst) => {
                kernel_disconnect(inst)?;
                Err(format!("{} connected as nvme{inst}", self.host.nqn))
            }
        }
    }
}

/// The error's last part (the system's words), without the options that
/// hold the secrets.
fn errno(e: &str) -> &str {
    e.rsplit(": ").next().unwrap_or(e)
}
