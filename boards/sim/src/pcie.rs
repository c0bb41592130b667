//! The PCIe link between host and drive, as a timed DMA resource.
//!
//! Every transfer the drive makes over the link — SQE fetches (64 B), PRP
//! list reads, command data in either direction, CQE posts (16 B) — is one
//! transaction on a single DMA resource: it starts when both the caller and
//! the link are free and lasts `latency_ns + bytes / effective bandwidth`.
//! Both directions share that one resource (model choice: one DMA engine,
//! no overlap of reads and writes; conservative for a full-duplex link).

use crate::clock::{Resource, VirtualClock, transfer_ns};
use crate::error::SimError;
use crate::host_memory::{HostMemory, is_gpu};

/// Timing parameters of the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieModel {
    /// Raw link rate after line coding, bytes/s. Default PCIe Gen3 x4, the
    /// Daisyplus OpenSSD host link (OpenSSD Daisyplus board: PCIe Gen3 x4): 8 GT/s × 4
    /// lanes × 128/130 ÷ 8 = 3 938 461 538 B/s.
    pub raw_bytes_per_s: u64,
    /// TLP payload size in bytes. Model choice: 256 B max payload.
    pub tlp_payload: u32,
    /// Per-TLP overhead in bytes (header, sequence number, LCRC, framing).
    /// Model choice: 24 B, giving ≈ 0.914 efficiency with 256 B payloads.
    pub tlp_overhead: u32,
    /// Fixed cost of one DMA transaction in ns (request turnaround, DMA
    /// engine set-up). Model choice: 500 ns.
    pub latency_ns: u64,
}

impl Default for PcieModel {
    fn default() -> Self {
        Self::gen3_x4()
    }
}

impl PcieModel {
    /// PCIe Gen3 x4 (Daisyplus OpenSSD).
    pub const fn gen3_x4() -> Self {
        Self {
            raw_bytes_per_s: 8_000_000_000 * 4 / 8 * 128 / 130,
            tlp_payload: 256,
            tlp_overhead: 24,
            latency_ns: 500,
        }
    }

    /// PCIe Gen4 x16 (a GPU's host link): 16 GT/s × 16 lanes × 128/130
    /// ÷ 8 = 31 507 692 307 B/s, the same TLP model.
    pub const fn gen4_x16() -> Self {
        Self {
            raw_bytes_per_s: 16_000_000_000 * 16 / 8 * 128 / 130,
            tlp_payload: 256,
            tlp_overhead: 24,
            latency_ns: 500,
        }
    }

    /// Payload bytes per second after TLP overhead.
    pub fn effective_bytes_per_s(&self) -> u64 {
        let tlp = u64::from(self.tlp_payload) + u64::from(self.tlp_overhead);
        if tlp == 0 {
            return self.raw_bytes_per_s;
        }
        self.raw_bytes_per_s * u64::from(self.tlp_payload) / tlp
    }

    /// Duration of one transaction moving `bytes`.
    pub fn transaction_ns(&self, bytes: usize) -> u64 {
        self.latency_ns + transfer_ns(bytes as u64, self.effective_bytes_per_s())
    }
}

/// Traffic over the link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcieCounters {
    /// Bytes host → device (SQEs, PRP lists, command data).
    pub bytes_in: u64,
    /// Bytes device → host (command data, CQEs).
    pub bytes_out: u64,
    /// Transactions host → device.
    pub reads: u64,
    /// Transactions device → host.
    pub writes: u64,
    /// Link busy time in ns.
    pub busy_ns: u64,
    /// Of `bytes_in`: read from GPU memory, peer to peer through the switch.
    pub p2p_bytes_in: u64,
    /// Of `bytes_out`: written to GPU memory, peer to peer.
    pub p2p_bytes_out: u64,
}

impl PcieCounters {
    /// Bytes the device moved to or from host DRAM (everything that was
    /// not peer to peer: data, SQEs, CQEs, PRP lists).
    pub const fn host_dram_bytes(&self) -> u64 {
        self.bytes_in + self.bytes_out - self.p2p_bytes_in - self.p2p_bytes_out
    }
}

/// The GPU side of the model: the PCIe switch the GPU and the drive share,
/// and the GPU's own link for copies through host memory (the bounce).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuModel {
    /// Extra latency of a peer-to-peer transaction through the switch, ns.
    /// Model choice (assumption): 150 ns per transaction; the payload
    /// moves at the drive's own link rate, the narrower of the two.
    pub switch_latency_ns: u64,
    /// The GPU's link to the host, for bounce copies. Default PCIe Gen4
    /// x16 (the paper's A6000 host link).
    pub link: PcieModel,
    /// Fixed cost of one host ↔ GPU copy (a `cudaMemcpy` call and its
    /// completion). Model choice (assumption): 10 µs.
    pub copy_latency_ns: u64,
}

