//! NVMeVirt with the InstCSD target (`cargo xtask nvmevirt build`): the
//! kernel's own PCIe NVMe driver carries the vendor commands to the
//! firmware core linked into `nvmev.ko`. Loaded twice (the second load
//! after `rmmod`), the end-to-end vectors and the decode loop through
//! ioctl and io_uring equal to the simulated board's bit for bit,
//! `instinfer identify` showing the capability block, a malformed command
//! answered with its NVMe status, the decode commands' wall time, and
//! nothing in the kernel log that warns.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use host_driver::csd::Csd;
use host_driver::transport::{LinuxNvme, SimTransport, Transport, UringNvme};
use nvme_linux::Device;
use nvme_tcp::{NvmeTcp, TcpUrl};

use crate::fabric::{NQN, compare, start_target, vendor_status};
use crate::latency::decode_latency;
use crate::sys;

/// Where the initramfs holds the module (when it was built).
const MODULE: &str = "/lib/nvmev.ko";
/// NVMeVirt's storage: the range the kernel command line reserves
/// (`memmap=64M$768M`), and the CPUs its dispatcher and I/O worker spin
/// on (the tests run on CPU 0).
const PARAMS: &str = "memmap_start=768M memmap_size=64M cpus=1,2";
/// NVMeVirt's Identify model string.
const MODEL: &str = "CSL_Virt_MN";

/// The test, when the module is in the initramfs.
pub(crate) fn nvmevirt_path() -> Result<(), String> {
    if !Path::new(MODULE).exists() {
        return Err(format!("no {MODULE} in the initramfs"));
    }
    let mut log = Kmsg::open()?;
    log.drain()?;
    for round in 1..=2 {
        let start = Instant::now();
        sys::load_module_with(MODULE, PARAMS)?;
        let (ctrl, chr) = controller()?;
        println!(
            "guest-test nvmevirt: load {round}: the kernel's nvme driver bound {ctrl} ({}) in {:.2} s",
            chr.display(),
            start.elapsed().as_secs_f64()
        );
        let ioctl = LinuxNvme::new(Device::open(&chr).map_err(|e| e.to_string())?);
        let sim = || SimTransport::new(16384).map_err(|e| e.to_string());
        compare("nvmevirt (ioctl)", ioctl, sim()?)?;
        if round == 1 {
            identify(&chr)?;
            let uring = UringNvme::open(&chr).map_err(|e| e.to_string())?;
            compare("nvmevirt (io_uring)", uring, sim()?)?;
            vendor_status("nvmevirt", &chr)?;
            latencies(&chr)?;
        }
        sys::unload_module("nvmev")?;
        wait_gone(&chr)?;
        let bad = log.drain()?;
        if let Some(line) = bad.first() {
            return Err(format!(
                "nvmevirt: the kernel log after load {round}: {line}"
            ));
        }
    }
    println!("guest-test nvmevirt: rmmod and a second load ok; no warning in the kernel log");
    Ok(())
}

/// `instinfer identify` on the namespace shows the capability block.
fn identify(chr: &Path) -> Result<(), String> {
    let out = std::process::Command::new("/bin/instinfer")
        .args(["identify", "--device"])
        .arg(chr)
        .output()
        .map_err(|e| format!("/bin/instinfer identify: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .map(|l| l[key.len()..].trim().to_owned())
    };
    match (
        out.status.success(),
        line("capability version"),
        line("methods"),
    ) {
        (true, Some(v), Some(m)) => {
            println!(
                "guest-test nvmevirt: instinfer identify: capability version {v}, methods {m}"
            );
            Ok(())
        }
        _ => Err(format!(
            "nvmevirt: instinfer identify ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// The decode commands' wall time at depth 1 and 32 through the kernel
/// (ioctl: one command at a time; io_uring: all in flight), through our
/// NVMe/TCP initiator to `instinfer serve` on the loopback, and on the
/// board in this process.
fn latencies(chr: &Path) -> Result<(), String> {
    fn csd<T: Transport>(t: T) -> Result<Csd<T>, String> {
        Csd::new(t).map_err(|e| e.to_string())
    }
    let mut rows = Vec::new();
    let mut ioctl = csd(LinuxNvme::new(
        Device::open(chr).map_err(|e| e.to_string())?,
    ))?;
    let mut uring = csd(UringNvme::open(chr).map_err(|e| e.to_string())?)?;
    let mut local = csd(SimTransport::new(16384).map_err(|e| e.to_string())?)?;
    sys::loopback_up()?;
    let mut target = start_target()?;
    let url = TcpUrl::parse(&format!("tcp://127.0.0.1:4420/{NQN}"))?;
    let tcp = NvmeTcp::connect(&url).map_err(|e| format!("connecting to instinfer serve: {e}"));
    let r = tcp.and_then(|t| {
        let mut tcp = csd(t)?;
        for depth in [1, 32] {
            let rounds = if depth == 1 { 200 } else { 20 };
            let mut time = |path, r: Result<(f64, f64), String>| {
                r.map(|figures| rows.push((path, depth, figures)))
            };
            time("nvmevirt ioctl", decode_latency(&mut ioctl, depth, rounds))?;
            time(
                "nvmevirt io_uring",
                decode_latency(&mut uring, depth, rounds),
            )?;
            time("nvme-tcp loopback", decode_latency(&mut tcp, depth, rounds))?;
            time(
                "board in process",
                decode_latency(&mut local, depth, rounds),
            )?;
        }
        Ok(())
    });
    let _ = target.kill();
    let _ = target.wait();
    r?;
    for (path, depth, (us, per_s)) in rows {
        println!(
            "guest-test nvmevirt latency: {path:<18} QD{depth:<2}: {us:>9.1} us per {depth} decode(s) (median), {per_s:>8.0} decodes/s (wall, emulated)"
        );
    }
    Ok(())
}

/// The NVMeVirt controller's name and character namespace.
fn controller() -> Result<(String, PathBuf), String> {
    let start = Instant::now();
    loop {
        if let Ok(dir) = std::fs::read_dir("/sys/class/nvme") {
            for e in dir.filter_map(Result::ok) {
                let model = std::fs::read_to_string(e.path().join("model")).unwrap_or_default();
                let name = e.file_name().to_string_lossy().into_owned();
                let chr = PathBuf::from(format!("/dev/ng{}n1", &name["nvme".len()..]));
                if model.trim().starts_with(MODEL) && chr.exists() {
                    return Ok((name, chr));
                }
            }
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Err("nvmevirt: no controller after 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_gone(chr: &Path) -> Result<(), String> {
    let start = Instant::now();
    while chr.exists() {
        if start.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "nvmevirt: {} still there after rmmod",
                chr.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The kernel log (`/dev/kmsg`), read without blocking.
struct Kmsg(std::fs::File);

impl Kmsg {
    fn open() -> Result<Self, String> {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .map(Kmsg)
            .map_err(|e| format!("/dev/kmsg: {e}"))
    }

    /// The records since the last call that warn: a warning, an oops, a
    /// BUG or a call trace (loading an unsigned out-of-tree module only
    /// taints, and says so; that is not one).
    fn drain(&mut self) -> Result<Vec<String>, String> {
        let mut bad = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.0.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    let text = rec.split_once(';').map_or(&*rec, |(_, t)| t).trim();
                    if ["WARNING", "Oops", "BUG", "Call Trace", "general protection"]
                        .iter()
                        .any(|w| text.contains(w))
                    {
                        bad.push(text.to_owned());
                    }
                }
                // EPIPE: records were overwritten before they were read.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("/dev/kmsg: {e}")),
            }
        }
        Ok(bad)
    }
}
