//! `BoundRow`: the multiplexer in front of the GeMV lanes that scores
//! PAGES's pages. A page summary holds, per key element i, the minimum and
//! maximum over the page's keys (fp16 bits, `min ‖ max`); Quest's bound
//! Σ_i max(q_i·min_i, q_i·max_i) is the ordinary logit of q against the
//! row that takes `max_i` where `q_i ≥ 0` and `min_i` where `q_i < 0`.
//! This block builds that row, `N` elements per beat:
//! `attention::engine::bound_row`, bit for bit.
//!
//! # Design
//!
//! `N` lanes (the const generic; [`SYNTH_LANES`] = 8 is what `blocks()`
//! generates and synthesizes, matching the GeMV's lanes), each a 2-to-1
//! multiplexer of 16 bits steered by the sign bit of its query element
//! (bit 31 of the `Fx` value, so q = 0 picks `max`), registered once. The
//! fp16 values pass through untouched, whatever they are (−0, NaN, ±Inf:
//! the GeMV's decoder gives them their meaning). No back-pressure, like
//! the GeMV's key input it feeds.
//!
//! # Protocol
//!
//! * `in_valid`/`k_min[j]`/`k_max[j]`/`q_neg[j]`: one beat, lane j =
//!   element `step·N + j` of the summary's min half, of its max half, and
//!   the sign bit of that element of q. Whoever loads the query into the
//!   GeMV keeps its d sign bits and presents the beat's `N` with it.
//! * `out_valid`/`out_data[j]`: the beat's row elements, one clock after
//!   the beat came in (the inputs sampled at clock edge t are on the
//!   outputs after edge t); wired straight to the GeMV's
//!   `k_valid`/`k_data[j]`. Between beats the outputs hold the last one.
//!
//! # Cycles
//!
//! One beat per clock; [`LATENCY`] = 1: the GeMV takes a beat's row
//! elements the clock after the beat entered here, so a page's logit
//! leaves one clock later than a key row's would. A page's bound row is
//! ⌈d/N⌉ beats, so scoring P pages for one query head takes P·⌈d/N⌉
//! clocks of GeMV input, as P key rows do (measured in the tests,
//! `bound_row_into_gemv_gives_page_logits`).

use rust_hdl::prelude::*;

/// Lanes of the synthesized block (those of the GeMV it feeds).
pub const SYNTH_LANES: usize = crate::gemv::SYNTH_LANES;
/// Clocks the multiplexer adds in front of the GeMV.
pub const LATENCY: usize = 1;

/// The bound-row multiplexer with `N` lanes; see the module docs.
#[derive(LogicBlock, Debug)]
pub struct BoundRow<const N: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// A beat arrives.
    pub in_valid: Signal<In, Bit>,
    /// Lane j: the summary's minimum of element `step·N + j` (fp16 bits).
    pub k_min: [Signal<In, Bits<16>>; N],
    /// Lane j: the summary's maximum of that element (fp16 bits).
    pub k_max: [Signal<In, Bits<16>>; N],
    /// Lane j: that element of q is negative (its `Fx` sign bit).
    pub q_neg: [Signal<In, Bit>; N],
    /// The beat's row elements leave.
    pub out_valid: Signal<Out, Bit>,
    /// Lane j: `k_min` where q is negative, `k_max` elsewhere.
    pub out_data: [Signal<Out, Bits<16>>; N],
    valid_r: DFF<Bit>,
    data_r: [DFF<Bits<16>>; N],
}

impl<const N: usize> Default for BoundRow<N> {
    fn default() -> Self {
        assert!(N >= 1, "at least one lane");
        Self {
            clock: Default::default(),
            in_valid: Default::default(),
            k_min: std::array::from_fn(|_| Default::default()),
            k_max: std::array::from_fn(|_| Default::default()),
            q_neg: std::array::from_fn(|_| Default::default()),
            out_valid: Default::default(),
            out_data: std::array::from_fn(|_| Default::default()),
            valid_r: Default::default(),
            data_r: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const N: usize> Logic for BoundRow<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, valid_r);
        for j in 0..N {
            self.data_r[j].clock.next = self.clock.val();
            self.data_r[j].d.next = self.data_r[j].q.val();
        }
        self.valid_r.d.next = self.in_valid.val();
        if self.in_valid.val() {
            for j in 0..N {
                if self.q_neg[j].val() {
                    self.data_r[j].d.next = self.k_min[j].val();
                } else {
                    self.data_r[j].d.next = self.k_max[j].val();
                }
            }
        }
        self.out_valid.next = self.valid_r.q.val();
        for j in 0..N {
            self.out_data[j].next = self.data_r[j].q.val();
        }
    }
}

