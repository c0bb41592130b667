//! The kernel log since the last look: what the kernel's host and target
//! said about a connection (authenticated, or why they refused).

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

/// `/dev/kmsg`, read from where the last look ended.
pub(crate) struct Kmsg(std::fs::File);

impl Kmsg {
    /// From now on (earlier records are skipped).
    pub(crate) fn open() -> Result<Self, String> {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .map_err(|e| format!("/dev/kmsg: {e}"))?;
        f.seek(SeekFrom::End(0))
            .map_err(|e| format!("/dev/kmsg: {e}"))?;
        Ok(Self(f))
    }

    /// The NVMe records since the last look, each with its time since boot
    /// (`[s.ms]`).
    pub(crate) fn nvme(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.0.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // `level,seq,usec,flags;text`
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    let (prefix, text) = rec.split_once(';').unwrap_or(("", &rec));
                    let text = text.lines().next().unwrap_or("").trim();
                    let us: u64 = prefix
                        .split(',')
                        .nth(2)
                        .and_then(|u| u.parse().ok())
                        .unwrap_or(0);
                    if text.contains("nvme") {
                        lines.push(format!(
                            "[{}.{:03}] {text}",
                            us / 1_000_000,
                            us / 1000 % 1000
                        ));
                    }
                }
                // EPIPE: records were overwritten before they were read.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        lines
    }
}
