//! The transport tests run inside the guest.

use std::path::Path;

use nvme_linux::{Data, Device};
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
fn write_read(dev: &mut Device, lba_size: usize, lba: u64, data: &[u8]) -> Result<usize, String> {
    let chunk = dev.max_transfer() / lba_size * lba_size;
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
            let c = dev.exec(false, &sqe, d).map_err(|e| e.to_string())?;
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