/// The inputs of one clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoundCycle {
    /// `in_valid`.
    pub in_valid: bool,
    /// `q_neg[j]`; missing lanes are false.
    pub q_neg: Vec<bool>,
    /// `k_min[j]`; missing lanes are 0.
    pub k_min: Vec<u16>,
    /// `k_max[j]`; missing lanes are 0.
    pub k_max: Vec<u16>,
}

impl BoundCycle {
    /// The beat of elements `b·lanes ..` of the bound row for query `q`
    /// (`Fx`) from its `min ‖ max` summary (2·d values); lanes past d take
    /// `pad` in both halves and a positive sign.
    pub fn beat(q: &[i32], summary: &[u16], b: usize, lanes: usize, pad: u16) -> Self {
        let d = q.len();
        let at = |i: usize, half: usize| {
            if i < d {
                summary.get(half * d + i).copied().unwrap_or(pad)
            } else {
                pad
            }
        };
        let idx = |j: usize| b * lanes + j;
        Self {
            in_valid: true,
            q_neg: (0..lanes)
                .map(|j| q.get(idx(j)).is_some_and(|&x| x < 0))
                .collect(),
            k_min: (0..lanes).map(|j| at(idx(j), 0)).collect(),
            k_max: (0..lanes).map(|j| at(idx(j), 1)).collect(),
        }
    }

    /// The fields in the order of `tb/bound_row_tb.v`'s vector lines, hex:
    /// `in_valid q_neg min[0] … min[lanes−1] max[0] … max[lanes−1]`,
    /// with `q_neg` packed (lane j in bit j).
    pub fn vector_line(&self, lanes: usize) -> String {
        let neg = (0..lanes)
            .filter(|&j| self.q_neg.get(j).copied().unwrap_or(false))
            .fold(0u64, |acc, j| acc | 1 << j);
        let mut s = format!("{:x} {neg:x}", u8::from(self.in_valid));
        for v in [&self.k_min, &self.k_max] {
            for j in 0..lanes {
                s.push_str(&format!(" {:x}", v.get(j).copied().unwrap_or(0)));
            }
        }
        s
    }
}

/// The clocks that stream the bound rows of `rows` (query `Fx`, summary
/// `min ‖ max`) back to back, ⌈d/lanes⌉ beats each (one for d = 0),
/// lanes past d padded with `pad`; an idle clock after every `gap`-th
/// beat when `gap > 0`; then [`LATENCY`] + 1 idle clocks.
pub fn stimulus(
    rows: &[(Vec<i32>, Vec<u16>)],
    lanes: usize,
    pad: u16,
    gap: usize,
) -> Vec<BoundCycle> {
    let mut out = Vec::new();
    let mut n = 0;
    for (q, summary) in rows {
        for b in 0..crate::gemv::beats(q.len(), lanes) {
            out.push(BoundCycle::beat(q, summary, b, lanes, pad));
            n += 1;
            if gap > 0 && n % gap == 0 {
                out.push(BoundCycle::default());
            }
        }
    }
    out.extend(std::iter::repeat_n(BoundCycle::default(), LATENCY + 1));
    out
}

impl<const N: usize> BoundRow<N> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &BoundCycle) {
        self.in_valid.next = c.in_valid;
        for j in 0..N {
            self.q_neg[j].next = c.q_neg.get(j).copied().unwrap_or(false);
            self.k_min[j].next = u64::from(c.k_min.get(j).copied().unwrap_or(0)).into();
            self.k_max[j].next = u64::from(c.k_max.get(j).copied().unwrap_or(0)).into();
        }
    }
}

/// What one run produced: every output beat and its clock.
pub type BoundRun = crate::sim::RowRun;

/// Runs `stim` through a fresh `BoundRow<N>` in rust-hdl.
pub fn run<const N: usize>(stim: &[BoundCycle]) -> BoundRun {
    let mut uut = BoundRow::<N>::default();
    crate::sim::prepare(&mut uut);
    let mut run = BoundRun::default();
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            run.beats
                .push((0..N).map(|j| uut.out_data[j].val().to_u16()).collect());
            run.out_clock.push(t);
        }
    }
    run
}

#[cfg(test)]
mod tests;
