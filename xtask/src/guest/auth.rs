//! The authentication boot ([`Boot::Auth`]): DH-HMAC-CHAP needs a kernel
//! built with `CONFIG_NVME_AUTH` (host) and `CONFIG_NVME_TARGET_AUTH`
//! (nvmet), which the current 6.1 package lacks, so this boot runs a
//! pinned Debian bookworm 6.12 kernel with its own initramfs and only the
//! NVMe/TCP modules.

use std::path::Path;

use super::boot::{Boot, boot};
use super::initramfs::{self, Programs};
use super::kernel;

/// The kernel package (bookworm-security), fetched into the same cache.
const KERNEL: &str = "linux-image-6.12.117+deb12-amd64";

/// Modules the guest loads (dependencies are added). In this kernel's
/// configuration HMAC, SHA-256/384/512, DH with the RFC 7919 ffdhe groups
/// (`dh`, `ffdheN(dh)`), the DRBG and KPP are built in (`=y`); of what
/// DH-HMAC-CHAP and the digests ask for by name only CRC32C is a module.
const MODULES: [&str; 7] = [
    // `crc32c`: NVMe/TCP header and data digests.
    "crc32c_generic",
    "configfs",
    // The DH-HMAC-CHAP library of both sides (hashes, DH groups, secrets).
    "nvme_auth",
    "nvme_keyring",
    "nvme_tcp",
    "nvmet",
    "nvmet_tcp",
];

/// Builds the initramfs and boots the 6.12 kernel once.
pub fn run(cache: &Path, programs: &Programs, work: &Path, disk: &Path) -> Result<(), String> {
    let k = kernel::fetch_package(cache, KERNEL)?;
    let mods = k.modules(&MODULES)?;
    let initrd = work.join("initramfs-auth.cpio");
    initramfs::write(&initrd, programs, &mods, &[])?;
    eprintln!(
        "booting {} with {} modules ({})…",
        k.image.display(),
        mods.len(),
        initramfs::names(&mods)
    );
    boot(&k.image, &initrd, disk, Boot::Auth)
}
