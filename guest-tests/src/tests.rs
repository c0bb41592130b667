//! The transport tests run inside the guest.

use std::path::Path;

use nvme_linux::{Data, Device, Passthru};
use proto::{Opcode, Sqe};

/// Identify Controller: vendor id, model, MDTS in bytes (0 = no limit).
fn identify(dev: &mut Device) -> Result<(u16, String, usize), String> {
    let mut sqe = Sqe::new(Opcode(0x06));
    sqe.cdw10 = 1;
    let mut buf = vec![0u8; 4096];
    let c = dev
        .exec(true, &sqe, Data::In(&mut buf))
        .map_err(|e| e.to_string())?;
    if c.status != 0 {
        return Err(format!("Identify Controller status {:#06x}", c.status));
    }
    let vid = u16::from_le_bytes([buf[0], buf[1]]);
    let model = String::from_utf8_lossy(&buf[24..64]).trim().to_string();
    let mdts = buf[77];
    let mdts_bytes = if mdts == 0 { 0 } else { 4096usize << mdts };
    Ok((vid, model, mdts_bytes))
}

/// Identify Namespace: LBA size and count.
fn namespace(dev: &mut Device) -> Result<(usize, u64), String> {
    let mut sqe = Sqe::new(Opcode(0x06));
    sqe.nsid = dev.nsid();
    sqe.cdw10 = 0;
    let mut buf = vec![0u8; 4096];
    let c = dev
        .exec(true, &sqe, Data::In(&mut buf))
        .map_err(|e| e.to_string())?;
    if c.status != 0 {
        return Err(format!("Identify Namespace status {:#06x}", c.status));
    }
    let nsze = u64::from_le_bytes(buf[0..8].try_into().unwrap_or_default());
    let lbaf = usize::from(buf[26] & 0x0f);
    let lbads = buf[128 + 4 * lbaf + 2];
    Ok((1usize << lbads, nsze))
}

/// Writes then reads `data` at `lba`, split into commands of at most the
/// device's transfer limit.
fn write_read<P: Passthru>(
    dev: &mut P,
    lba_size: usize,
    lba: u64,
    data: &[u8],
) -> Result<usize, String> {
    let chunk = Passthru::max_transfer(dev) / lba_size * lba_size;
    let mut commands = 0;
    for (write, opcode) in [(true, 0x01u8), (false, 0x02)] {
        let mut back = vec![0u8; data.len()];
        for (i, off) in (0..data.len()).step_by(chunk).enumerate() {
            let n = (data.len() - off).min(chunk);
            let slba = lba + (off / lba_size) as u64;
            let mut sqe = Sqe::new(Opcode(opcode));
            sqe.cdw10 = slba as u32;
            sqe.cdw11 = (slba >> 32) as u32;
            sqe.cdw12 = (n / lba_size - 1) as u32;
            let d = if write {
                Data::Out(&data[off..off + n])
            } else {
                Data::In(&mut back[off..off + n])
            };
            let c = nvme_linux::exec(dev, false, &sqe, d).map_err(|e| e.to_string())?;
            if c.status != 0 {
                return Err(format!(
                    "{} chunk {i}: status {:#06x}",
                    if write { "write" } else { "read" },
                    c.status
                ));
            }
            commands += 1;
        }
        if !write && back != data {
            return Err(format!(
                "{} bytes at LBA {lba} read back differently",
                data.len()
            ));
        }
    }
    Ok(commands)
}

