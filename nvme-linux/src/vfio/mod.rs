//! [`VfioNvme`]: a user-space NVMe driver over VFIO. The controller is
//! unbound from the kernel's `nvme` driver and bound to `vfio-pci`; this
//! driver opens its IOMMU group, maps BAR0 and a block of DMA memory
//! through the IOMMU, resets and enables the controller with an admin
//! queue pair, creates one I/O queue pair, and runs commands by polling
//! completion phase tags (no interrupts). Registers come from
//! [`proto::regs`]. Data moves through page-aligned DMA slots described
//! with PRP1/PRP2 or a PRP list.
//!
//! The queue driver itself ([`UserNvme`]) only needs a [`Pci`] function:
//! BAR0 registers and a block of DMA memory with its bus address. VFIO
//! gives it a real (or emulated) controller; a test can give it the
//! simulated board's controller. It implements [`Passthru`], so
//! `LinuxNvme<VfioNvme>` is a `Transport`.

mod sys;

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{Ordering, fence};
use std::time::{Duration, Instant};

use proto::regs;
use proto::{Opcode, Sqe};

use crate::NvmeError;
use crate::cmd::PassthruCmd;
use crate::device::{Completion, Data, Passthru};
use sys::Mapping;

/// IOVA where the DMA block is mapped.
const IOVA: u64 = 0x10_0000;
/// Page size the controller is set to (CC.MPS = 0).
const PAGE: usize = 4096;
/// Admin queue entries.
const ADMIN_ENTRIES: u16 = 32;
/// I/O queue entries.
const IO_ENTRIES: u16 = 64;
/// Data slots (commands in flight at most) and their size.
pub const SLOTS: usize = 32;
/// Bytes one command may move (one slot).
pub const SLOT_BYTES: usize = 512 << 10;
/// Offsets in the DMA block.
const ASQ: usize = 0;
const ACQ: usize = 0x1000;
const IOSQ: usize = 0x2000;
const IOCQ: usize = 0x3000;
const PRP_LISTS: usize = 0x1_0000;
const DATA: usize = PRP_LISTS + SLOTS * PAGE;
const DMA_BYTES: usize = DATA + SLOTS * SLOT_BYTES;
/// How long a command may take before it counts as stuck (the default of
/// [`UserNvme::set_command_timeout`]).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

fn io_err(what: impl Into<String>, source: std::io::Error) -> NvmeError {
    NvmeError::Io {
        what: what.into(),
        source,
    }
}

fn fail(what: impl Into<String>) -> NvmeError {
    let what = what.into();
    io_err(what.clone(), std::io::Error::other(what))
}

/// What the driver needs of a PCI NVMe function.
pub trait Pci {
    /// Reads the 32-bit BAR0 register at `off`.
    fn read32(&mut self, off: usize) -> u32;
    /// Writes the 32-bit BAR0 register at `off`.
    fn write32(&mut self, off: usize, v: u32);
    /// The bus address of byte 0 of the DMA block.
    fn dma_iova(&self) -> u64;
    /// Copies `data` into the DMA block at `off`.
    fn dma_put(&mut self, off: usize, data: &[u8]);
    /// Copies from the DMA block at `off` into `out`.
    fn dma_get(&mut self, off: usize, out: &mut [u8]);
}

/// Bytes of DMA memory the driver uses.
pub const DMA_BLOCK_BYTES: usize = DMA_BYTES;

#[derive(Debug)]
struct Queue {
    qid: u16,
    sq: usize,
    cq: usize,
    entries: u16,
    tail: u16,
    head: u16,
    phase: bool,
}

/// BAR0 and DMA memory of a VFIO device (and the files that keep them).
pub struct VfioPci {
    _container: File,
    _group: File,
    _device: File,
    bar: Mapping,
    dma: Mapping,
}

impl std::fmt::Debug for VfioPci {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioPci").finish_non_exhaustive()
    }
}

impl Pci for VfioPci {
    fn read32(&mut self, off: usize) -> u32 {
        self.bar.read32(off)
    }

    fn write32(&mut self, off: usize, v: u32) {
        self.bar.write32(off, v);
    }

    fn dma_iova(&self) -> u64 {
        IOVA
    }

