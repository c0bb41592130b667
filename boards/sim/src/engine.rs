//! The attention engine in virtual time: [`firmware::hal::SoftEngine`]
//! computes (the one numeric truth, `attention::engine`), and each call's
//! work is turned into engine cycles by [`EngineModel`].
//!
//! Cycle model (model choice, to be checked against the HDL):
//! - GeMV (logits, weighted sums): `max(ceil(macs / lanes) + fill,
//!   ceil(bytes_in / (2 · lanes)))` — compute, or the fp16 input stream at
//!   one element per lane per cycle, whichever is slower;
//! - softmax: one element per cycle plus a pipeline latency;
//! - argtopk: one key per cycle plus a pipeline latency.
//!
//! An engine operation starts at `max(now, engine free)` and the board
//! clock advances to its end (the core uses the result next).

use firmware::hal::{Engine, LogitJob, SoftEngine, WeightedSumJob};

use crate::clock::{Resource, VirtualClock};

/// Timing parameters of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineModel {
    /// Engine clock in Hz. Default 285 MHz: InstInfer's engine clock on the
    /// Daisyplus board (InstInfer paper).
    pub clock_hz: u64,
    /// GeMV lanes (MACs per cycle). Model choice: 64.
    pub lanes: u16,
    /// GeMV pipeline fill per call. Model choice: 16 cycles (fp16 decode,
    /// multiplier, a log2(64)-deep adder tree, accumulate).
    pub gemv_fill_cycles: u64,
    /// Softmax pipeline latency per call. Model choice: 32 cycles.
    pub softmax_latency_cycles: u64,
    /// Argtopk pipeline latency per call. Model choice: 32 cycles.
    pub topk_latency_cycles: u64,
}

impl Default for EngineModel {
    fn default() -> Self {
        Self {
            clock_hz: 285_000_000,
            lanes: 64,
            gemv_fill_cycles: 16,
            softmax_latency_cycles: 32,
            topk_latency_cycles: 32,
        }
    }
}

/// Work of one engine call: the delta of `SoftEngine`'s counters.
pub use firmware::hal::EngineWork;

/// Which unit an operation ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineUnit {
    /// GeMV lanes.
    Gemv,
    /// Softmax unit.
    Softmax,
    /// Argtopk unit.
    TopK,
}

impl EngineModel {
    /// Cycles of one operation on `unit` that did `work`.
    pub fn cycles(&self, unit: EngineUnit, work: EngineWork) -> u64 {
        let lanes = u64::from(self.lanes.max(1));
        match unit {
            EngineUnit::Gemv if work.macs == 0 && work.bytes_in == 0 => 0,
            EngineUnit::Gemv => {
                let compute = work.macs.div_ceil(lanes) + self.gemv_fill_cycles;
                let input = work.bytes_in.div_ceil(2 * lanes);
                compute.max(input)
            }
            EngineUnit::Softmax if work.softmax_elems == 0 => 0,
            EngineUnit::Softmax => work.softmax_elems + self.softmax_latency_cycles,
            EngineUnit::TopK if work.topk_keys == 0 => 0,
            EngineUnit::TopK => work.topk_keys + self.topk_latency_cycles,
        }
    }

    /// Nanoseconds of `cycles`, rounded up.
    pub fn cycles_ns(&self, cycles: u64) -> u64 {
        if self.clock_hz == 0 {
            return 0;
        }
        (u128::from(cycles) * 1_000_000_000).div_ceil(u128::from(self.clock_hz)) as u64
    }
}

/// The engine of the simulated board.
#[derive(Debug, Default)]
pub struct SimEngine {
    soft: SoftEngine,
    model: EngineModel,
    unit: Resource,
    cycles: u64,
}

impl SimEngine {
    /// An idle engine with `model`'s timing.
    pub fn new(model: EngineModel) -> Self {
        Self {
            model,
            ..Self::default()
        }
    }

    /// The timing model.
    pub fn model(&self) -> &EngineModel {
        &self.model
    }

    /// Work done so far.
    pub fn work(&self) -> EngineWork {
        self.soft.work
    }

    /// Cycles spent so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Busy time so far, ns.
    pub fn busy_ns(&self) -> u64 {
        self.unit.busy_ns()
    }