/// The ioctl path: Identify, data through Write/Read across the transfer
/// limit, and vendor commands rejected cleanly.
pub(crate) fn ioctl_path(ns: &Path) -> Result<(), String> {
    let mut dev = Device::open(ns).map_err(|e| e.to_string())?;
    let (vid, model, mdts) = identify(&mut dev)?;
    dev.limit_transfer(mdts);
    println!(
        "guest-test ioctl: identify ok: vendor {vid:#06x}, model {model:?}, MDTS {mdts} B, per command {} B",
        dev.max_transfer()
    );
    let (lba_size, lbas) = namespace(&mut dev)?;
    println!(
        "guest-test ioctl: namespace {} of {lbas} x {lba_size} B blocks",
        dev.nsid()
    );
    let sizes = [lba_size, 128 << 10, 2 * dev.max_transfer() + 4096];
    let mut lba = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        let size = size.div_ceil(lba_size) * lba_size;
        let data: Vec<u8> = (0..size)
            .map(|j| (j * 31 + i * 7 + j / 4096) as u8)
            .collect();
        let cmds = write_read(&mut dev, lba_size, lba, &data)?;
        println!("guest-test ioctl: {size} B written and read back in {cmds} commands");
        lba += (size / lba_size) as u64;
    }
    // Vendor commands: a plain NVMe device answers Invalid Command Opcode.
    for (admin, opcode) in [(false, 0x86u8), (false, 0x80), (true, 0xC0)] {
        let sqe = Sqe::new(Opcode(opcode));
        let mut buf = vec![0u8; 64];
        let c = dev
            .exec(admin, &sqe, Data::In(&mut buf))
            .map_err(|e| format!("vendor {opcode:#04x}: {e}"))?;
        if c.status & 0x7ff != 0x001 {
            return Err(format!(
                "vendor opcode {opcode:#04x}: status {:#06x}, expected Invalid Command Opcode",
                c.status
            ));
        }
        println!(
            "guest-test ioctl: vendor opcode {opcode:#04x} ({}) rejected cleanly, status {:#06x}",
            if admin { "admin" } else { "I/O" },
            c.status
        );
    }
    Ok(())
}

/// The decode loop with the KV cache on the drive: the transport probes a
/// plain NVMe drive, the KV goes to it with standard Write commands and
/// comes back with Read for every step, and the outputs equal the host
/// reference's.
pub(crate) fn decode_loop(ns: &Path) -> Result<(), String> {
    use host_driver::transport::{LinuxNvme, UringNvme};
    let dev = Device::open(ns).map_err(|e| e.to_string())?;
    let limit = dev.max_transfer();
    decode_loop_with(LinuxNvme::new(dev), limit, "ioctl")?;
    let t = UringNvme::open(Path::new("/dev/ng0n1")).map_err(|e| e.to_string())?;
    decode_loop_with(t, limit, "uring")
}

