//! `cargo xtask guest-test`: the Linux NVMe transports tested for real, in
//! a QEMU x86 guest against QEMU's NVMe controller.
//!
//! 1. Debian's current `linux-image-*-amd64` is fetched with `apt-get
//!    download` and unpacked into `~/.cache/instinfer/guest` (once).
//! 2. `guest-init` (crate `guest-tests`) is built as a static musl binary.
//! 3. An initramfs holds it as `/init`, `instinfer` as `/bin/instinfer`
//!    (the NVMe/TCP target), and the `nvme`, `vfio_pci`,
//!    `vfio_iommu_type1`, `nvme_tcp`, `nvmet`, `nvmet_tcp` and `configfs`
//!    modules with their dependencies (and the crypto modules the
//!    integrity code asks for), and NVMeVirt's `nvmev.ko` with the InstCSD
//!    target when `cargo xtask nvmevirt build` made it.
//! 4. `qemu-system-x86_64 -M q35 -accel tcg` boots it with an IOMMU
//!    (`intel-iommu`, `intel_iommu=on`), an NVMe drive and
//!    `isa-debug-exit`, and no network device (`-nic none`: NVMe/TCP runs
//!    on the guest's loopback only); the guest prints its results on the
//!    serial console and exits QEMU with 33 (pass) or 35 (fail).
//! 5. With NVMeVirt's module, a second boot runs its test alone
//!    (`guest_test=nvmevirt` on the command line; see [`Boot::NvmeVirt`]).
//! 6. A last boot runs DH-HMAC-CHAP on a pinned 6.12 kernel, which has
//!    it (`guest_test=auth`; see [`auth`]).

mod auth;
mod boot;
mod cpio;
mod initramfs;
pub(crate) mod kernel;

use std::path::PathBuf;
use std::process::Command;

use crate::cargo;
use boot::{Boot, boot};
use initramfs::Programs;

/// Modules the guest loads (dependencies are added).
const MODULES: [&str; 10] = [
    "crc64_rocksoft_generic",
    // NVMe/TCP header and data digests (CRC32C) on both kernel sides.
    "crc32c_generic",
    "crct10dif_generic",
    "nvme",
    "vfio_iommu_type1",
    "vfio_pci",
    "configfs",
    "nvme_tcp",
    "nvmet",
    "nvmet_tcp",
];

pub(crate) fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("instinfer").join("guest")
}

/// `cargo xtask guest-test`.
pub fn main() -> Result<(), String> {
    let qemu_ok = Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !qemu_ok {
        return Err("qemu-system-x86_64 not found (apt install qemu-system-x86)".into());
    }
    let cache = cache_dir();
    let k = kernel::fetch(&cache)?;
    let mods = k.modules(&MODULES)?;
    cargo(&[
        "build",
        "--release",
        "-p",
        "guest-tests",
        "-p",
        "instinfer",
        "--bin",
        "guest-init",
        "--bin",
        "instinfer",
        "--target",
        "x86_64-unknown-linux-musl",
    ])?;
    let bin = crate::hdl::root().join("target/x86_64-unknown-linux-musl/release");
    let read = |name: &str| {
        let p = bin.join(name);
        std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let programs = Programs {
        init: read("guest-init")?,
        // The NVMe/TCP target the guest starts (`instinfer serve`).
        instinfer: read("instinfer")?,
    };
    // NVMeVirt with the InstCSD target, when `cargo xtask nvmevirt build`
    // made it (the guest loads it itself, with its parameters).
    let nvmev = std::fs::read(crate::nvmevirt::module_path()).ok();
    let mut extra: Vec<(&str, &[u8])> = Vec::new();
    match &nvmev {
        Some(ko) => extra.push(("lib/nvmev.ko", ko)),
        None => eprintln!("no target/nvmevirt/nvmev.ko: the guest skips NVMeVirt"),
    }
    let work = crate::hdl::root().join("target/guest");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let initrd = work.join("initramfs.cpio");
    initramfs::write(&initrd, &programs, &mods, &extra)?;
    let disk = work.join("nvme.img");
    let f = std::fs::File::create(&disk).map_err(|e| format!("{}: {e}", disk.display()))?;
    f.set_len(64 << 20).map_err(|e| e.to_string())?;
    eprintln!(
        "booting {} with {} modules ({})…",
        k.image.display(),
        mods.len(),
        initramfs::names(&mods)
    );
    boot(&k.image, &initrd, &disk, Boot::Transports)?;
    if nvmev.is_some() {
        boot(&k.image, &initrd, &disk, Boot::NvmeVirt)?;
    }
    auth::run(&cache, &programs, &work, &disk)
}