impl Default for GpuModel {
    fn default() -> Self {
        Self {
            switch_latency_ns: 150,
            link: PcieModel::gen4_x16(),
            copy_latency_ns: 10_000,
        }
    }
}

/// Copies between GPU memory and host DRAM on the GPU's link (one copy
/// engine: copies serialize).
#[derive(Clone, Debug, Default)]
pub struct CopyEngine {
    model: GpuModel,
    busy: Resource,
    /// Bytes copied.
    pub bytes: u64,
    /// Copies made.
    pub copies: u64,
}

impl CopyEngine {
    /// A copy engine with `model`'s timing.
    pub fn new(model: GpuModel) -> Self {
        Self {
            model,
            busy: Resource::default(),
            bytes: 0,
            copies: 0,
        }
    }

    /// One copy of `bytes` starting no earlier than `now`; returns its end.
    pub fn copy(&mut self, now: u64, bytes: usize) -> u64 {
        self.bytes += bytes as u64;
        self.copies += 1;
        let d = self.model.copy_latency_ns
            + transfer_ns(bytes as u64, self.model.link.effective_bytes_per_s());
        self.busy.reserve(now, d).1
    }

    /// Busy time, ns.
    pub fn busy_ns(&self) -> u64 {
        self.busy.busy_ns()
    }

    /// The model.
    pub fn model(&self) -> &GpuModel {
        &self.model
    }
}

/// The link: its model, its busy time and its counters.
#[derive(Clone, Debug, Default)]
pub struct PcieLink {
    model: PcieModel,
    dma: Resource,
    counters: PcieCounters,
    switch_latency_ns: u64,
}

impl PcieLink {
    /// A link with `model`'s timing.
    pub fn new(model: PcieModel) -> Self {
        Self {
            model,
            dma: Resource::default(),
            counters: PcieCounters::default(),
            switch_latency_ns: GpuModel::default().switch_latency_ns,
        }
    }

    /// Sets the switch latency of peer-to-peer transactions.
    pub fn set_switch_latency(&mut self, ns: u64) {
        self.switch_latency_ns = ns;
    }

    /// The device reads `bytes` of GPU memory peer to peer.
    pub fn read_p2p(&mut self, now: u64, bytes: usize) -> u64 {
        self.counters.p2p_bytes_in += bytes as u64;
        let end = self.read(now, bytes);
        self.switch(end)
    }

    /// The device writes `bytes` of GPU memory peer to peer.
    pub fn write_p2p(&mut self, now: u64, bytes: usize) -> u64 {
        self.counters.p2p_bytes_out += bytes as u64;
        let end = self.write(now, bytes);
        self.switch(end)
    }

    /// The switch delays the transaction's end; the link is free for the
    /// next one meanwhile (transactions pipeline through the switch).
    fn switch(&mut self, end: u64) -> u64 {
        end + self.switch_latency_ns
    }

    /// The device reads `bytes` from host memory, starting no earlier than
    /// `now`; returns when the data has arrived.
    pub fn read(&mut self, now: u64, bytes: usize) -> u64 {
        self.counters.bytes_in += bytes as u64;
        self.counters.reads += 1;
        self.charge(now, bytes)
    }

    /// The device writes `bytes` to host memory, starting no earlier than
    /// `now`; returns when the write is done.
    pub fn write(&mut self, now: u64, bytes: usize) -> u64 {
        self.counters.bytes_out += bytes as u64;
        self.counters.writes += 1;
        self.charge(now, bytes)
    }

    /// Traffic so far.
    pub fn counters(&self) -> PcieCounters {
        PcieCounters {
            busy_ns: self.dma.busy_ns(),
            ..self.counters
        }
    }

    /// The timing model.
    pub fn model(&self) -> &PcieModel {
        &self.model
    }

    fn charge(&mut self, now: u64, bytes: usize) -> u64 {
        self.dma.reserve(now, self.model.transaction_ns(bytes)).1
    }
}

/// A timed DMA port: host memory reached over the link, advancing the
/// virtual clock to the end of each transfer (the caller uses the data
/// next). A failed access (unmapped address) moves nothing and costs nothing.
#[derive(Debug)]
pub struct Dma<'a> {
    /// Host memory.
    pub mem: &'a mut HostMemory,
    /// The link that charges the time.
    pub link: &'a mut PcieLink,
    /// The board clock.
    pub clock: &'a mut VirtualClock,
}

