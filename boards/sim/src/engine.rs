//! The attention engine in virtual time: [`firmware::hal::SoftEngine`]
//! computes (the one numeric truth, `attention::engine`), and each call's
//! work is turned into engine cycles by [`EngineModel`].
//!
//! Cycle model: the per-unit cycle counts are the ones measured in
//! co-simulation of the rust-hdl blocks in `hdl/` (GemvUnit, Softmax,
//! SelectK); how many GeMV units work in parallel is a model choice.
//! - GeMV (logits, weighted sums): each dot product or value row of width
//!   w takes ⌈w / L⌉ beats on a `GemvUnit<L>` (L = 8, one beat per clock,
//!   measured), `units` of them share the work (model choice: 8 units =
//!   64 lanes), plus the unit's pipeline latency (12 clocks, measured);
//! - softmax: `3·n + 51` clocks for n logits (measured: load/max, weigh
//!   and sum, a 33-step divider, emit);
//! - top-k: the clocks of `SelectK` (the engine's radix select, any k over
//!   up to 32K keys) for the keys at hand, `RadixPlan::clocks` of
//!   `attention::engine::radix_plan` (co-simulated clock for clock): about
//!   (3 + passes)·n, the passes (usually 1–3) from the keys. More keys than
//!   the unit holds are charged as consecutive selections of its capacity
//!   (the firmware never asks for that: S ≤ 32K).
//!
//! An engine operation starts at `max(now, engine free)` and runs while the
//! core goes on: the engine consumes page data as the NFCs stream it, and
//! the core does not wait for logits, probabilities or weighted sums. The
//! board clock advances to an operation's end only where the core consumes
//! a result: argtopk's selection (the core turns it into page reads) and
//! [`SimEngine::sync`] before outputs leave the device (DMA writes,
//! completions).

use attention::engine::radix_plan;
use firmware::hal::{Engine, LogitJob, SoftEngine, WeightedSumJob};

use crate::clock::{Resource, VirtualClock};
use crate::simd;

/// Timing parameters of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineModel {
    /// Engine clock in Hz. Default 285 MHz: InstInfer's engine clock on the
    /// Daisyplus board (InstInfer paper).
    pub clock_hz: u64,
    /// GeMV lanes in all: `units × lanes_per_unit` (advertised).
    pub lanes: u16,
    /// Lanes of one `GemvUnit` (8: the synthesized `hdl` unit).
    pub lanes_per_unit: u16,
    /// GeMV pipeline latency per call: 12 clocks (measured on `GemvUnit<8>`:
    /// first beat to logit is ⌈d/8⌉ + 12 clocks inclusive, with the logit
    /// stage pipelined for 285 MHz).
    pub gemv_fill_cycles: u64,
    /// Softmax clocks per logit: 3 (measured).
    pub softmax_cycles_per_elem: u64,
    /// Softmax fixed clocks per call: 51 (measured: pipelines + divider).
    pub softmax_latency_cycles: u64,
    /// Keys the top-k unit holds: 32768 (`SelectK<15>`).
    pub topk_keys: usize,
}

