//! PID 1's system calls: mounts, module loading, and QEMU's exit port. The
//! crate's only `unsafe`.
#![allow(unsafe_code)] // system calls and port I/O through libc

use std::ffi::CString;
use std::os::fd::AsRawFd;

fn c(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// Mounts proc, sysfs and devtmpfs.
pub(crate) fn mount_basics() -> Result<(), String> {
    for (src, dir, fs) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
    ] {
        let _ = std::fs::create_dir_all(dir);
        let (src_c, dir_c, fs_c) = (c(src), c(dir), c(fs));
        // SAFETY: three valid NUL-terminated strings that outlive the call,
        // no data argument.
        let r = unsafe {
            libc::mount(
                src_c.as_ptr(),
                dir_c.as_ptr(),
                fs_c.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EBUSY) {
                return Err(format!("mount {dir}: {e}"));
            }
        }
    }
    Ok(())
}

/// Loads a kernel module file.
pub(crate) fn load_module(path: &str) -> Result<(), String> {
    load_module_with(path, "")
}

/// Unloads module `name` (`rmmod`).
pub(crate) fn unload_module(name: &str) -> Result<(), String> {
    let n = c(name);
    // SAFETY: delete_module(name, flags) with a NUL-terminated name.
    let r = unsafe { libc::syscall(libc::SYS_delete_module, n.as_ptr(), libc::O_NONBLOCK) };
    if r != 0 {
        return Err(format!(
            "unload {name}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Loads a kernel module file with `params` (`name=value …`).
pub(crate) fn load_module_with(path: &str, params: &str) -> Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let params = c(params);
    // SAFETY: finit_module(fd, params, flags) with an open module file and
    // a NUL-terminated parameter string.
    let r = unsafe { libc::syscall(libc::SYS_finit_module, f.as_raw_fd(), params.as_ptr(), 0) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(format!("load {path}: {e}"));
        }
    }
    Ok(())
}

/// Ends QEMU through `isa-debug-exit` at port 0xf4 (0x10 pass, 0x11 fail);
/// powers off if the port is not there.
pub(crate) fn exit_qemu(ok: bool) -> ! {
    let code: u8 = if ok { 0x10 } else { 0x11 };
    // The results must reach the serial console before QEMU ends: the
    // exit port stops it at once, and the UART's queue would be lost (a
    // busy host ended a run's log mid-line).
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: tcdrain(2) on standard output, which this process holds
    // open; it only waits (and fails harmlessly on a non-terminal).
    unsafe {
        libc::tcdrain(1);
    }
    // SAFETY: ioperm grants this process port 0xf4 only; the out instruction
    // writes one byte to it, which QEMU's isa-debug-exit turns into its exit.
    unsafe {
        if libc::ioperm(0xf4, 1, 1) == 0 {
            core::arch::asm!("out dx, al", in("dx") 0xf4u16, in("al") code, options(nomem, nostack));
        }
    }
    // SAFETY: power off; nothing of this process is used afterwards.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    std::process::exit(i32::from(!ok))
}

/// Brings the loopback interface up (SIOCSIFFLAGS with IFF_UP).
pub(crate) fn loopback_up() -> Result<(), String> {
    // SAFETY: socket(2) with constant arguments; the descriptor is closed
    // below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return Err(format!("socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: ifreq is plain old data; all zeros is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags =
        (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads the ifreq we own for the call's duration.
    let r = unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &mut req) };
    let e = std::io::Error::last_os_error();
    // SAFETY: closes the descriptor opened above, once.
    unsafe { libc::close(fd) };
    if r != 0 {
        return Err(format!("bringing lo up: {e}"));
    }
    Ok(())
}

/// Mounts configfs at /sys/kernel/config (nvmet's configuration).
pub(crate) fn mount_configfs() -> Result<(), String> {
    let (src, dir, fs) = (c("configfs"), c("/sys/kernel/config"), c("configfs"));
    // SAFETY: three valid NUL-terminated strings that outlive the call, no
    // data argument.
    let r = unsafe { libc::mount(src.as_ptr(), dir.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(format!("mount configfs: {e}"));
        }
    }
    Ok(())
}
