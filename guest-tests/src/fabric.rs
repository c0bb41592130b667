//! NVMe/TCP in the guest, on loopback only: `instinfer serve` (the
//! simulated board running the firmware) as the target, the kernel's
//! `nvme-tcp` host connected to it through `/dev/nvme-fabrics`, and the
//! InstCSD vendor commands driven through the kernel's passthrough ioctls
//! and io_uring. Then the kernel's own target (`nvmet-tcp`, configured in
//! configfs) as the peer of our initiator for standard I/O.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use host_driver::array::CsdArray;
use host_driver::csd::{Csd, Drive, probe};
use host_driver::transport::{IoData, IoRequest, LinuxNvme, SimTransport, Transport, UringNvme};
use host_driver::vectors;
use nvme_linux::Device;
use nvme_tcp::{NvmeTcp, TcpUrl};
use proto::{Opcode, Sqe};

pub(crate) const NQN: &str = "nqn.2026-11.io.instinfer:csd";
pub(crate) const HOSTNQN: &str =
    "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000aa";
const PEER_NQN: &str = "nqn.2026-11.io.instinfer:nvmet-peer";

fn wait_for(path: &Path, present: bool, what: &str) -> Result<(), String> {
    let start = Instant::now();
    while path.exists() != present {
        if start.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "{} {} after 20 s ({what})",
                path.display(),
                if present { "missing" } else { "still there" }
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// `instinfer serve` on 127.0.0.1:4420, started as its own process.
pub(crate) fn start_target() -> Result<Child, String> {
    start_target_with(&[])
}

/// `instinfer serve` on 127.0.0.1:4420 with more options.
pub(crate) fn start_target_with(extra: &[&str]) -> Result<Child, String> {
    let mut child = Command::new("/bin/instinfer")
        .args(["serve", "--listen", "127.0.0.1:4420", "--quiet"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting /bin/instinfer serve: {e}"))?;
    let out = child.stdout.take().ok_or("no stdout of instinfer serve")?;
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .map_err(|e| format!("instinfer serve: {e}"))?;
    if line.trim() != "127.0.0.1:4420" {
        let _ = child.kill();
        return Err(format!("instinfer serve printed {line:?}"));
    }
    Ok(child)
}

/// Connects the kernel host; returns the controller instance number.
fn kernel_connect(port: u16, nqn: &str, kato_s: u32, extra: &str) -> Result<u32, String> {
    let opts = format!(
        "nqn={nqn},transport=tcp,traddr=127.0.0.1,trsvcid={port},hostnqn={HOSTNQN},keep_alive_tmo={kato_s}{extra}"
    );
    kernel_connect_opts(&opts)
}

/// Writes `opts` to `/dev/nvme-fabrics`; returns the controller instance
/// number.
pub(crate) fn kernel_connect_opts(opts: &str) -> Result<u32, String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/nvme-fabrics")
        .map_err(|e| format!("/dev/nvme-fabrics: {e}"))?;
    f.write_all(opts.as_bytes())
        .map_err(|e| format!("connect {opts}: {e}"))?;
    let mut resp = String::new();
    f.read_to_string(&mut resp)
        .map_err(|e| format!("reading /dev/nvme-fabrics: {e}"))?;
    resp.split(',')
        .find_map(|kv| kv.trim().strip_prefix("instance="))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("connect answered {resp:?}"))
}

pub(crate) fn kernel_disconnect(instance: u32) -> Result<(), String> {
    let p = format!("/sys/class/nvme/nvme{instance}/delete_controller");
    std::fs::write(&p, "1").map_err(|e| format!("{p}: {e}"))?;
    wait_for(
        Path::new(&format!("/dev/ng{instance}n1")),
        false,
        "after delete_controller",
    )
}

pub(crate) fn namespaces(instance: u32) -> Result<(PathBuf, PathBuf), String> {
    let blk = PathBuf::from(format!("/dev/nvme{instance}n1"));
    let chr = PathBuf::from(format!("/dev/ng{instance}n1"));
    wait_for(&blk, true, "block namespace of the NVMe/TCP controller")?;
    wait_for(&chr, true, "char namespace of the NVMe/TCP controller")?;
    Ok((blk, chr))
}

/// The end-to-end vectors and the decode loop through `t`, bit for bit
/// against the simulated board in this process.
pub(crate) fn compare<T: Transport, U: Transport>(label: &str, a: T, b: U) -> Result<(), String> {
    let mut csd = match probe(a).map_err(|e| format!("{label}: probe: {e}"))? {
        Drive::InstCsd(c) => *c,
        Drive::Plain(..) => return Err(format!("{label}: our target probed as a plain drive")),
    };
    let start = Instant::now();
    let got = vectors::run(&mut csd).map_err(|e| format!("{label}: vectors: {e}"))?;
    let mut sim = Csd::new(SimTransport::new(16384).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let want = vectors::run(&mut sim).map_err(|e| e.to_string())?;
    if let Some(d) = vectors::first_difference(&got, &want) {
        return Err(format!(
            "{label}: vectors differ from the in-process board: {d}"
        ));
    }
    let loop_start = Instant::now();
    let (seqs, prompt, steps) = (3, 256, 8);
    let a = vectors::decode_loop(
        CsdArray::new(vec![csd]).map_err(|e| e.to_string())?,
        seqs,
        prompt,
        steps,
    )
    .map_err(|e| format!("{label}: decode loop: {e}"))?;
    let local = Csd::new(b).map_err(|e| e.to_string())?;
    let w = vectors::decode_loop(
        CsdArray::new(vec![local]).map_err(|e| e.to_string())?,
        seqs,
        prompt,
        steps,
    )
    .map_err(|e| e.to_string())?;
    if a.len() != w.len() || a.iter().zip(&w).any(|(x, y)| x.to_bits() != y.to_bits()) {
        return Err(format!(
            "{label}: decode loop outputs differ from the in-process board"
        ));
    }
    println!(
        "guest-test {label}: {} vectors equal bit for bit ({:.2} s); decode loop {seqs} seqs x 2 layers, prompt {prompt} + {steps} steps dense/SparF: {} outputs equal bit for bit ({:.2} s)",
        got.len(),
        (loop_start - start).as_secs_f64(),
        a.len(),
        loop_start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A command the firmware fails: its vendor status, unchanged.
pub(crate) fn vendor_status(label: &str, chr: &Path) -> Result<(), String> {
    let fetch = proto::DecodeFetch {
        seq: 4242,
        layer: 0,
        ndt: 64,
    };
    let mut dev = Device::open(chr).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 256];
    let c = dev
        .exec(false, &fetch.to_sqe(), nvme_linux::Data::In(&mut buf))
        .map_err(|e| e.to_string())?;
    let mut sim = SimTransport::new(16384).map_err(|e| e.to_string())?;
    sim.submit(IoRequest {
        sqe: fetch.to_sqe(),
        data: IoData::FromDevice(256),
    })
    .map_err(|e| e.to_string())?;
    let want = sim.reap().map_err(|e| e.to_string())?.1.cqe.status >> 1;
    if c.status != want || c.status >> 8 & 7 != 7 {
        return Err(format!(
            "vendor status through the kernel {:#06x}, the firmware's {want:#06x}",
            c.status
        ));
    }
    println!(
        "guest-test {label}: DECODE_FETCH of an unknown sequence: status {:#06x} through the kernel = the firmware's",
        c.status
    );
    Ok(())
}

/// Our target under the kernel host, then our initiator against nvmet.
pub(crate) fn fabric_path() -> Result<(), String> {
    crate::sys::loopback_up()?;
    let mut target = start_target()?;
    let r = kernel_host_on_our_target();
    let _ = target.kill();
    let _ = target.wait();
    r?;
    initiator_on_nvmet()
}

fn kernel_host_on_our_target() -> Result<(), String> {
    let start = Instant::now();
    let inst = kernel_connect(4420, NQN, 2, "")?;
    let (_blk, chr) = namespaces(inst)?;
    println!(
        "guest-test nvme-tcp: the kernel host connected to instinfer serve as nvme{inst} ({:.2} s): {} and {}",
        start.elapsed().as_secs_f64(),
        _blk.display(),
        chr.display()
    );
    let ioctl = LinuxNvme::new(Device::open(&chr).map_err(|e| e.to_string())?);
    compare(
        "nvme-tcp (ioctl)",
        ioctl,
        SimTransport::new(16384).map_err(|e| e.to_string())?,
    )?;
    let uring = UringNvme::open(&chr).map_err(|e| e.to_string())?;
    compare(
        "nvme-tcp (io_uring)",
        uring,
        SimTransport::new(16384).map_err(|e| e.to_string())?,
    )?;
    vendor_status("nvme-tcp", &chr)?;
    // Keep-alive: KATO 2 s; idle for 3 s, the controller must still answer
    // (the kernel's Keep Alive commands kept it; the target expires
    // controllers that send none).
    std::thread::sleep(Duration::from_secs(3));
    let mut dev = Device::open(&chr).map_err(|e| e.to_string())?;
    let mut id = vec![0u8; 4096];
    let mut sqe = Sqe::new(Opcode::IDENTIFY);
    sqe.cdw10 = 1;
    let c = dev
        .exec(true, &sqe, nvme_linux::Data::In(&mut id))
        .map_err(|e| format!("identify after 3 s idle: {e}"))?;
    if c.status != 0 || &id[3072..3076] != b"ICSD" {
        return Err(format!("identify after 3 s idle: status {:#06x}", c.status));
    }
    println!("guest-test nvme-tcp: keep-alive: controller live after 3 s idle with KATO 2 s");
    drop(dev);
    // Disconnect and reconnect: a fresh controller, the same device.
    kernel_disconnect(inst)?;
    let inst = kernel_connect(4420, NQN, 5, "")?;
    let (_, chr) = namespaces(inst)?;
    let ioctl = LinuxNvme::new(Device::open(&chr).map_err(|e| e.to_string())?);
    let sim = SimTransport::new(16384).map_err(|e| e.to_string())?;
    compare("nvme-tcp (ioctl after reconnect)", ioctl, sim)?;
    kernel_disconnect(inst)?;
    println!("guest-test nvme-tcp: disconnect and reconnect ok");
    // Header and data digests: the kernel's CRC32C against ours.
    let inst = kernel_connect(4420, NQN, 5, ",hdr_digest,data_digest")?;
    let (_, chr) = namespaces(inst)?;
    let ioctl = LinuxNvme::new(Device::open(&chr).map_err(|e| e.to_string())?);
    let sim = SimTransport::new(16384).map_err(|e| e.to_string())?;
    compare("nvme-tcp (ioctl, header and data digests)", ioctl, sim)?;
    kernel_disconnect(inst)?;
    kernel_discovery()
}

/// The kernel's discovery connect (what `nvme discover` does through
/// `/dev/nvme-fabrics`) to our discovery controller, and its Discovery
/// Log Page read with an admin passthrough on the controller device.
fn kernel_discovery() -> Result<(), String> {
    use proto::discovery;
    let inst = kernel_connect(4420, discovery::DISCOVERY_NQN, 0, "")?;
    let ctrl = PathBuf::from(format!("/dev/nvme{inst}"));
    wait_for(&ctrl, true, "the discovery controller's device")?;
    let sys = format!("/sys/class/nvme/nvme{inst}");
    let subsysnqn = std::fs::read_to_string(format!("{sys}/subsysnqn")).unwrap_or_default();
    if subsysnqn.trim() != discovery::DISCOVERY_NQN {
        return Err(format!("discovery controller's subsysnqn is {subsysnqn:?}"));
    }
    let mut dev = Device::open_controller(&ctrl).map_err(|e| e.to_string())?;
    let mut page = vec![0u8; 3 * discovery::RECORD_SIZE];
    let sqe = proto::log::get_log_page(discovery::LID_DISCOVERY, page.len() as u32);
    let c = dev
        .exec(true, &sqe, nvme_linux::Data::In(&mut page))
        .map_err(|e| format!("discovery log page: {e}"))?;
    if c.status != 0 {
        return Err(format!("discovery log page: status {:#06x}", c.status));
    }
    let (_, numrec) = discovery::parse_header(&page).map_err(|e| e.to_string())?;
    let nvm = discovery::entry(&page, 0).map_err(|e| e.to_string())?;
    if numrec != 2
        || nvm.subtype != discovery::SUBTYPE_NVM
        || nvm.subnqn != NQN
        || nvm.traddr != "127.0.0.1"
        || nvm.trsvcid != "4420"
    {
        return Err(format!("discovery log: {numrec} records, first {nvm:?}"));
    }
    drop(dev);
    let p = format!("{sys}/delete_controller");
    std::fs::write(&p, "1").map_err(|e| format!("{p}: {e}"))?;
    wait_for(&ctrl, false, "after delete_controller")?;
    println!(
        "guest-test nvme-tcp: the kernel's discovery connect found {} at {}:{} in the Discovery Log Page",
        nvm.subnqn, nvm.traddr, nvm.trsvcid
    );
    Ok(())
}

pub(crate) fn write(path: &str, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{path} <- {value:?}: {e}"))
}

/// nvmet-tcp with a 16 MiB namespace on a tmpfs file, on port 4421.
fn nvmet_target() -> Result<(), String> {
    crate::sys::mount_configfs()?;
    let img = "/tmp/nvmet-peer.img";
    let _ = std::fs::create_dir_all("/tmp");
    let f = std::fs::File::create(img).map_err(|e| format!("{img}: {e}"))?;
    f.set_len(16 << 20).map_err(|e| e.to_string())?;
    let sub = format!("/sys/kernel/config/nvmet/subsystems/{PEER_NQN}");
    std::fs::create_dir_all(&sub).map_err(|e| format!("{sub}: {e}"))?;
    write(&format!("{sub}/attr_allow_any_host"), "1")?;
    let ns = format!("{sub}/namespaces/1");
    std::fs::create_dir_all(&ns).map_err(|e| format!("{ns}: {e}"))?;
    write(&format!("{ns}/device_path"), img)?;
    write(&format!("{ns}/buffered_io"), "1")?;
    write(&format!("{ns}/enable"), "1")?;
    let port = "/sys/kernel/config/nvmet/ports/1";
    std::fs::create_dir_all(port).map_err(|e| format!("{port}: {e}"))?;
    write(&format!("{port}/addr_trtype"), "tcp")?;
    write(&format!("{port}/addr_adrfam"), "ipv4")?;
    write(&format!("{port}/addr_traddr"), "127.0.0.1")?;
    write(&format!("{port}/addr_trsvcid"), "4421")?;
    std::os::unix::fs::symlink(&sub, format!("{port}/subsystems/{PEER_NQN}"))
        .map_err(|e| format!("linking the subsystem to the port: {e}"))
}

fn initiator_on_nvmet() -> Result<(), String> {
    nvmet_target()?;
    let url = TcpUrl::parse(&format!("tcp://127.0.0.1:4421/{PEER_NQN}"))?;
    // Header and data digests on: nvmet checks our CRC32C, we check its.
    let o = nvme_tcp::initiator::TcpOptions {
        digests: proto::tcp::Digests {
            header: true,
            data: true,
        },
        ..Default::default()
    };
    let t = NvmeTcp::connect_with(&url, &o).map_err(|e| format!("connecting to nvmet-tcp: {e}"))?;
    let (mut t, plain) = match probe(t).map_err(|e| e.to_string())? {
        Drive::Plain(t, p) => (t, p),
        Drive::InstCsd(_) => return Err("nvmet-tcp probed as an InstCSD".into()),
    };
    println!(
        "guest-test nvme-tcp: our initiator on nvmet-tcp: {:?}, {} x {} B blocks",
        plain.model, plain.lbas, plain.lba_size
    );
    let lba = plain.lba_size;
    let mut at = 0u64;
    // In the capsule, through R2T, and across several H2CData PDUs.
    for size in [lba, 8192, 64 << 10, 1 << 20] {
        let size = size.div_ceil(lba) * lba;
        let blocks = (size / lba) as u32;
        let data: Vec<u8> = (0..size).map(|i| (i * 29 + size) as u8).collect();
        for (op, io) in [
            (0x01u8, IoData::ToDevice(data.clone())),
            (0x02, IoData::FromDevice(size)),
        ] {
            let mut sqe = Sqe::new(Opcode(op));
            sqe.nsid = 1;
            sqe.cdw10 = at as u32;
            sqe.cdw11 = (at >> 32) as u32;
            sqe.cdw12 = blocks - 1;
            t.submit(IoRequest { sqe, data: io })
                .map_err(|e| e.to_string())?;
            let (_, r) = t.reap().map_err(|e| e.to_string())?;
            if !r.cqe.status().is_success() {
                return Err(format!("nvmet {op:#04x} of {size} B: {}", r.cqe.status()));
            }
            if op == 0x02 && r.data != data {
                return Err(format!("nvmet: {size} B read back differently"));
            }
        }
        at += u64::from(blocks);
    }
    // A vendor command: nvmet fails it with a status, the connection stays.
    t.submit(IoRequest {
        sqe: Sqe::new(Opcode::SEQ_OPEN),
        data: IoData::None,
    })
    .map_err(|e| e.to_string())?;
    let (_, r) = t.reap().map_err(|e| e.to_string())?;
    if r.cqe.status().is_success() {
        return Err("nvmet accepted a vendor command".into());
    }
    println!(
        "guest-test nvme-tcp: our initiator on nvmet-tcp (header and data digests): Write/Read of {lba} B .. 1 MiB read back; vendor opcode refused with {}",
        r.cqe.status()
    );
    Ok(())
}
