//! The ioctl calls: the crate's only `unsafe`.
#![allow(unsafe_code)] // the ioctl calls

use std::os::fd::AsRawFd;

use crate::cmd::PassthruCmd;

/// `ioctl(fd, req, cmd)`: the NVMe status (≥ 0) or the OS error.
pub(crate) fn passthru(fd: &impl AsRawFd, req: u32, cmd: &mut PassthruCmd) -> std::io::Result<u32> {
    // A signal can interrupt the wait for the completion (EINTR): the
    // command is resubmitted, as the kernel documents for interrupted
    // passthrough.
    loop {
        match passthru_once(fd, req, cmd) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            r => return r,
        }
    }
}

fn passthru_once(fd: &impl AsRawFd, req: u32, cmd: &mut PassthruCmd) -> std::io::Result<u32> {
    // SAFETY: `cmd` is a valid, exclusively borrowed `nvme_passthru_cmd`
    // (layout asserted in `cmd.rs`) that outlives the call; its `addr` and
    // `data_len` describe a buffer the caller keeps alive and large enough
    // (see `Device::exec`); the kernel writes only `result` and the buffer.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as libc::Ioctl, core::ptr::from_mut(cmd)) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as u32)
    }
}

/// `ioctl(fd, NVME_IOCTL_ID)`: the namespace id of a namespace fd.
pub(crate) fn namespace_id(fd: &impl AsRawFd) -> std::io::Result<u32> {
    // SAFETY: NVME_IOCTL_ID takes no argument and only returns a value.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), crate::cmd::NVME_IOCTL_ID as libc::Ioctl) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as u32)
    }
}
