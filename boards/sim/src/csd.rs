//! [`SimCsd`]: the simulated drive as a host sees it — host memory, the
//! controller registers that matter (admin queue set-up, doorbells, the
//! fatal flag) and a `process` call that lets the drive work until idle.
//! The host driver's in-process transport is written against this type.

use firmware::Device;
use firmware::hal::{Clock, TimeBreakdown};

use crate::board::SimBoard;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::host_memory::HostMemory;
use crate::nand::NandCounters;
use crate::pcie::PcieCounters;

/// A simulated InstCSD: the firmware core on a [`SimBoard`].
#[derive(Debug)]
pub struct SimCsd {
    dev: Device<SimBoard>,
}

impl SimCsd {
    /// Powers on a drive built from `cfg` (controller not yet enabled).
    pub fn new(cfg: SimConfig) -> Result<Self, SimError> {
        cfg.geometry
            .validate()
            .map_err(|e| SimError::Config(format!("geometry {:?}: {e:?}", cfg.geometry)))?;
        let board = SimBoard::new(&cfg);
        let mut dev = if cfg.journal {
            Device::boot(board, cfg.device_config())
        } else {
            Device::new(board, cfg.device_config())
        }
        .map_err(|e| SimError::Device(format!("{e:?}")))?;
        if let Some(gc) = cfg.gc {
            dev.set_gc(gc)
                .map_err(|e| SimError::Config(format!("{e:?}")))?;
        }
        Ok(Self { dev })
    }

    /// Cuts the drive's power after `nand_ops` more flash commands (see
    /// `NandSim::cut_power_after`); commands that need flash from then on
    /// fail.
    pub fn cut_power_after(&mut self, nand_ops: u64) {
        self.dev.board_mut().nand_mut().cut_power_after(nand_ops);
    }

    /// Flash commands issued so far (what `cut_power_after` counts).
    pub fn nand_ops(&self) -> u64 {
        self.dev.board().nand().ops()
    }

    /// Whether the power is cut.
    pub fn power_lost(&self) -> bool {
        self.dev.board().nand().power_lost()
    }

    /// Power back on: a new board (host memory, queues, DRAM all fresh)
    /// around this one's flash, booted through the journal (`cfg.journal`
    /// should be set, as it was for the first life).
    pub fn restart(self, cfg: SimConfig) -> Result<Self, SimError> {
        let nand = self.dev.into_board().into_nand();
        let board = SimBoard::with_nand(&cfg, nand);
        let mut dev = Device::boot(board, cfg.device_config())
            .map_err(|e| SimError::Device(format!("{e:?}")))?;
        if let Some(gc) = cfg.gc {
            dev.set_gc(gc)
                .map_err(|e| SimError::Config(format!("{e:?}")))?;
        }
        Ok(Self { dev })
    }

    /// Host memory, where the host puts queues and buffers.
    pub fn host_memory(&mut self) -> &mut HostMemory {
        self.dev.board_mut().host_memory()
    }

    /// Sets the admin queues (`entries` each, 4 KiB aligned, contiguous)
    /// and enables the controller (AQA/ASQ/ACQ, then CC.EN = 1).
    pub fn enable(&mut self, asq: u64, acq: u64, entries: u16) -> Result<(), SimError> {
        self.dev.board_mut().queues_mut().enable(asq, acq, entries)
    }

    /// CC.EN = 0: controller reset (queues dropped; sequences and flash
    /// kept). Enable again with [`Self::enable`].
    pub fn disable(&mut self) {
        self.dev.board_mut().queues_mut().disable();
    }

    /// Fault hook: the controller hangs until the host resets it (no
    /// command is fetched, so none completes).
    pub fn stall(&mut self) {
        self.dev.board_mut().queues_mut().stall();
    }

    /// SQ `qid` tail doorbell.
    pub fn ring_sq(&mut self, qid: u16, tail: u16) {
        self.dev.board_mut().queues_mut().ring_sq(qid, tail);
    }

    /// CQ `qid` head doorbell.
    pub fn ring_cq(&mut self, qid: u16, head: u16) {
        self.dev.board_mut().queues_mut().ring_cq(qid, head);
    }

    /// Runs the firmware until no command is pending; returns commands
    /// served (queue-management commands included). A controller in fatal
    /// state serves nothing: check [`Self::fatal`].
    pub fn process(&mut self) -> Result<usize, SimError> {
        let before = self.dev.board().queues().served_internally();
        let by_firmware = self
            .dev
            .run_until_idle()
            .map_err(|e| SimError::Device(format!("{e:?}")))?;
        let internal = self.dev.board().queues().served_internally() - before;
        Ok(by_firmware + internal as usize)
    }

    /// Virtual time since power-on, ns.
    pub fn now_ns(&self) -> u64 {
        self.dev.board().now_ns()
    }

    /// The host sends nothing until `t_ns` (virtual): the drive does its
    /// background work (GC steps while its FTL wants them, timed like any
    /// flash work), then waits idle for the rest. Returns the idle part.
    pub fn idle_until(&mut self, t_ns: u64) -> u64 {
        while self.now_ns() < t_ns && !self.power_lost() && self.dev.idle_step() {}
        let before = self.dev.board().idle_ns();
        self.dev.board_mut().idle_until(t_ns);
        self.dev.board().idle_ns() - before
    }

    /// Virtual time spent idle so far (see [`Self::idle_until`]).
    pub fn idle_ns(&self) -> u64 {
        self.dev.board().idle_ns()
    }

    /// Successful erases of each block so far, the flash's own count
    /// (it survives power cuts, unlike the FTL's), die by die.
    pub fn erase_counts(&self) -> &[u32] {
        self.dev.board().nand().array().erase_counts()
    }

    /// Where the virtual time went.
    pub fn breakdown(&self) -> TimeBreakdown {
        self.dev.board().breakdown()
    }

    /// Flash activity.
    pub fn nand_counters(&self) -> NandCounters {
        self.dev.board().nand().counters()
    }

    /// NAND faults injected so far (see `SimConfig::faults`).
    pub fn fault_counters(&self) -> crate::nand::FaultCounters {
        self.dev.board().nand().fault_counters()
    }

    /// Host link traffic.
    pub fn pcie_counters(&self) -> PcieCounters {
        self.dev.board().pcie().counters()
    }

    /// Copies `len` bytes between GPU memory and host DRAM on the GPU's
    /// link, in virtual time (see [`SimBoard::gpu_copy`]).
    pub fn gpu_copy(&mut self, from: u64, to: u64, len: usize) -> Result<(), SimError> {
        self.dev.board_mut().gpu_copy(from, to, len)
    }

    /// Bounce copies so far.
    pub fn copy_engine(&self) -> &crate::pcie::CopyEngine {
        self.dev.board().copy_engine()
    }

    /// Bytes moved through host DRAM and GPU memory (host code, device
    /// DMA and copies).
    pub fn host_memory_counters(&self) -> crate::host_memory::HostMemoryCounters {
        self.dev.board().memory().counters()
    }

    /// Controller fatal status (CSTS.CFS).
    pub fn fatal(&self) -> bool {
        self.dev.board().queues().fatal()
    }

    /// The firmware core.
    pub fn device(&self) -> &Device<SimBoard> {
        &self.dev
    }

    /// The firmware core, mutably.
    pub fn device_mut(&mut self) -> &mut Device<SimBoard> {
        &mut self.dev
    }
}
