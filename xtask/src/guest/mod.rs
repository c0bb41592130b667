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

mod cpio;
pub(crate) mod kernel;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cargo;
use cpio::Entry;

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
/// QEMU's exit status when the guest passed (isa-debug-exit 0x10).
const PASS: i32 = 33;
/// How long a boot may take.
const BOOT_TIMEOUT: Duration = Duration::from_secs(240);

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
    let init = read("guest-init")?;
    // The NVMe/TCP target the guest starts (`instinfer serve`).
    let instinfer = read("instinfer")?;
    let order: String = mods.iter().map(|(n, _)| format!("{n}\n")).collect();
    let names: Vec<String> = mods
        .iter()
        .map(|(n, _)| format!("lib/modules/{n}.ko"))
        .collect();
    let mut entries = vec![
        Entry::Dir("dev"),
        Entry::Dir("proc"),
        Entry::Dir("sys"),
        Entry::Dir("lib"),
        Entry::Dir("lib/modules"),
        Entry::Dir("bin"),
        Entry::Dir("tmp"),
        Entry::File("init", 0o755, &init),
        Entry::File("bin/instinfer", 0o755, &instinfer),
        Entry::File("lib/modules/order", 0o644, order.as_bytes()),
    ];
    for ((_, bytes), name) in mods.iter().zip(&names) {
        entries.push(Entry::File(name, 0o644, bytes));
    }
    // NVMeVirt with the InstCSD target, when `cargo xtask nvmevirt build`
    // made it (the guest loads it itself, with its parameters).
    let nvmev = std::fs::read(crate::nvmevirt::module_path()).ok();
    match &nvmev {
        Some(ko) => entries.push(Entry::File("lib/nvmev.ko", 0o644, ko)),
        None => eprintln!("no target/nvmevirt/nvmev.ko: the guest skips NVMeVirt"),
    }
    let work = crate::hdl::root().join("target/guest");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let initrd = work.join("initramfs.cpio");
    std::fs::write(&initrd, cpio::archive(&entries))
        .map_err(|e| format!("{}: {e}", initrd.display()))?;
    let disk = work.join("nvme.img");
    let f = std::fs::File::create(&disk).map_err(|e| format!("{}: {e}", disk.display()))?;
    f.set_len(64 << 20).map_err(|e| e.to_string())?;
    eprintln!(
        "booting {} with {} modules ({})…",
        k.image.display(),
        mods.len(),
        mods.iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    boot(&k.image, &initrd, &disk, Boot::Transports)?;
    if nvmev.is_some() {
        boot(&k.image, &initrd, &disk, Boot::NvmeVirt)?;
    }
    Ok(())
}

/// What a boot runs.
#[derive(Clone, Copy, PartialEq)]
enum Boot {
    /// The transports against QEMU's NVMe drive (with an IOMMU, for
    /// VFIO) and NVMe/TCP on the loopback.
    Transports,
    /// NVMeVirt with the InstCSD target, without an IOMMU (interrupt
    /// remapping cannot take the MSI-X of NVMeVirt's virtual PCI bus) and
    /// with 64 MiB at 768 MiB reserved for its storage, on 3 vCPUs (CPU 0
    /// for the tests, 1 and 2 for its polling dispatcher and I/O worker).
    NvmeVirt,
}

/// Boots the guest once; Ok when it printed its pass line and exited so.
fn boot(
    image: &std::path::Path,
    initrd: &std::path::Path,
    disk: &std::path::Path,
    what: Boot,
) -> Result<(), String> {
    let (smp, iommu, append) = match what {
        Boot::Transports => (
            "1",
            true,
            "console=ttyS0 quiet panic=-1 rdinit=/init intel_iommu=on",
        ),
        Boot::NvmeVirt => (
            "3",
            false,
            "console=ttyS0 quiet panic=-1 rdinit=/init memmap=64M$768M guest_test=nvmevirt",
        ),
    };
    let start = Instant::now();
    let mut qemu = Command::new("qemu-system-x86_64");
    qemu.args([
        "-M",
        "q35,kernel-irqchip=split",
        "-accel",
        "tcg",
        "-m",
        "1G",
        "-smp",
        smp,
    ]);
    if iommu {
        qemu.args(["-device", "intel-iommu,intremap=on"]);
    }
    let mut child = qemu
        .args([
            "-nographic",
            "-no-reboot",
            "-monitor",
            "none",
            "-nic",
            "none",
        ])
        .arg("-kernel")
        .arg(image)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", append])
        .arg("-drive")
        .arg(format!("file={},if=none,id=nvm,format=raw", disk.display()))
        .args(["-device", "nvme,serial=instinfer0,drive=nvm"])
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| format!("qemu-system-x86_64: {e}"))?;
    let mut out = child.stdout.take().ok_or("no QEMU stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if start.elapsed() > BOOT_TIMEOUT {
            let _ = child.kill();
            break child.wait().map_err(|e| e.to_string())?;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let console = reader.join().unwrap_or_default();
    for line in console
        .lines()
        .filter(|l| l.contains("guest-test") || l.contains("GUEST-TEST"))
    {
        println!("{}", line.trim_end());
    }
    println!(
        "guest: {:.1} s from boot to exit",
        start.elapsed().as_secs_f64()
    );
    if status.code() == Some(PASS) && console.contains("GUEST-TEST PASS") {
        Ok(())
    } else {
        let tail: Vec<&str> = console.lines().rev().take(30).collect();
        Err(format!(
            "guest test failed (QEMU {status}); console tail:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ))
    }
}