    fn dma_put(&mut self, off: usize, data: &[u8]) {
        self.dma.put(off, data);
    }

    fn dma_get(&mut self, off: usize, out: &mut [u8]) {
        self.dma.get(off, out);
    }
}

/// A controller driven from user space over VFIO.
pub type VfioNvme = UserNvme<VfioPci>;

/// A controller driven from user space through a [`Pci`] function; see
/// the module docs.
pub struct UserNvme<P> {
    pci: P,
    dstrd: u8,
    admin: Queue,
    io: Queue,
    next_cid: u16,
    nsid: u32,
    max_transfer: usize,
    command_timeout: Duration,
    resets: u64,
    /// A reset is under way: a command stuck now fails without another.
    resetting: bool,
}

impl<P> std::fmt::Debug for UserNvme<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserNvme")
            .field("nsid", &self.nsid)
            .field("max_transfer", &self.max_transfer)
            .finish_non_exhaustive()
    }
}

impl UserNvme<VfioPci> {
    /// Opens PCI device `bdf` (e.g. `0000:00:04.0`, bound to `vfio-pci`)
    /// in IOMMU group `/dev/vfio/<group>`, and brings the controller up.
    pub fn open(bdf: &str, group: &Path) -> Result<Self, NvmeError> {
        let rw = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .map_err(|e| io_err(format!("open {}", p.display()), e))
        };
        let container = rw(Path::new("/dev/vfio/vfio"))?;
        let v = sys::ioctl_val(&container, sys::GET_API_VERSION, 0)
            .map_err(|e| io_err("VFIO_GET_API_VERSION", e))?;
        if v != 0 {
            return Err(fail(format!("VFIO API version {v}, expected 0")));
        }
        if sys::ioctl_val(&container, sys::CHECK_EXTENSION, sys::TYPE1V2)
            .map_err(|e| io_err("VFIO_CHECK_EXTENSION", e))?
            == 0
        {
            return Err(fail("no VFIO type1v2 IOMMU"));
        }
        let group_f = rw(group)?;
        let mut st = sys::GroupStatus { argsz: 8, flags: 0 };
        sys::ioctl_ptr(&group_f, sys::GROUP_GET_STATUS, &mut st)
            .map_err(|e| io_err("VFIO_GROUP_GET_STATUS", e))?;
        if st.flags & 1 == 0 {
            return Err(fail(
                "IOMMU group not viable (a device in it is not bound to vfio-pci)",
            ));
        }
        sys::set_container(&group_f, &container)
            .map_err(|e| io_err("VFIO_GROUP_SET_CONTAINER", e))?;
        sys::ioctl_val(&container, sys::SET_IOMMU, sys::TYPE1V2)
            .map_err(|e| io_err("VFIO_SET_IOMMU", e))?;
        let name = CString::new(bdf).map_err(|_| fail("bad PCI address"))?;
        let device =
            sys::device_fd(&group_f, &name).map_err(|e| io_err("VFIO_GROUP_GET_DEVICE_FD", e))?;
        // Memory space and bus mastering on.
        let mut cfg = sys::RegionInfo {
            argsz: 32,
            index: sys::CONFIG_REGION,
            ..Default::default()
        };
        sys::ioctl_ptr(&device, sys::DEVICE_GET_REGION_INFO, &mut cfg)
            .map_err(|e| io_err("config region info", e))?;
        let mut cmd = [0u8; 2];
        device
            .read_exact_at(&mut cmd, cfg.offset + 4)
            .map_err(|e| io_err("read PCI command", e))?;
        let c = u16::from_le_bytes(cmd) | 0x6;
        device
            .write_all_at(&c.to_le_bytes(), cfg.offset + 4)
            .map_err(|e| io_err("write PCI command", e))?;
        let mut bar0 = sys::RegionInfo {
            argsz: 32,
            index: 0,
            ..Default::default()
        };
        sys::ioctl_ptr(&device, sys::DEVICE_GET_REGION_INFO, &mut bar0)
            .map_err(|e| io_err("BAR0 region info", e))?;
        let bar = Mapping::new(Some(&device), bar0.offset, bar0.size as usize)
            .map_err(|e| io_err("mmap BAR0", e))?;
        let dma = Mapping::new(None, 0, DMA_BYTES).map_err(|e| io_err("mmap DMA memory", e))?;
        let mut map = sys::DmaMap {
            argsz: 32,
            flags: 3,
            vaddr: dma.addr(),
            iova: IOVA,
            size: dma.len() as u64,
        };
        sys::ioctl_ptr(&container, sys::IOMMU_MAP_DMA, &mut map)
            .map_err(|e| io_err("VFIO_IOMMU_MAP_DMA", e))?;
        UserNvme::start(VfioPci {
            _container: container,
            _group: group_f,
            _device: device,
            bar,
            dma,
        })
    }
}