impl Dma<'_> {
    /// Device reads host memory (GPU memory: peer to peer).
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), SimError> {
        self.mem.read(addr, buf)?;
        let now = self.clock.now_ns();
        let end = if is_gpu(addr) {
            self.link.read_p2p(now, buf.len())
        } else {
            self.link.read(now, buf.len())
        };
        self.clock.advance_to(end);
        Ok(())
    }

    /// Device writes host memory (GPU memory: peer to peer).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        self.mem.write(addr, data)?;
        let now = self.clock.now_ns();
        let end = if is_gpu(addr) {
            self.link.write_p2p(now, data.len())
        } else {
            self.link.write(now, data.len())
        };
        self.clock.advance_to(end);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gen3_x4_numbers() {
        let m = PcieModel::gen3_x4();
        assert_eq!(m.raw_bytes_per_s, 3_938_461_538);
        let eff = m.effective_bytes_per_s();
        assert!((3_590_000_000..3_610_000_000).contains(&eff), "{eff}");
        // 4 KiB: 500 ns + ~1.14 µs.
        let t = m.transaction_ns(4096);
        assert!((1_630..1_650).contains(&t), "{t}");
        assert_eq!(m.transaction_ns(0), 500);
    }

    #[test]
    fn transactions_serialize_and_count() {
        let mut l = PcieLink::new(PcieModel::default());
        let a = l.read(0, 64);
        let b = l.write(0, 16);
        assert!(b > a, "second transaction waits for the first");
        assert_eq!(b, a + l.model().transaction_ns(16));
        let c = l.read(10_000_000, 4096);
        assert_eq!(c, 10_000_000 + l.model().transaction_ns(4096));
        let k = l.counters();
        assert_eq!(
            (k.bytes_in, k.bytes_out, k.reads, k.writes),
            (64 + 4096, 16, 2, 1)
        );
        assert_eq!(k.busy_ns, a + (b - a) + (c - 10_000_000));
    }

    #[test]
    fn dma_port_advances_clock_and_fails_cleanly() {
        let mut mem = HostMemory::new();
        let mut link = PcieLink::new(PcieModel::default());
        let mut clock = VirtualClock::new();
        let p = mem.alloc(4096)[0];
        let mut dma = Dma {
            mem: &mut mem,
            link: &mut link,
            clock: &mut clock,
        };
        dma.write(p, &[7; 64]).unwrap();
        let t = dma.clock.now_ns();
        assert_eq!(t, PcieModel::default().transaction_ns(64));
        assert!(matches!(
            dma.read(p + 8192, &mut [0; 4]),
            Err(SimError::BadAddress(_))
        ));
        assert_eq!(dma.clock.now_ns(), t, "failed DMA costs nothing");
        assert_eq!(link.counters().bytes_out, 64);
    }

    #[test]
    fn gpu_memory_is_reached_peer_to_peer() {
        let mut mem = HostMemory::new();
        let mut link = PcieLink::new(PcieModel::default());
        let mut clock = VirtualClock::new();
        let g = mem.alloc_gpu(8192);
        let h = mem.alloc(4096)[0];
        let mut dma = Dma {
            mem: &mut mem,
            link: &mut link,
            clock: &mut clock,
        };
        dma.write(g, &[1; 4096]).unwrap();
        let t = dma.clock.now_ns();
        let m = PcieModel::default();
        assert_eq!(
            t,
            m.transaction_ns(4096) + GpuModel::default().switch_latency_ns
        );
        dma.read(h, &mut [0; 64]).unwrap();
        let k = link.counters();
        assert_eq!((k.p2p_bytes_out, k.p2p_bytes_in), (4096, 0));
        assert_eq!(k.host_dram_bytes(), 64);
        assert_eq!(mem.counters().gpu_bytes_written, 4096);
        assert_eq!(mem.counters().bytes_read, 64);
        // Gen4 x16 for the GPU's own link.
        assert!(PcieModel::gen4_x16().effective_bytes_per_s() > 28_000_000_000);
        let mut ce = CopyEngine::new(GpuModel::default());
        let e1 = ce.copy(0, 1 << 20);
        let e2 = ce.copy(0, 0);
        assert!(e1 > 10_000 && e2 == e1 + 10_000, "copies serialize");
        assert_eq!((ce.bytes, ce.copies), (1 << 20, 2));
    }
}