    /// See [`Engine::logits`].
    pub fn logits(&mut self, clock: &mut VirtualClock, job: LogitJob<'_>) {
        self.timed(clock, EngineUnit::Gemv, |e| e.logits(job));
    }

    /// See [`Engine::softmax`].
    pub fn softmax(&mut self, clock: &mut VirtualClock, logits: &[i32], probs: &mut [u32]) {
        self.timed(clock, EngineUnit::Softmax, |e| e.softmax(logits, probs));
    }

    /// See [`Engine::argtopk`].
    pub fn argtopk(
        &mut self,
        clock: &mut VirtualClock,
        keys: &[u64],
        k: usize,
        out: &mut Vec<u32>,
    ) {
        self.timed(clock, EngineUnit::TopK, |e| e.argtopk(keys, k, out));
    }

    /// See [`Engine::weighted_sum`].
    pub fn weighted_sum(&mut self, clock: &mut VirtualClock, job: WeightedSumJob<'_>) {
        self.timed(clock, EngineUnit::Gemv, |e| e.weighted_sum(job));
    }

    /// Runs `op` on the soft engine and charges its work delta.
    fn timed(
        &mut self,
        clock: &mut VirtualClock,
        unit: EngineUnit,
        op: impl FnOnce(&mut SoftEngine),
    ) {
        let before = self.work();
        op(&mut self.soft);
        let after = self.work();
        let delta = EngineWork {
            macs: after.macs - before.macs,
            softmax_elems: after.softmax_elems - before.softmax_elems,
            topk_keys: after.topk_keys - before.topk_keys,
            bytes_in: after.bytes_in - before.bytes_in,
        };
        let cycles = self.model.cycles(unit, delta);
        self.cycles += cycles;
        let (_, end) = self
            .unit
            .reserve(clock.now_ns(), self.model.cycles_ns(cycles));
        clock.advance_to(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemv_cycles_take_the_slower_of_compute_and_input() {
        let m = EngineModel::default();
        // 4 heads × 128 rows × 64 dims: compute-bound.
        let w = EngineWork {
            macs: 4 * 128 * 64,
            bytes_in: 128 * 64 * 2,
            ..EngineWork::default()
        };
        assert_eq!(m.cycles(EngineUnit::Gemv, w), 4 * 128 + 16);
        // Input-bound when bytes dominate.
        let w = EngineWork {
            macs: 64,
            bytes_in: 64 * 1000,
            ..EngineWork::default()
        };
        assert_eq!(m.cycles(EngineUnit::Gemv, w), 500);
        assert_eq!(m.cycles(EngineUnit::Gemv, EngineWork::default()), 0);
        assert_eq!(m.cycles_ns(285), 1_000);
    }

    #[test]
    fn cycles_grow_with_work_and_advance_the_clock() {
        let mut e = SimEngine::new(EngineModel::default());
        let mut clock = VirtualClock::new();
        let mut times = Vec::new();
        for n in [16usize, 64, 256] {
            let before = clock.now_ns();
            let rows = vec![0x3c00u16; n * 64];
            let queries = vec![1i32; 64];
            let mut out = vec![0i32; n];
            e.logits(
                &mut clock,
                LogitJob {
                    queries: &queries,
                    scales: &[1 << 16],
                    rows: &rows,
                    width: 64,
                    out: &mut out,
                    out_stride: n,
                    out_offset: 0,
                },
            );
            times.push(clock.now_ns() - before);
        }
        assert!(times[0] < times[1] && times[1] < times[2], "{times:?}");
        assert_eq!(e.work().macs, (16 + 64 + 256) * 64);

        let t0 = clock.now_ns();
        let mut probs = vec![0u32; 1000];
        e.softmax(&mut clock, &vec![0i32; 1000], &mut probs);
        assert_eq!(clock.now_ns() - t0, EngineModel::default().cycles_ns(1032));
        let t1 = clock.now_ns();
        let mut idx = Vec::new();
        e.argtopk(&mut clock, &(0..500u64).collect::<Vec<_>>(), 10, &mut idx);
        assert_eq!(idx.len(), 10);
        assert_eq!(clock.now_ns() - t1, EngineModel::default().cycles_ns(532));
        assert_eq!(e.busy_ns(), clock.now_ns());
    }
}