fn decode_loop_with<T: host_driver::transport::Transport>(
    t: T,
    limit: usize,
    label: &str,
) -> Result<(), String> {
    use attention::shape::Method;
    use host_driver::backend::{AttentionBackend, DecodeStep, HostDense, ModelShape, SsdOffload};
    use host_driver::csd::{Drive, probe};

    let (t, plain) = match probe(t).map_err(|e| e.to_string())? {
        Drive::Plain(t, p) => (t, p),
        Drive::InstCsd(_) => return Err("QEMU's drive claims to be an InstCSD".into()),
    };
    println!(
        "guest-test decode ({label}): probe: plain NVMe drive {:?}, {} x {} B blocks -> ssd-offload backend",
        plain.model, plain.lbas, plain.lba_size
    );
    let mut ssd = SsdOffload::new(
        t,
        plain.lba_size,
        plain.lbas,
        plain.max_transfer.min(limit),
        512,
    )
    .map_err(|e| e.to_string())?;
    let mut host = HostDense::new();
    let shape = ModelShape {
        layers: 2,
        q_heads: 9,
        kv_heads: 3,
        head_dim: 64,
    };
    let (seqs, prompt, steps) = (3u32, 256usize, 64u64);
    let data = |seed: u64, n: usize| -> Vec<f32> {
        let mut r = attention::testdata::SplitMix64::new(seed);
        (0..n).map(|_| r.normal()).collect()
    };
    for seq in 0..seqs {
        for b in [&mut ssd as &mut dyn AttentionBackend, &mut host] {
            b.open(seq, shape).map_err(|e| e.to_string())?;
            for layer in 0..shape.layers {
                let n = shape.kv_heads * prompt * shape.head_dim;
                let seed = u64::from(seq) * 10 + layer as u64;
                b.append(seq, layer, &data(seed, n), &data(seed + 5, n))
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    let start = std::time::Instant::now();
    let mut worst = 0f32;
    let mut read = 0u64;
    for step in 0..steps {
        for layer in 0..shape.layers {
            let mut batch = Vec::new();
            let inputs: Vec<(Vec<f32>, Vec<f32>, Vec<f32>)> = (0..seqs)
                .map(|seq| {
                    let s = 1000 + step * 100 + u64::from(seq) * 10 + layer as u64;
                    (
                        data(s, shape.q_heads * shape.head_dim),
                        data(s + 1, shape.kv_heads * shape.head_dim),
                        data(s + 2, shape.kv_heads * shape.head_dim),
                    )
                })
                .collect();
            for (seq, (q, k, v)) in inputs.iter().enumerate() {
                batch.push(DecodeStep {
                    seq: seq as u32,
                    layer,
                    q,
                    kv_new: Some((k, v)),
                    method: Method::Dense,
                });
            }
            let a = ssd.decode(&batch).map_err(|e| e.to_string())?;
            read += ssd.last_read_bytes;
            let b = host.decode(&batch).map_err(|e| e.to_string())?;
            for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
                worst = worst.max((x - y).abs());
            }
        }
    }
    if worst > 1e-4 {
        return Err(format!(
            "decode outputs differ from the host reference by {worst}"
        ));
    }
    println!(
        "guest-test decode ({label}): {seqs} sequences x {} layers, prompt {prompt} + {steps} steps: max |drive - host| {worst:.1e}, {:.1} MB read from the drive, {:.1} s (emulated drive)",
        shape.layers,
        read as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    for seq in 0..seqs {
        ssd.close(seq).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Reads through the ioctl path at queue depth 32: 32 threads, each with
/// its own handle and one ioctl outstanding (an ioctl waits for its
/// command). Returns commands/s.
fn bench_ioctl_threads(ns: &Path, threads: usize, per_thread: usize) -> Result<f64, String> {
    let start = std::time::Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let ns = ns.to_path_buf();
            std::thread::spawn(move || -> Result<(), String> {
                let mut dev = Device::open(&ns).map_err(|e| e.to_string())?;
                let mut buf = vec![0u8; 4096];
                for i in 0..per_thread {
                    let mut sqe = Sqe::new(Opcode(0x02));
                    sqe.cdw10 = (((t * per_thread + i) * 8) % 65536) as u32;
                    sqe.cdw12 = 7;
                    let c = dev
                        .exec(false, &sqe, Data::In(&mut buf))
                        .map_err(|e| e.to_string())?;
                    if c.status != 0 {
                        return Err(format!("read status {:#06x}", c.status));
                    }
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| "reader thread panicked".to_string())??;
    }
    Ok((threads * per_thread) as f64 / start.elapsed().as_secs_f64())
}

/// Commands per second and MB/s of reads through the ioctl path at queue
/// depths 1 and 32. QEMU's drive: emulated timing, not an SSD's.
pub(crate) fn bench_ioctl(ns: &Path) -> Result<(), String> {
    let rate = bench_ioctl_threads(ns, 32, 40)?;
    println!(
        "guest-test bench ioctl QD32 (32 threads) reads of 4096 B: {rate:.0} commands/s, {:.1} MB/s (emulated drive, TCG)",
        rate * 4096.0 / 1e6
    );
    let mut dev = Device::open(ns).map_err(|e| e.to_string())?;
    for (size, count) in [(4096usize, 2000usize), (128 << 10, 200)] {
        let mut buf = vec![0u8; size];
        let start = std::time::Instant::now();
        for i in 0..count {
            let lba = ((i * size) % (32 << 20)) / 512;
            let mut sqe = Sqe::new(Opcode(0x02));
            sqe.cdw10 = lba as u32;
            sqe.cdw12 = (size / 512 - 1) as u32;
            let c = dev
                .exec(false, &sqe, Data::In(&mut buf))
                .map_err(|e| e.to_string())?;
            if c.status != 0 {
                return Err(format!("read status {:#06x}", c.status));
            }
        }
        let s = start.elapsed().as_secs_f64();
        println!(
            "guest-test bench ioctl QD1 reads of {size} B: {:.0} commands/s, {:.1} MB/s (emulated drive, TCG)",
            count as f64 / s,
            (count * size) as f64 / s / 1e6
        );
    }
    Ok(())
}

/// The io_uring path (`IORING_OP_URING_CMD` on `/dev/ng0n1`): data written
/// and read back with 32 commands in flight, a vendor command rejected
/// cleanly, and reads at queue depths 1 and 32 (emulated timing).
pub(crate) fn uring_path(ng: &Path, nsid: u32) -> Result<(), String> {
    use nvme_linux::Uring;
    let mut u = Uring::open(ng, nsid, 64).map_err(|e| e.to_string())?;
    let rw = |opcode: u8, lba: u64, blocks: u32| {
        let mut sqe = Sqe::new(Opcode(opcode));
        sqe.cdw10 = lba as u32;
        sqe.cdw11 = (lba >> 32) as u32;
        sqe.cdw12 = blocks - 1;
        sqe
    };
    // 64 writes of 4 KiB, 32 in flight, then 64 reads; compare.
    let block = |i: usize| -> Vec<u8> { (0..4096).map(|j| (i * 13 + j * 7) as u8).collect() };
    for read in [false, true] {
        let mut done = 0;
        let mut next = 0usize;
        while done < 64 {
            while next < 64 && u.in_flight() < 32 {
                let lba = 65536 + next as u64 * 8;
                let (op, buf) = if read {
                    (0x02, vec![0u8; 4096])
                } else {
                    (0x01, block(next))
                };
                u.push(&rw(op, lba, 8), buf, read)
                    .map_err(|e| e.to_string())?;
                next += 1;
            }
            let (tag, c, buf) = u.complete().map_err(|e| e.to_string())?;
            if c.status != 0 {
                return Err(format!(
                    "uring {} {tag}: status {:#06x}",
                    if read { "read" } else { "write" },
                    c.status
                ));
            }
            if read && buf != block(tag as usize - 64) {
                return Err(format!("uring read {tag} came back differently"));
            }
            done += 1;
        }
    }
    println!("guest-test uring: 64 x 4 KiB written and read back with 32 commands in flight");
    u.push(&Sqe::new(Opcode(0x86)), vec![0u8; 64], true)
        .map_err(|e| e.to_string())?;
    let (_, c, _) = u.complete().map_err(|e| e.to_string())?;
    if c.status & 0x7ff != 0x001 {
        return Err(format!("uring vendor 0x86: status {:#06x}", c.status));
    }
    println!(
        "guest-test uring: vendor opcode 0x86 rejected cleanly, status {:#06x}",
        c.status
    );
    for depth in [1usize, 32] {
        let count = 4000usize;
        let start = std::time::Instant::now();
        let (mut next, mut done) = (0usize, 0usize);
        while done < count {
            while next < count && u.in_flight() < depth {
                let lba = ((next * 8) % 65536) as u64;
                u.push(&rw(0x02, lba, 8), vec![0u8; 4096], true)
                    .map_err(|e| e.to_string())?;
                next += 1;
            }
            let (_, c, _) = u.complete().map_err(|e| e.to_string())?;
            if c.status != 0 {
                return Err(format!("uring bench read: status {:#06x}", c.status));
            }
            done += 1;
        }
        let s = start.elapsed().as_secs_f64();
        println!(
            "guest-test bench uring QD{depth} reads of 4096 B: {:.0} commands/s, {:.1} MB/s (emulated drive, TCG)",
            count as f64 / s,
            (count * 4096) as f64 / s / 1e6
        );
    }
    Ok(())
}

/// The VFIO path: the controller leaves the kernel's `nvme` driver for
/// `vfio-pci`, and `nvme_linux::vfio::VfioNvme` drives it from user space
/// through the IOMMU: Identify, data across the transfer limit, vendor
/// commands rejected, the decode loop through `LinuxNvme<VfioNvme>`, and
/// reads at queue depths 1 and 32 (emulated timing).
pub(crate) fn vfio_path() -> Result<(), String> {
    use host_driver::transport::LinuxNvme;
    use nvme_linux::vfio::VfioNvme;

    let link = std::fs::read_link("/sys/class/nvme/nvme0/device")
        .map_err(|e| format!("nvme0's PCI device: {e}"))?;
    let bdf = link
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("no PCI address")?
        .to_string();
    let dev_dir = format!("/sys/bus/pci/devices/{bdf}");
    let w = |p: String, v: &str| std::fs::write(&p, v).map_err(|e| format!("{p}: {e}"));
    w(format!("{dev_dir}/driver_override"), "vfio-pci")?;
    w(format!("{dev_dir}/driver/unbind"), &bdf)?;
    w("/sys/bus/pci/drivers_probe".into(), &bdf)?;
    let group = std::fs::read_link(format!("{dev_dir}/iommu_group"))
        .map_err(|e| format!("{bdf}'s IOMMU group: {e}"))?;
    let group = group
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("no group")?
        .to_string();
    let gpath = std::path::PathBuf::from(format!("/dev/vfio/{group}"));
    for _ in 0..100 {
        if gpath.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut v = VfioNvme::open(&bdf, &gpath).map_err(|e| e.to_string())?;
    println!(
        "guest-test vfio: {bdf} bound to vfio-pci (IOMMU group {group}); controller enabled from user space, {} B per command",
        v.max_transfer()
    );
    let lba_size = 512usize;
    let mut lba = 0u64;
    for (i, size) in [512usize, 128 << 10, 2 * v.max_transfer() + 4096]
        .into_iter()
        .enumerate()
    {
        let data: Vec<u8> = (0..size)
            .map(|j| (j * 17 + i * 3 + j / 4096) as u8)
            .collect();
        let cmds = write_read(&mut v, lba_size, lba, &data)?;
        println!("guest-test vfio: {size} B written and read back in {cmds} commands");
        lba += (size / lba_size) as u64;
    }
    for (admin, opcode) in [(false, 0x86u8), (true, 0xC0)] {
        let mut buf = vec![0u8; 64];
        let c = nvme_linux::exec(&mut v, admin, &Sqe::new(Opcode(opcode)), Data::In(&mut buf))
            .map_err(|e| e.to_string())?;
        if c.status & 0x7ff != 0x001 {
            return Err(format!(
                "vfio vendor {opcode:#04x}: status {:#06x}",
                c.status
            ));
        }
        println!(
            "guest-test vfio: vendor opcode {opcode:#04x} rejected cleanly, status {:#06x}",
            c.status
        );
    }
    for depth in [1usize, 32] {
        let count = 4000;
        let s = v
            .bench_reads(depth, count, 4096, lba_size)
            .map_err(|e| e.to_string())?;
        println!(
            "guest-test bench vfio QD{depth} reads of 4096 B: {:.0} commands/s, {:.1} MB/s (emulated drive, TCG)",
            count as f64 / s,
            (count * 4096) as f64 / s / 1e6
        );
    }
    let limit = v.max_transfer();
    decode_loop_with(LinuxNvme::new(v), limit, "vfio")
}

/// SolidAttention on the raw namespace: the KV store on `/dev/nvme0n1`
/// itself (`O_DIRECT` through io_uring in the guest kernel), block-sparse
/// decode with prefetch giving bit for bit what the same store in DRAM
/// gives, then a flush, a reopen of the namespace and one more step.
pub(crate) fn solid_raw_namespace(ns: &Path) -> Result<(), String> {
    use attention::shape::{BlockParams, Method};
    use host_driver::backend::{AttentionBackend, DecodeStep, ModelShape};
    use solid_attention::{Budget, KvLocation, KvStore, Prefetch, SolidBackend, SsdSetup};
    let e = |e: host_driver::backend::BackendError| e.to_string();
    let shape = ModelShape {
        layers: 2,
        q_heads: 9,
        kv_heads: 3,
        head_dim: 64,
    };
    let setup = |location| SsdSetup {
        location,
        block: 32,
        budget: Budget::Tokens(128),
        prefetch: Prefetch::Ahead(1),
        merge_gap: 2,
    };
    let (prompt, steps, capacity) = (400usize, 40usize, 512usize);
    let mut disk = setup(KvLocation::Raw(ns.to_path_buf()))
        .backend("guest", shape, capacity, 0, 1)
        .map_err(e)?;
    let mut dram = setup(KvLocation::Dram)
        .backend("guest", shape, capacity, 0, 1)
        .map_err(e)?;
    let data = |seed: u64, n: usize| -> Vec<f32> {
        let mut r = attention::testdata::SplitMix64::new(seed);
        (0..n).map(|_| r.normal()).collect()
    };
    for b in [&mut disk as &mut dyn AttentionBackend, &mut dram] {
        b.open(1, shape).map_err(e)?;
        for layer in 0..shape.layers {
            let n = shape.kv_heads * prompt * shape.head_dim;
            b.append(1, layer, &data(layer as u64, n), &data(layer as u64 + 7, n))
                .map_err(e)?;
        }
    }
    let method = Method::Block(BlockParams {
        block: 32,
        budget: 128,
    });
    let start = std::time::Instant::now();
    let step_inputs = |step: usize, layer: usize| {
        let s = 5000 + (step * 10 + layer) as u64 * 3;
        (
            data(s, shape.q_heads * shape.head_dim),
            data(s + 1, shape.kv_heads * shape.head_dim),
            data(s + 2, shape.kv_heads * shape.head_dim),
        )
    };
    for step in 0..steps {
        for layer in 0..shape.layers {
            let (q, k, v) = step_inputs(step, layer);
            let st = DecodeStep {
                seq: 1,
                layer,
                q: &q,
                kv_new: Some((&k, &v)),
                method,
            };
            let a = disk.decode(&[st]).map_err(e)?;
            let b = dram.decode(&[st]).map_err(e)?;
            if a != b {
                return Err(format!(
                    "step {step} layer {layer}: the raw namespace differs from DRAM"
                ));
            }
        }
    }
    let t = disk.stats.total();
    println!(
        "guest-test solid: KV store on {} (O_DIRECT, io_uring), {} layers x {} KV heads, prompt {prompt} + {steps} steps, block-sparse 128 tokens: equal to DRAM bit for bit; {:.1} MB read in {} reads, prefetch hit rate {:.1}%, {:.1} s (emulated drive)",
        ns.display(),
        shape.layers,
        shape.kv_heads,
        disk.store().stats.bytes_read as f64 / 1e6,
        disk.store().stats.reads,
        100.0 * t.hit_rate(),
        start.elapsed().as_secs_f64()
    );
    disk.store_mut().flush().map_err(e)?;
    let (slots, opts) = (disk.store().read_slots(), disk.options());
    drop(disk);
    let mut disk = SolidBackend::new(KvStore::open(ns, slots).map_err(e)?, opts).map_err(e)?;
    disk.resume(1, shape).map_err(e)?;
    let (q, k, v) = step_inputs(steps, 0);
    let st = DecodeStep {
        seq: 1,
        layer: 0,
        q: &q,
        kv_new: Some((&k, &v)),
        method,
    };
    if disk.decode(&[st]).map_err(e)? != dram.decode(&[st]).map_err(e)? {
        return Err("after reopening the namespace the step differs from DRAM".into());
    }
    println!("guest-test solid: flushed, reopened from the namespace, resumed: equal");
    Ok(())
}
