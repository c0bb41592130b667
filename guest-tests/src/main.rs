//! `guest-init`: PID 1 of the QEMU x86 guest that `cargo xtask guest-test`
//! boots. It mounts `/proc`, `/sys` and `/dev`, loads the kernel modules
//! listed in `/lib/modules/order`, waits for the NVMe namespace, runs the
//! transport tests against QEMU's NVMe controller, prints one line per
//! result, and ends QEMU through its `isa-debug-exit` port: 0x10 for
//! success (QEMU exits 33), 0x11 for a failure (35).
//!
//! On any other machine (not PID 1) it refuses to run.
//!
//! | module | owns |
//! | --- | --- |
//! | `tests` | the transport tests run inside the guest |
//! | `auth` | DH-HMAC-CHAP on NVMe/TCP (the 6.12 kernel's boot): the kernel's host and target, then ours |
//! | `fabric` | NVMe/TCP on the guest's loopback: `instinfer serve` with the kernel's host, the kernel's target with our initiator |
//! | `nvmevirt` | NVMeVirt with the InstCSD target: the kernel's PCIe NVMe driver to the firmware core in `nvmev.ko` |
//! | `latency` | the wall time of the vendor decode commands through a transport |
//! | `sys` | PID 1's system calls: mounts, module loading, QEMU's exit port; the crate's only `unsafe` |
#![deny(unsafe_code)]

#[cfg(target_os = "linux")]
mod auth;
#[cfg(target_os = "linux")]
mod fabric;
#[cfg(target_os = "linux")]
mod latency;
#[cfg(target_os = "linux")]
mod nvmevirt;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod tests;

#[cfg(target_os = "linux")]
fn main() {
    if std::process::id() != 1 {
        eprintln!("guest-init runs as PID 1 of the test guest (cargo xtask guest-test)");
        std::process::exit(2);
    }
    let ok = match run() {
        Ok(()) => {
            println!("GUEST-TEST PASS");
            true
        }
        Err(e) => {
            println!("GUEST-TEST FAIL: {e}");
            false
        }
    };
    sys::exit_qemu(ok);
}

#[cfg(target_os = "linux")]
fn run() -> Result<(), String> {
    sys::mount_basics()?;
    let order = std::fs::read_to_string("/lib/modules/order")
        .map_err(|e| format!("/lib/modules/order: {e}"))?;
    for name in order.lines().filter(|l| !l.is_empty()) {
        sys::load_module(&format!("/lib/modules/{name}.ko"))?;
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let boot = |name: &str| {
        cmdline
            .split_whitespace()
            .any(|w| w == format!("guest_test={name}"))
    };
    // The third boot (the 6.12 kernel, without the PCIe NVMe driver) runs
    // the authentication tests alone.
    if boot("auth") {
        return auth::auth_path();
    }
    let ns = std::path::Path::new("/dev/nvme0n1");
    for _ in 0..200 {
        if ns.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if !ns.exists() {
        return Err("no /dev/nvme0n1 after loading nvme".into());
    }
    // The second boot (no IOMMU: NVMeVirt's virtual PCI bus cannot have
    // its MSI-X remapped) runs NVMeVirt alone.
    if boot("nvmevirt") {
        return nvmevirt::nvmevirt_path();
    }
    tests::ioctl_path(ns)?;
    tests::decode_loop(ns)?;
    tests::solid_raw_namespace(ns)?;
    tests::bench_ioctl(ns)?;
    tests::uring_path(std::path::Path::new("/dev/ng0n1"), 1)?;
    tests::vfio_path()?;
    fabric::fabric_path()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("guest-init is the Linux test guest's init");
    std::process::exit(2);
}
