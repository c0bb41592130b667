//! [`FxMul`] fed by [`FxDecode`], co-simulated against the model's
//! products bit for bit on every fp16 pattern: `q · fx(k)` as
//! `attention::engine::dot` forms it, at the GeMV's 70 bits, and
//! `p · fx(v)` as `attention::engine::accumulate` adds it, at the weighted
//! sum's 64. A new input every clock, so the pipeline is full throughout.

use attention::testdata::SplitMix64;
use rust_hdl::prelude::*;

use super::*;
use crate::fx::FxDecode;
use crate::sim;

/// The decoder and the multiply stage, as the GeMV and the weighted sum
/// wire them (the decoder's outputs straight into the stage; the parents
/// register them once in between, which only delays them).
struct Lane<const W: usize> {
    dec: FxDecode,
    mul: FxMul<W>,
}

impl<const W: usize> Lane<W> {
    fn new() -> Self {
        let mut lane = Self {
            dec: FxDecode::default(),
            mul: FxMul::default(),
        };
        sim::prepare(&mut lane.dec);
        sim::prepare(&mut lane.mul);
        lane
    }

    /// Drives one clock: `x` times fp16 `h`, negated when `neg` differs
    /// from `h`'s sign; returns `term` after the edge (the term of the
    /// previous clock's inputs).
    fn clock(&mut self, x: u32, h: u16, neg: bool) -> Bits<W> {
        self.dec.h.next = u64::from(h).into();
        sim::settle(&mut self.dec);
        self.mul.x.next = u64::from(x).into();
        self.mul.m.next = self.dec.m.val();
        self.mul.sh.next = self.dec.sh.val();
        self.mul.neg.next = neg ^ (h & 0x8000 != 0);
        sim::tick(&mut self.mul, |m| &mut m.clock);
        self.mul.term.val()
    }
}

/// A `W`-bit two's-complement value as an i128.
fn signed<const W: usize>(b: Bits<W>) -> i128 {
    ((b.to_u128() << (128 - W)) as i128) >> (128 - W)
}

/// Runs `inputs` (x, h, neg) through a lane, one per clock, and checks
/// each term against `want` one clock later.
fn check<const W: usize>(inputs: &[(u32, u16, bool)], want: impl Fn(u32, u16, bool) -> i128) {
    let mut lane = Lane::<W>::new();
    let mut prev: Option<(u32, u16, bool)> = None;
    for &(x, h, neg) in inputs.iter().chain([&(0, 0, false)]) {
        let term = signed(lane.clock(x, h, neg));
        if let Some((px, ph, pn)) = prev {
            assert_eq!(term, want(px, ph, pn), "x {px:#x}, h {ph:#06x}, neg {pn}");
        }
        prev = Some((x, h, neg));
    }
}

#[test]
fn gemv_terms_every_fp16() {
    let mut rng = SplitMix64::new(0xF0_1701);
    let mut inputs = Vec::new();
    for h in 0..=u16::MAX {
        for q in [i32::MIN, i32::MAX, -1, 1, 0, rng.next_u64() as i32] {
            inputs.push((q.unsigned_abs(), h, q < 0));
        }
    }
    check::<70>(&inputs, |x, h, neg| {
        let q = if neg {
            (x as i32).wrapping_neg()
        } else {
            x as i32
        };
        attention::engine::dot(&[q], &[h])
    });
}

#[test]
fn weighted_sum_terms_every_fp16() {
    let mut rng = SplitMix64::new(0xF0_1702);
    let mut inputs = Vec::new();
    for h in 0..=u16::MAX {
        for p in [0, 1, 0xFFFF, 0x1_0000, attention::engine::P_ONE, u32::MAX] {
            inputs.push((p, h, false));
        }
        inputs.push((rng.next_u64() as u32, h, false));
    }
    check::<{ SYNTH_BITS }>(&inputs, |p, h, _| {
        let mut acc = [0i64];
        attention::engine::accumulate(&mut acc, p, &[h]);
        i128::from(acc[0])
    });
}

#[test]
fn the_term_leaves_two_edges_after_its_inputs() {
    let mut lane = Lane::<{ SYNTH_BITS }>::new();
    // 3 · fx(1.0) = 3 · 2^14.
    assert_eq!(signed(lane.clock(3, 0x3C00, false)), 0);
    assert_eq!(signed(lane.clock(0, 0, false)), 3 << 14);
    assert_eq!(signed(lane.clock(0, 0, false)), 0);
}
