//! Garbage collection and wear levelling.
//!
//! Pages of many streams share each die's open block, and a block is
//! erased only when none of its pages is live. A long-lived stream (a chat
//! session, a shared prompt) therefore pins blocks whose other pages died
//! with their short-lived streams. Garbage collection picks such a block
//! (the *victim*), re-places each of its live pages exactly as a retired
//! block's are re-placed (bad_blocks.rs: a queued program that copies the
//! old page's tokens, or the still-queued program moved as is), points the owner's map at the new page in the same call, and
//! lets the block die; it is erased once those programs have run (the
//! merge references hold it, reclaim.rs). A map never names a page that
//! is not either programmed or queued ahead of any read of it, and the
//! firmware runs GC between commands, so no decode sees a head half moved.
//! The copies are ordinary flash operations: the firmware executes them
//! through the NAND HAL, timed and exposed to fault injection like any
//! other program.
//!
//! Victims: *greedy* takes the block with the fewest live pages;
//! *cost-benefit* (Rosenblum and Ousterhout's LFS cleaner) weighs the
//! space freed against the copying and the block's age since it last
//! changed, `(1 − u)·age / 2u`, which leaves recently written (still
//! dying) blocks alone. Background GC runs while any die's free pool is
//! under the low watermark; foreground GC, before host writes, while one
//! is under the critical watermark, a bounded number of victims per call.
//! Host writes may not take a die's last `critical_free` blocks: they are
//! the room relocation needs.
//!
//! Wear levelling: dynamic — a die opens its free block with the fewest
//! erases (allocator.rs); static — when the spread between the most and
//! least erased usable blocks exceeds `wear_spread`, the full block with
//! the fewest erases (cold data that would otherwise sit on a young block
//! for ever) is collected even if every page of it is live, so the young
//! block returns to the pool.

use crate::error::FtlError;
use crate::ftl::Ftl;

/// How a victim is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// The full block with the fewest live pages.
    Greedy,
    /// The full block with the largest `(1 − u)·age / 2u` (u: its live
    /// share, age: program-clock ticks since it last changed).
    CostBenefit,
}

/// When and how the FTL collects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcConfig {
    /// Victim choice.
    pub policy: GcPolicy,
    /// Background GC while a die has fewer free blocks than this.
    pub low_free: u32,
    /// Foreground GC while a die has fewer free blocks than this; host
    /// writes never take a die's last `critical_free` blocks.
    pub critical_free: u32,
    /// Static wear levelling once max − min erase count exceeds this.
    pub wear_spread: u32,
    /// Victims one foreground call collects at most (bounded latency).
    pub max_victims: u32,
}

impl GcConfig {
    /// The defaults for `geo`: greedy victims (on `instinfer bench gc`'s
    /// serving mix, seed 1, greedy moved 1 025 pages and cost-benefit
    /// 1 159: write amplification 1.142 against 1.161); background GC
    /// under a quarter of a die's
    /// blocks (at most 4), foreground under half that (at least 1); static
    /// wear levelling past a spread of 64 erases; 4 victims per foreground
    /// call.
    pub fn for_geometry(geo: &crate::Geometry) -> Self {
        let low_free = (geo.blocks_per_die / 4).clamp(1, 4);
        Self {
            policy: GcPolicy::Greedy,
            low_free,
            critical_free: (low_free / 2).max(1),
            wear_spread: 64,
            max_victims: 4,
        }
    }
}

/// What a GC call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Blocks collected (including wear-levelling moves).
    pub victims: u32,
    /// Live pages re-placed.
    pub pages_moved: u32,
    /// Of the victims, cold blocks moved for wear levelling.
    pub wear_moves: u32,
}

impl GcReport {
    fn add(&mut self, o: GcReport) {
        self.victims += o.victims;
        self.pages_moved += o.pages_moved;
        self.wear_moves += o.wear_moves;
    }
}

impl Ftl {
    /// Sets the GC configuration; `critical_free` must be at least 1 and
    /// at most `low_free`, and below the blocks of a die.
    pub fn set_gc(&mut self, cfg: GcConfig) -> Result<(), FtlError> {
        if cfg.critical_free == 0
            || cfg.critical_free > cfg.low_free
            || cfg.low_free >= self.geo.blocks_per_die
            || cfg.max_victims == 0
        {
            return Err(FtlError::InvalidConfig);
        }
        self.gc = cfg;
        Ok(())
    }

    /// The GC configuration in use.
    pub fn gc_config(&self) -> GcConfig {
        self.gc
    }

    /// Pages a host write may still take on `die` (its free pages less the
    /// relocation reserve).
    pub(crate) fn host_pages(&self, die: u32) -> u64 {
        let reserve = u64::from(self.gc.critical_free) * u64::from(self.geo.pages_per_block);
        self.blocks.available_pages(die).saturating_sub(reserve)
    }

    /// The die with the fewest free blocks among those under `below`.
    fn starving(&self, below: u32) -> Option<u32> {
        (0..self.geo.dies())
            .map(|d| (self.blocks.free_on(d), d))
            .filter(|&(f, _)| f < below)
            .min()
            .map(|(_, d)| d)
    }