impl Default for EngineModel {
    fn default() -> Self {
        Self {
            clock_hz: 285_000_000,
            lanes: 64,
            lanes_per_unit: 8,
            gemv_fill_cycles: 12,
            softmax_cycles_per_elem: 3,
            softmax_latency_cycles: 51,
            topk_keys: 1 << 15,
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
}

impl EngineModel {
    /// Cycles of one operation on `unit` that did `work`.
    pub fn cycles(&self, unit: EngineUnit, work: EngineWork) -> u64 {
        let per_unit = u64::from(self.lanes_per_unit.max(1));
        let units = (u64::from(self.lanes) / per_unit).max(1);
        match unit {
            EngineUnit::Gemv if work.dots == 0 => 0,
            EngineUnit::Gemv => {
                let width = work.macs.div_ceil(work.dots);
                let beats = work.dots * width.div_ceil(per_unit);
                beats.div_ceil(units) + self.gemv_fill_cycles
            }
            EngineUnit::Softmax if work.softmax_elems == 0 => 0,
            EngineUnit::Softmax => {
                self.softmax_cycles_per_elem * work.softmax_elems + self.softmax_latency_cycles
            }
        }
    }

    /// Clocks of the top-k unit selecting `k` of `keys`.
    pub fn topk_cycles(&self, keys: &[u64], k: usize) -> u64 {
        if keys.is_empty() {
            return radix_plan(keys, k).clocks();
        }
        keys.chunks(self.topk_keys.max(1))
            .map(|c| radix_plan(c, k).clocks())
            .sum()
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

    /// Advances `clock` to the end of every engine operation queued so far
    /// (the core is about to use the engine's results).
    pub fn sync(&self, clock: &mut VirtualClock) {
        clock.advance_to(self.unit.free_at());
    }

    /// See [`Engine::logits`].
    pub fn logits(&mut self, clock: &mut VirtualClock, job: LogitJob<'_>) {
        self.timed(clock, EngineUnit::Gemv, false, |e| simd::logits(e, job));
    }

    /// See [`Engine::softmax`].
    pub fn softmax(&mut self, clock: &mut VirtualClock, logits: &[i32], probs: &mut [u32]) {
        self.timed(clock, EngineUnit::Softmax, false, |e| {
            simd::softmax(e, logits, probs)
        });
    }

    /// See [`Engine::argtopk`].
    pub fn argtopk(
        &mut self,
        clock: &mut VirtualClock,
        keys: &[u64],
        k: usize,
        out: &mut Vec<u32>,
    ) {
        self.soft.argtopk(keys, k, out);
        let cycles = self.model.topk_cycles(keys, k);
        self.charge(clock, cycles, true);
    }

    /// See [`Engine::weighted_sum`].
    pub fn weighted_sum(&mut self, clock: &mut VirtualClock, job: WeightedSumJob<'_>) {
        self.timed(clock, EngineUnit::Gemv, false, |e| {
            simd::weighted_sum(e, job)
        });
    }

    /// Runs `op` on the soft engine and charges its work delta; the clock
    /// follows only when the core waits for the result (`wait`).
    fn timed(
        &mut self,
        clock: &mut VirtualClock,
        unit: EngineUnit,
        wait: bool,
        op: impl FnOnce(&mut SoftEngine),
    ) {
        let before = self.work();
        op(&mut self.soft);
        let after = self.work();
        let delta = after.since(&before);
        let cycles = self.model.cycles(unit, delta);
        self.charge(clock, cycles, wait);
    }

    /// Reserves the engine for `cycles` from now; the clock follows when
    /// the core waits for the result.
    fn charge(&mut self, clock: &mut VirtualClock, cycles: u64, wait: bool) {
        self.cycles += cycles;
        let (_, end) = self
            .unit
            .reserve(clock.now_ns(), self.model.cycles_ns(cycles));
        if wait {
            clock.advance_to(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_follow_the_measured_hdl_formulas() {
        let m = EngineModel::default();
        // 4 heads × 128 rows of 64 dims: 512 dot products of 8 beats each
        // on a GemvUnit<8>, spread over 8 units, plus the 12-clock latency.
        let w = EngineWork {
            macs: 4 * 128 * 64,
            dots: 4 * 128,
            bytes_in: 128 * 64 * 2,
            ..EngineWork::default()
        };
        assert_eq!(m.cycles(EngineUnit::Gemv, w), 512 * 8 / 8 + 12);
        // A width that is not a multiple of the unit's lanes rounds up.
        let w = EngineWork {
            macs: 10 * 100,
            dots: 10,
            ..EngineWork::default()
        };
        assert_eq!(
            m.cycles(EngineUnit::Gemv, w),
            (10 * 13usize).div_ceil(8) as u64 + 12
        );
        assert_eq!(m.cycles(EngineUnit::Gemv, EngineWork::default()), 0);
        // Softmax 3n + 51 (hdl/ co-simulation).
        let s = EngineWork {
            softmax_elems: 4096,
            ..EngineWork::default()
        };
        assert_eq!(m.cycles(EngineUnit::Softmax, s), 3 * 4096 + 51);
        // Top-k: SelectK's clocks for the keys. 1000 distinct keys below
        // 2^10: 54 shifts, one 8-bit pass (256 bins) then a 2-bit one.
        let keys: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1000).collect();
        let p = radix_plan(&keys, 63);
        assert_eq!((p.shifts, p.passes, p.bins), (54, 2, 256 + 4));
        let want = 3 + 1000 + (54 + 1) + 2 * (1000 + 11) + 260 + 1000 + 4;
        assert_eq!(m.topk_cycles(&keys, 63), want);
        // k = 64 ends after the first pass: the 16 top bins hold exactly it.
        assert_eq!(radix_plan(&keys, 64).passes, 1);
        assert_eq!(m.topk_cycles(&keys, 0), 1003);
        assert_eq!(m.topk_cycles(&[], 5), 4);
        assert_eq!(m.cycles_ns(285), 1_000);
    }

    #[test]
    fn the_core_waits_only_for_results_it_uses() {
        let mut e = SimEngine::new(EngineModel::default());
        let mut clock = VirtualClock::new();
        let mut times = Vec::new();
        for n in [16usize, 64, 256] {
            let before = e.busy_ns();
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
            times.push(e.busy_ns() - before);
        }
        assert!(times[0] < times[1] && times[1] < times[2], "{times:?}");
        assert_eq!(e.work().macs, (16 + 64 + 256) * 64);
        assert_eq!(clock.now_ns(), 0, "logits run while the core goes on");

        let b0 = e.busy_ns();
        let mut probs = vec![0u32; 1000];
        e.softmax(&mut clock, &vec![0i32; 1000], &mut probs);
        assert_eq!(
            e.busy_ns() - b0,
            EngineModel::default().cycles_ns(3 * 1000 + 51)
        );
        assert_eq!(clock.now_ns(), 0);
        // Argtopk's selection is used by the core: the clock follows the
        // engine through everything queued before it.
        let mut idx = Vec::new();
        let b1 = e.busy_ns();
        e.argtopk(&mut clock, &(0..500u64).collect::<Vec<_>>(), 10, &mut idx);
        assert_eq!(idx.len(), 10);
        assert_eq!(
            e.busy_ns() - b1,
            EngineModel::default()
                .cycles_ns(radix_plan(&(0..500u64).collect::<Vec<_>>(), 10).clocks())
        );
        assert_eq!(clock.now_ns(), e.busy_ns());
        // More work, then a sync before outputs leave.
        e.softmax(&mut clock, &vec![0i32; 100], &mut probs[..100]);
        assert!(clock.now_ns() < e.busy_ns());
        e.sync(&mut clock);
        assert_eq!(clock.now_ns(), e.busy_ns());
    }
}