impl<P: Pci> UserNvme<P> {
    /// Brings up the controller behind `pci`: reset, admin queue, enable,
    /// Identify, one I/O queue pair.
    pub fn start(mut pci: P) -> Result<Self, NvmeError> {
        let cap = u64::from(pci.read32(regs::CAP)) | u64::from(pci.read32(regs::CAP + 4)) << 32;
        let dstrd = ((cap >> 32) & 0xF) as u8;
        let timeout = Duration::from_millis(((cap >> 24) & 0xFF).max(1) * 500);
        let mut d = Self {
            pci,
            dstrd,
            admin: Queue {
                qid: 0,
                sq: ASQ,
                cq: ACQ,
                entries: ADMIN_ENTRIES,
                tail: 0,
                head: 0,
                phase: true,
            },
            io: Queue {
                qid: 1,
                sq: IOSQ,
                cq: IOCQ,
                entries: IO_ENTRIES,
                tail: 0,
                head: 0,
                phase: true,
            },
            next_cid: 0,
            nsid: 1,
            max_transfer: SLOT_BYTES,
            command_timeout: COMMAND_TIMEOUT,
            resets: 0,
            resetting: false,
        };
        d.reset_and_enable(timeout)?;
        Ok(d)
    }

    fn iova(&self, off: usize) -> u64 {
        self.pci.dma_iova() + off as u64
    }

    /// The PCI function.
    pub fn pci_mut(&mut self) -> &mut P {
        &mut self.pci
    }

    /// Sets how long a command may go unanswered before the controller is
    /// reset and the command failed (at least 1 ms).
    pub fn set_command_timeout(&mut self, t: Duration) {
        self.command_timeout = t.max(Duration::from_millis(1));
    }