    /// The best victim on `die` by the policy: a full block with at least
    /// one dead page (collecting an all-live block frees nothing) whose
    /// live pages fit in the die's free pages, so they stay on their die
    /// and a head keeps its striping over the channels.
    fn victim(&self, die: u32) -> Option<usize> {
        let ppb = u64::from(self.geo.pages_per_block);
        let bpd = self.geo.blocks_per_die as usize;
        let now = self.counters.pages_programmed;
        let room = self.blocks.available_pages(die);
        let on_die = |i: &usize| *i / bpd == die as usize;
        let cands = self.blocks.full_blocks().filter(|(i, b)| {
            on_die(i) && b.valid > 0 && u64::from(b.valid) < ppb && u64::from(b.valid) <= room
        });
        match self.gc.policy {
            GcPolicy::Greedy => cands
                .min_by_key(|(i, b)| (b.valid, b.erase_count, *i))
                .map(|(i, _)| i),
            // Largest (ppb − v)·age / 2v, compared by cross-multiplying.
            GcPolicy::CostBenefit => cands
                .map(|(i, b)| {
                    let v = u128::from(b.valid);
                    let gain = (u128::from(ppb) - v) * u128::from(now.saturating_sub(b.stamp) + 1);
                    (i, gain, 2 * v)
                })
                .max_by(|a, b| (a.1 * b.2).cmp(&(b.1 * a.2)).then(b.0.cmp(&a.0)))
                .map(|(i, _, _)| i),
        }
    }

    /// Re-places every live page of block `i`; it dies and is erased once
    /// the copies are programmed.
    fn collect(&mut self, i: usize) -> Result<u32, FtlError> {
        let addr = self.blocks.addr(i);
        let mut moved = 0;
        for (page, owner) in self.blocks.valid_pages(i) {
            if self.relocate(addr.page(page), owner)? {
                moved += 1;
            }
        }
        self.try_reclaim(i);
        self.counters.gc_blocks += 1;
        self.counters.gc_pages_moved += u64::from(moved);
        Ok(moved)
    }

    /// Whether background GC has work now.
    pub fn gc_wanted(&self) -> bool {
        self.starving(self.gc.low_free)
            .is_some_and(|d| self.victim(d).is_some())
            || self.wear_victim().is_some()
    }

    /// The coldest full block when the erase-count spread is over the
    /// limit and no die is short of blocks (a wear move frees nothing).
    fn wear_victim(&self) -> Option<usize> {
        let (lo, hi) = self.blocks.erase_count_range();
        if hi - lo <= self.gc.wear_spread || self.starving(self.gc.low_free).is_some() {
            return None;
        }
        let bpd = self.geo.blocks_per_die as usize;
        self.blocks
            .full_blocks()
            .filter(|(i, b)| {
                b.erase_count == lo
                    && b.valid > 0
                    && u64::from(b.valid) <= self.blocks.available_pages((*i / bpd) as u32)
            })
            .min_by_key(|(i, b)| (b.stamp, *i))
            .map(|(i, _)| i)
    }

    /// One background step: the best victim of the most starved die under
    /// the low watermark, else a wear-levelling move if the spread asks
    /// for one. Queues the copies; the block returns to its pool after the
    /// firmware has run them (two drains).
    pub fn gc_step(&mut self) -> Result<GcReport, FtlError> {
        if let Some(i) = self.starving(self.gc.low_free).and_then(|d| self.victim(d)) {
            let moved = self.collect(i)?;
            return Ok(GcReport {
                victims: 1,
                pages_moved: moved,
                wear_moves: 0,
            });
        }
        if let Some(i) = self.wear_victim() {
            let moved = self.collect(i)?;
            self.counters.wear_moves += 1;
            return Ok(GcReport {
                victims: 1,
                pages_moved: moved,
                wear_moves: 1,
            });
        }
        Ok(GcReport::default())
    }

    /// Foreground GC: while a die is down to its reserve (at most
    /// `critical_free` free blocks: host writes can take nothing more but
    /// its open block) and has a victim, collect, at most `max_victims`
    /// blocks.
    pub fn gc_urgent(&mut self) -> Result<GcReport, FtlError> {
        self.collect_below(self.gc.critical_free + 1)
    }

    /// After a host write found no room: the best victims of the dies
    /// with the fewest free blocks, whatever the watermarks, at most
    /// `max_victims`.
    pub fn gc_make_room(&mut self) -> Result<GcReport, FtlError> {
        self.collect_below(u32::MAX)
    }

    /// Collects on the dies with fewer than `below` free blocks (counting
    /// what this call freed), the most starved first.
    fn collect_below(&mut self, below: u32) -> Result<GcReport, FtlError> {
        let mut r = GcReport::default();
        // A victim's block is free only after the firmware ran its copies:
        // count what this call already freed per die.
        let mut freed = alloc::vec![0u32; self.geo.dies() as usize];
        while r.victims < self.gc.max_victims {
            let best = (0..self.geo.dies())
                .map(|d| (self.blocks.free_on(d) + freed[d as usize], d))
                .filter(|&(f, _)| f < below)
                .filter_map(|(f, d)| self.victim(d).map(|i| (f, d, i)))
                .min();
            let Some((_, d, i)) = best else {
                break;
            };
            let moved = self.collect(i)?;
            freed[d as usize] += 1;
            r.add(GcReport {
                victims: 1,
                pages_moved: moved,
                wear_moves: 0,
            });
        }
        Ok(r)
    }

    /// Whether some die is down to its reserve (foreground GC's trigger).
    pub fn gc_critical(&self) -> bool {
        self.starving(self.gc.critical_free + 1).is_some()
    }
}
