//! [`Phase`]: the counters and virtual time of one phase of work (e.g. one
//! decode step) on an array of drives.
//!
//! Counters come from the devices' statistics log pages. Reading a log page
//! itself moves bytes over PCIe, so [`Phase::begin`] reads it twice back to
//! back and subtracts the cost of one read from the phase.

use std::time::Instant;

use proto::StatsLog;

use crate::array::CsdArray;
use crate::csd::CsdError;
use crate::transport::{DeviceTime, Transport};

/// What one phase did, summed over devices (time: the slowest device).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseCounters {
    /// Virtual device time in ns: max over devices of their clock advance.
    pub virtual_ns: u64,
    /// Flash pages read.
    pub flash_pages_read: u64,
    /// Flash pages skipped by sparse selection.
    pub flash_pages_skipped: u64,
    /// Bytes the NAND controllers handed to the engine.
    pub engine_bytes: u64,
    /// Bytes over the channel buses.
    pub channel_bus_bytes: u64,
    /// Elements dropped by the NFC filter.
    pub elements_filtered: u64,
    /// PCIe bytes in both directions.
    pub pcie_bytes: u64,
    /// Flash pages programmed.
    pub flash_pages_programmed: u64,
    /// Virtual busy time of the resources, summed over devices (ns). They
    /// overlap each other: they break the work down, not the latency.
    pub busy: Busy,
}

/// Virtual busy time per resource (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Busy {
    /// NAND dies: tR, tPROG, tBERS, summed over dies.
    pub flash_ns: u64,
    /// Channel buses, summed over channels.
    pub bus_ns: u64,
    /// The attention engine.
    pub engine_ns: u64,
    /// PCIe DMA.
    pub dma_ns: u64,
}

impl Busy {
    fn of(t: Option<DeviceTime>) -> Self {
        t.map_or(Self::default(), |t| Self {
            flash_ns: t.flash_busy_ns,
            bus_ns: t.bus_busy_ns,
            engine_ns: t.engine_busy_ns,
            dma_ns: t.dma_busy_ns,
        })
    }

    fn since(&self, start: &Self) -> Self {
        Self {
            flash_ns: self.flash_ns.saturating_sub(start.flash_ns),
            bus_ns: self.bus_ns.saturating_sub(start.bus_ns),
            engine_ns: self.engine_ns.saturating_sub(start.engine_ns),
            dma_ns: self.dma_ns.saturating_sub(start.dma_ns),
        }
    }

    fn add(&mut self, other: &Self) {
        self.flash_ns += other.flash_ns;
        self.bus_ns += other.bus_ns;
        self.engine_ns += other.engine_ns;
        self.dma_ns += other.dma_ns;
    }
}

impl PhaseCounters {
    /// Adds `other` (time: max).
    pub fn add(&mut self, other: &PhaseCounters) {
        self.virtual_ns = self.virtual_ns.max(other.virtual_ns);
        self.flash_pages_read += other.flash_pages_read;
        self.flash_pages_skipped += other.flash_pages_skipped;
        self.engine_bytes += other.engine_bytes;
        self.channel_bus_bytes += other.channel_bus_bytes;
        self.elements_filtered += other.elements_filtered;
        self.pcie_bytes += other.pcie_bytes;
        self.flash_pages_programmed += other.flash_pages_programmed;
        self.busy.add(&other.busy);
    }
}

/// A phase being measured.
#[derive(Debug)]
pub struct Phase {
    start: Vec<(StatsLog, u64, Busy)>,
    /// PCIe bytes one stats read costs, per device.
    read_cost: Vec<u64>,
    wall: Instant,
}

fn pcie(s: &StatsLog) -> u64 {
    s.pcie_bytes_in + s.pcie_bytes_out
}

impl Phase {
    /// Snapshots every device.
    pub fn begin<T: Transport>(array: &mut CsdArray<T>) -> Result<Self, CsdError> {
        let mut start = Vec::new();
        let mut read_cost = Vec::new();
        for dev in array.devices_mut() {
            let first = dev.stats()?;
            let second = dev.stats()?;
            read_cost.push(pcie(&second).saturating_sub(pcie(&first)));
            let time = dev.device_time();
            let now = time.map_or(0, |t| t.now_ns);
            start.push((second, now, Busy::of(time)));
        }
        Ok(Self {
            start,
            read_cost,
            wall: Instant::now(),
        })
    }

    /// Ends the phase: wall time in ms and the counters.
    pub fn end<T: Transport>(
        self,
        array: &mut CsdArray<T>,
    ) -> Result<(f64, PhaseCounters), CsdError> {
        let wall_ms = self.wall.elapsed().as_secs_f64() * 1e3;
        let mut total = PhaseCounters::default();
        for ((dev, (s0, t0, b0)), cost) in array
            .devices_mut()
            .iter_mut()
            .zip(&self.start)
            .zip(&self.read_cost)
        {
            let time = dev.device_time();
            let t1 = time.map_or(0, |t| t.now_ns);
            let s1 = dev.stats()?;
            let d = |a: u64, b: u64| a.saturating_sub(b);
            total.add(&PhaseCounters {
                virtual_ns: d(t1, *t0),
                flash_pages_read: d(s1.flash_pages_read, s0.flash_pages_read),
                flash_pages_skipped: d(s1.flash_pages_skipped, s0.flash_pages_skipped),
                engine_bytes: d(s1.engine_bytes, s0.engine_bytes),
                channel_bus_bytes: d(s1.channel_bus_bytes, s0.channel_bus_bytes),
                elements_filtered: d(s1.elements_filtered, s0.elements_filtered),
                pcie_bytes: d(d(pcie(&s1), pcie(s0)), *cost),
                flash_pages_programmed: d(s1.flash_pages_programmed, s0.flash_pages_programmed),
                busy: Busy::of(time).since(b0),
            });
        }
        Ok((wall_ms, total))
    }
}