    /// Controller resets after stuck commands so far.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    fn wait_ready(&mut self, ready: bool, timeout: Duration) -> Result<(), NvmeError> {
        let start = Instant::now();
        loop {
            let csts = self.pci.read32(regs::CSTS);
            if csts & regs::CSTS_CFS != 0 {
                return Err(fail("controller fatal status"));
            }
            if (csts & regs::CSTS_RDY != 0) == ready {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(fail(format!("CSTS.RDY never became {ready}")));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Controller reset (CC.EN = 0), admin queue, enable; then Identify,
    /// and the I/O queue pair.
    fn reset_and_enable(&mut self, timeout: Duration) -> Result<(), NvmeError> {
        self.pci.write32(regs::CC, 0);
        self.wait_ready(false, timeout)?;
        self.pci.dma_put(0, &vec![0u8; PRP_LISTS]);
        self.admin.tail = 0;
        self.admin.head = 0;
        self.admin.phase = true;
        self.io.tail = 0;
        self.io.head = 0;
        self.io.phase = true;
        let a = u32::from(ADMIN_ENTRIES - 1);
        self.pci.write32(regs::AQA, a << 16 | a);
        let (asq, acq) = (self.iova(ASQ), self.iova(ACQ));
        self.pci.write32(regs::ASQ, asq as u32);
        self.pci.write32(regs::ASQ + 4, (asq >> 32) as u32);
        self.pci.write32(regs::ACQ, acq as u32);
        self.pci.write32(regs::ACQ + 4, (acq >> 32) as u32);
        // IOSQES 6 (64 B), IOCQES 4 (16 B), MPS 0 (4 KiB), NVM command set.
        self.pci.write32(regs::CC, 6 << 16 | 4 << 20 | regs::CC_EN);
        self.wait_ready(true, timeout)?;
        // Identify Controller: MDTS.
        let mut id = vec![0u8; 4096];
        let mut sqe = Sqe::new(Opcode(0x06));
        sqe.cdw10 = 1;
        let c = self.run(true, &sqe, Data::In(&mut id))?;
        if c.status != 0 {
            return Err(fail(format!("Identify status {:#06x}", c.status)));
        }
        if id[77] != 0 {
            self.max_transfer = self.max_transfer.min(PAGE << id[77]);
        }
        let q = u32::from(IO_ENTRIES - 1) << 16 | 1;
        let mut cq = Sqe::new(Opcode(0x05));
        cq.prp1 = self.iova(IOCQ);
        cq.cdw10 = q;
        cq.cdw11 = 1;
        let mut sq = Sqe::new(Opcode(0x01));
        sq.prp1 = self.iova(IOSQ);
        sq.cdw10 = q;
        sq.cdw11 = 1 << 16 | 1;
        for (what, s) in [("Create I/O CQ", cq), ("Create I/O SQ", sq)] {
            let c = self.raw_admin(&s)?;
            if c.status != 0 {
                return Err(fail(format!("{what}: status {:#06x}", c.status)));
            }
        }
        Ok(())
    }

    /// Bytes one command may move.
    pub fn max_transfer(&self) -> usize {
        self.max_transfer
    }

    /// Sets PRP1/PRP2 for `len` bytes in data slot `slot`.
    fn prps(&mut self, sqe: &mut Sqe, slot: usize, len: usize) {
        let base = DATA + slot * SLOT_BYTES;
        sqe.prp1 = self.iova(base);
        let pages = len.div_ceil(PAGE);
        sqe.prp2 = match pages {
            0 | 1 => 0,
            2 => self.iova(base + PAGE),
            _ => {
                let list = PRP_LISTS + slot * PAGE;
                let entries: Vec<u8> = (1..pages)
                    .flat_map(|i| self.iova(base + i * PAGE).to_le_bytes())
                    .collect();
                self.pci.dma_put(list, &entries);
                self.iova(list)
            }
        };
    }

    fn push(&mut self, admin: bool, sqe: &Sqe) -> u16 {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        let mut s = *sqe;
        s.set_cid(cid);
        let dstrd = self.dstrd;
        let q = if admin { &mut self.admin } else { &mut self.io };
        let (at, qid) = (q.sq + usize::from(q.tail) * 64, q.qid);
        q.tail = (q.tail + 1) % q.entries;
        let tail = q.tail;
        self.pci.dma_put(at, &s.to_bytes());
        // The SQE is in memory before the doorbell tells the device.
        fence(Ordering::SeqCst);
        self.pci
            .write32(regs::sq_tail_doorbell(qid, dstrd), u32::from(tail));
        cid
    }

    /// The next completion of a queue (polling its phase tag).
    fn pop(&mut self, admin: bool) -> Result<proto::Cqe, NvmeError> {
        let start = Instant::now();
        let dstrd = self.dstrd;
        loop {
            let q = if admin { &self.admin } else { &self.io };
            let (at, phase, qid) = (q.cq + usize::from(q.head) * 16, q.phase, q.qid);
            // The phase tag first: the device may still be writing the
            // entry, so the rest is read only once the tag says it is new.
            let mut status = [0u8; 2];
            self.pci.dma_get(at + 14, &mut status);
            if (status[0] & 1 == 1) == phase {
                fence(Ordering::SeqCst);
                let mut raw = [0u8; 16];
                self.pci.dma_get(at, &mut raw);
                let cqe = proto::Cqe::from_bytes(&raw).map_err(|e| fail(e.to_string()))?;
                let q = if admin { &mut self.admin } else { &mut self.io };
                q.head = (q.head + 1) % q.entries;
                if q.head == 0 {
                    q.phase = !q.phase;
                }
                let head = q.head;
                self.pci
                    .write32(regs::cq_head_doorbell(qid, dstrd), u32::from(head));
                return Ok(cqe);
            }
            let timeout = self.command_timeout;
            if start.elapsed() > timeout {
                if self.resetting {
                    return Err(fail(format!(
                        "no completion on queue {qid} within {timeout:?} during a controller reset"
                    )));
                }
                // A stuck command: reset the controller (queues rebuilt
                // empty) so the next command starts clean, and fail this one.
                self.resets += 1;
                self.resetting = true;
                let reset = self.reset_and_enable(COMMAND_TIMEOUT);
                self.resetting = false;
                return Err(fail(format!(
                    "no completion on queue {qid} within {timeout:?} (stuck command); controller reset: {}",
                    match reset {
                        Ok(()) => "done".to_string(),
                        Err(e) => format!("failed: {e}"),
                    }
                )));
            }
            std::hint::spin_loop();
        }
    }

    fn raw_admin(&mut self, sqe: &Sqe) -> Result<Completion, NvmeError> {
        let cid = self.push(true, sqe);
        let cqe = self.pop(true)?;
        if cqe.cid != cid {
            return Err(fail(format!(
                "completion for cid {}, expected {cid}",
                cqe.cid
            )));
        }
        Ok(Completion {
            status: cqe.status >> 1,
            dw0: cqe.dw0,
        })
    }

    /// Runs one command to completion with its data in slot 0.
    fn run(&mut self, admin: bool, sqe: &Sqe, data: Data<'_>) -> Result<Completion, NvmeError> {
        let len = data.len();
        if len > self.max_transfer {
            return Err(NvmeError::TooLarge {
                len,
                limit: self.max_transfer,
            });
        }
        let mut s = *sqe;
        if len > 0 {
            self.prps(&mut s, 0, len);
        }
        if let Data::Out(b) = &data {
            self.pci.dma_put(DATA, b);
        }
        let cid = self.push(admin, &s);
        let cqe = self.pop(admin)?;
        if cqe.cid != cid {
            return Err(fail(format!(
                "completion for cid {}, expected {cid}",
                cqe.cid
            )));
        }
        if let Data::In(b) = data {
            self.pci.dma_get(DATA, b);
        }
        Ok(Completion {
            status: cqe.status >> 1,
            dw0: cqe.dw0,
        })
    }

    /// Reads `count` commands of `size` bytes (LBAs from `lba`, `lba_size`
    /// bytes each) with up to `depth` in flight; returns the seconds taken.
    pub fn bench_reads(
        &mut self,
        depth: usize,
        count: usize,
        size: usize,
        lba_size: usize,
    ) -> Result<f64, NvmeError> {
        let depth = depth.clamp(1, SLOTS.min(usize::from(IO_ENTRIES) - 1));
        let start = Instant::now();
        let (mut next, mut done, mut inflight) = (0usize, 0usize, 0usize);
        let mut free: Vec<usize> = (0..depth).collect();
        let mut slot_of = std::collections::HashMap::new();
        while done < count {
            while next < count && inflight < depth {
                let slot = free.pop().ok_or_else(|| fail("no free slot"))?;
                let lba = ((next * size) % (32 << 20)) / lba_size;
                let mut sqe = Sqe::new(Opcode(0x02));
                sqe.nsid = self.nsid;
                sqe.cdw10 = lba as u32;
                sqe.cdw12 = (size / lba_size - 1) as u32;
                self.prps(&mut sqe, slot, size);
                let cid = self.push(false, &sqe);
                slot_of.insert(cid, slot);
                next += 1;
                inflight += 1;
            }
            let cqe = self.pop(false)?;
            if cqe.status >> 1 != 0 {
                return Err(fail(format!("bench read: status {:#06x}", cqe.status >> 1)));
            }
            let slot = slot_of
                .remove(&cqe.cid)
                .ok_or_else(|| fail("completion for an unknown cid"))?;
            free.push(slot);
            done += 1;
            inflight -= 1;
        }
        Ok(start.elapsed().as_secs_f64())
    }
}

impl<P: Pci> Passthru for UserNvme<P> {
    fn passthru(
        &mut self,
        admin: bool,
        cmd: &mut PassthruCmd,
        data: Data<'_>,
    ) -> Result<Completion, NvmeError> {
        let sqe = cmd.to_sqe();
        let c = self.run(admin, &sqe, data)?;
        cmd.result = c.dw0;
        Ok(c)
    }

    fn max_transfer(&self) -> usize {
        self.max_transfer
    }

    fn nsid(&self) -> u32 {
        self.nsid
    }
}
