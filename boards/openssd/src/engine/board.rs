//! [`BoardEngine`]: the [`Engine`] of an OpenSSD board — today the engine
//! model in software ([`SoftEngine`]), with the hardware engine probed and
//! held for the streaming path.
//!
//! Why software: the four `Engine` operations hand the engine rows that are
//! already in DRAM (the filtered pages the NAND driver returned), while the
//! hardware engine takes its data only from streams: page beats from the
//! NAND controllers into the channel filters, the query from a DMA port,
//! the outputs to a DMA port. The AXI4-Lite slave carries control only. The
//! OpenSSD block designs have no path yet from the NAND storage
//! controllers' read data into the engine nor a DMA block for its query
//! and output ports, so nothing a CPU can drive feeds the kernels. Until
//! that path exists (and the firmware core schedules whole jobs onto it),
//! every operation runs in software, bit-exact by construction (it is
//! `attention::engine`). Even then some work stays in software: the
//! SparF approximate-score pass has no hardware kernel, and the argtopk
//! unit takes k ≤ K_MAX (64 in the synthesized engine; CONFIG says).
//!
//! The hardware engine is still probed at start-up (ID, VERSION, CONFIG)
//! so the firmware knows whether the bitstream carries it, and
//! [`BoardEngine::hardware`] hands the register driver to code that drives
//! the streaming path.

use alloc::vec::Vec;

use firmware::hal::{Engine, EngineWork, LogitJob, SoftEngine, WeightedSumJob};

use super::driver::HwEngine;
use super::error::EngineError;
use crate::mmio::Regs;

/// Why an operation runs in software.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The engine answered its probe, but no data path reaches its
    /// kernels from DRAM (see the module docs).
    NoStreamPath,
    /// No engine answered at the engine's address.
    NotPresent(EngineError),
}

/// The board's engine; see the module docs.
#[derive(Debug)]
pub struct BoardEngine<R> {
    hw: Option<HwEngine<R>>,
    fallback: Fallback,
    soft: SoftEngine,
}

impl<R: Regs> BoardEngine<R> {
    /// Probes the engine behind `regs`.
    pub fn probe(regs: R) -> Self {
        match HwEngine::probe(regs) {
            Ok(hw) => Self {
                hw: Some(hw),
                fallback: Fallback::NoStreamPath,
                soft: SoftEngine::default(),
            },
            Err(e) => Self {
                hw: None,
                fallback: Fallback::NotPresent(e),
                soft: SoftEngine::default(),
            },
        }
    }

    /// The hardware engine, if the bitstream has one.
    pub fn hardware(&mut self) -> Option<&mut HwEngine<R>> {
        self.hw.as_mut()
    }

    /// Why the `Engine` operations run in software.
    pub fn fallback(&self) -> Fallback {
        self.fallback
    }

    /// Work done in software so far (for cycle estimates and statistics).
    pub fn work(&self) -> EngineWork {
        self.soft.work
    }
}

impl<R> Engine for BoardEngine<R> {
    fn logits(&mut self, job: LogitJob<'_>) {
        self.soft.logits(job);
    }

    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]) {
        self.soft.softmax(logits, probs);
    }

    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) {
        self.soft.argtopk(keys, k, out);
    }

    fn weighted_sum(&mut self, job: WeightedSumJob<'_>) {
        self.soft.weighted_sum(job);
    }
}
