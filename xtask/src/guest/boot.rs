//! One QEMU boot of the guest: `qemu-system-x86_64 -M q35 -accel tcg`
//! with an NVMe drive, `isa-debug-exit` and no network device; its console
//! lines of the tests are printed, and it passes when the guest printed its
//! pass line and exited QEMU with [`PASS`].

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// QEMU's exit status when the guest passed (isa-debug-exit 0x10).
const PASS: i32 = 33;
/// How long a boot may take.
const BOOT_TIMEOUT: Duration = Duration::from_secs(240);

/// What a boot runs.
#[derive(Clone, Copy, PartialEq)]
pub enum Boot {
    /// The transports against QEMU's NVMe drive (with an IOMMU, for
    /// VFIO) and NVMe/TCP on the loopback.
    Transports,
    /// NVMeVirt with the InstCSD target, without an IOMMU (interrupt
    /// remapping cannot take the MSI-X of NVMeVirt's virtual PCI bus) and
    /// with 64 MiB at 768 MiB reserved for its storage, on 3 vCPUs (CPU 0
    /// for the tests, 1 and 2 for its polling dispatcher and I/O worker).
    NvmeVirt,
    /// DH-HMAC-CHAP on NVMe/TCP, on the 6.12 kernel (see [`super::auth`]),
    /// without an IOMMU.
    Auth,
}

/// Boots the guest once; Ok when it printed its pass line and exited so.
pub fn boot(image: &Path, initrd: &Path, disk: &Path, what: Boot) -> Result<(), String> {
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
        Boot::Auth => (
            "1",
            false,
            "console=ttyS0 quiet panic=-1 rdinit=/init guest_test=auth",
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
