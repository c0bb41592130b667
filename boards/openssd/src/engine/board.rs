//! [`BoardEngine`]: the [`Engine`] of an OpenSSD board — the top-k on the
//! hardware engine's top-k unit when the bitstream has one, the other
//! operations in the engine model in software ([`SoftEngine`]).
//!
//! The top-k runs on the hardware for every k and up to the unit's key
//! capacity (CONFIG; 32K in the synthesized engine): the keys go in
//! through the key registers and the result comes back through the
//! result registers ([`HwEngine::top_k`]), bit for bit `argtopk`. More keys
//! than the unit holds, a 1.0 engine (no key registers) or a driver error
//! fall back to software, which gives the same indices; the counters say
//! how often ([`BoardEngine::topk_counts`]).
//!
//! Why the rest is in software: the other `Engine` operations hand the engine rows that are
//! already in DRAM (the filtered pages the NAND driver returned), while the
//! hardware engine takes its data only from streams: page beats from the
//! NAND controllers into the channel filters, the query from a DMA port,
//! the outputs to a DMA port. The AXI4-Lite slave carries control only. The
//! OpenSSD block designs have no path yet from the NAND storage
//! controllers' read data into the engine nor a DMA block for its query
//! and output ports, so nothing a CPU can drive feeds the kernels. Until
//! that path exists (and the firmware core schedules whole jobs onto it),
//! every operation runs in software, bit-exact by construction (it is
//! `attention::engine`). Even then the SparF approximate-score pass stays
//! in software: it has no hardware kernel.
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

/// How the top-k selections ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopKCounts {
    /// On the hardware unit.
    pub hardware: u64,
    /// In software: no unit, or more keys than it holds.
    pub software: u64,
    /// In software after the driver failed.
    pub errors: u64,
    /// The last driver error.
    pub last_error: Option<EngineError>,
}

/// The board's engine; see the module docs.
#[derive(Debug)]
pub struct BoardEngine<R> {
    hw: Option<HwEngine<R>>,
    fallback: Fallback,
    soft: SoftEngine,
    topk: TopKCounts,
}

impl<R: Regs> BoardEngine<R> {
    /// Probes the engine behind `regs`.
    pub fn probe(regs: R) -> Self {
        match HwEngine::probe(regs) {
            Ok(hw) => Self {
                hw: Some(hw),
                fallback: Fallback::NoStreamPath,
                soft: SoftEngine::default(),
                topk: TopKCounts::default(),
            },
            Err(e) => Self {
                hw: None,
                fallback: Fallback::NotPresent(e),
                soft: SoftEngine::default(),
                topk: TopKCounts::default(),
            },
        }
    }

    /// The hardware engine, if the bitstream has one.
    pub fn hardware(&mut self) -> Option<&mut HwEngine<R>> {
        self.hw.as_mut()
    }

    /// How the top-k selections ran.
    pub fn topk_counts(&self) -> TopKCounts {
        self.topk
    }

    /// Why the `Engine` operations other than the top-k run in software.
    pub fn fallback(&self) -> Fallback {
        self.fallback
    }

    /// Work done in software so far (for cycle estimates and statistics).
    pub fn work(&self) -> EngineWork {
        self.soft.work
    }
}

impl<R: Regs> Engine for BoardEngine<R> {
    fn logits(&mut self, job: LogitJob<'_>) {
        self.soft.logits(job);
    }

    fn softmax(&mut self, logits: &[i32], probs: &mut [u32]) {
        self.soft.softmax(logits, probs);
    }

    fn argtopk(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) {
        if let Some(hw) = self.hw.as_mut()
            && keys.len() <= hw.config().topk_keys as usize
        {
            match hw.top_k(keys, k, out) {
                Ok(()) => {
                    self.topk.hardware += 1;
                    return;
                }
                Err(e) => {
                    self.topk.errors += 1;
                    self.topk.last_error = Some(e);
                }
            }
        } else {
            self.topk.software += 1;
        }
        self.soft.argtopk(keys, k, out);
    }

    fn weighted_sum(&mut self, job: WeightedSumJob<'_>) {
        self.soft.weighted_sum(job);
    }
}
