//! `DimScore`: SparF's approximate-score pass in hardware, for one query
//! head: the approximate logit of every token from the dim-indexed copy of
//! K as it streams off the NAND, `attention::engine::logit` of the chosen
//! dims of q against the same dims of each key, bit for bit (the
//! firmware's `select_tokens` step 4).
//!
//! A dim page holds `m` dims of `N` tokens dim-major, so the NFC filter's
//! kept rows are whole dims of N tokens and a beat is 8 tokens of one dim.
//! The GeMV lanes want token-major rows; instead of transposing, this unit
//! keeps a running dot product per token in block RAM and adds each beat's
//! 8 terms `q_i · fx(K[t, i])` to the 8 tokens' sums.
//!
//! # Design
//!
//! An accumulator RAM of 2^W words × 8 lanes × 70 bits (W =
//! [`SYNTH_WORD_BITS`] = 12: 32K tokens, 64 RAMB36), one word per group of
//! 8 tokens; the 70 bits hold any sum of ≤ 256 terms exactly, as the GeMV
//! accumulator does.
//!
//! 1. *Accumulate* (one beat per clock, [`ACC_DEPTH`] stages): the beat's
//!    group word is read while its 8 fp16 values are decoded
//!    ([`FxDecode`](crate::fx::FxDecode)) and multiplied by |q_i|
//!    ([`FxMul`]); the sum is formed in two 35-bit halves, the low half's
//!    carry registered into the high half's stage, and written back. A
//!    beat marked `in_fresh` (the first chosen dim of its tokens) writes
//!    its terms instead of adding them.
//! 2. *Emit* (after `flush`): the tokens' sums in token order, one per
//!    clock, through a [`LogitScale`]: `sat_i32((dot · c) >> 28)`.
//!
//! The read-modify-write spans [`ACC_DEPTH`] clocks, with no forwarding: a
//! group may not come back within [`ACC_DEPTH`] beats (rows of at least
//! 48 tokens when a page holds several dims of the same tokens; the FTL's
//! dim pages hold hundreds). A beat that breaks this sets `hazard` (sticky
//! until `start`), and its sum is wrong.
//!
//! # Protocol
//!
//! `start` latches `s` (tokens, ≤ 8·2^W) and `c` (the approximate logit
//! scale, `attention::engine::approx_scale`). Beats: `in_valid` with
//! `in_group` (tokens 8·group .. 8·group + 7), `in_q` (q of the beat's
//! dim, `Fx` i32 bits), `in_fresh` and `in_data` (8 fp16, lane j = token
//! 8·group + j); any order of groups and dims. `flush` (a clock of its
//! own, after the last beat) emits the s logits on `out_valid`/
//! `out_logit`; `done` follows the last. Lanes of tokens ≥ s are never
//! emitted (pad them with anything).
//!
//! # Cycles
//!
//! One beat per clock, then from the `flush` clock to the `done` clock
//! inclusive s + [`FLUSH_TO_DONE`] (15) clocks (measured in the tests):
//! the last beat's write drains, then the s reads and the logit pipeline.
//! A head of S tokens with r chosen dims takes S·r/8 clocks of beats:
//! 8 MACs per clock.

use rust_hdl::prelude::*;

use crate::fx::FxDecode;
use crate::fx_mul::FxMul;
use crate::gemv::{ACC_BITS, Widen};
use crate::logit_scale::{self, LogitScale};

/// Word address bits of the synthesized and tested unit (4096 words of
/// 8 tokens: 32K tokens).
pub const SYNTH_WORD_BITS: usize = 12;
/// Tokens the synthesized unit holds.
pub const SYNTH_S_MAX: usize = LANES << SYNTH_WORD_BITS;
/// Lanes (tokens per beat).
pub const LANES: usize = 8;
/// Clocks from a beat's read to its write: a group may not come back
/// sooner.
pub const ACC_DEPTH: usize = 6;
/// Clocks of the emit pipeline after the last read (RAM, lane select,
/// [`LogitScale`]).
pub const EMIT_LATENCY: usize = 2 + logit_scale::LATENCY;
/// Clocks from the `flush` clock to the `done` clock inclusive, beyond
/// one per token: the last write drains, the emit pipeline empties, and
/// the state changes (measured in the tests).
pub const FLUSH_TO_DONE: usize = ACC_DEPTH + EMIT_LATENCY + 2;
/// Half of an accumulator.
const HALF: usize = 35;
const _: () = assert!(2 * HALF == ACC_BITS);
/// Bits of an accumulator word (8 lanes × 70 bits).
pub const WORD_BITS: usize = LANES * ACC_BITS;

/// The unit's phase.
#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum DimScoreState {
    /// Waiting for `start`.
    Idle,
    /// Taking beats.
    Accumulate,
    /// The last writes land.
    Drain,
    /// Sending the logits.
    Emit,
    /// The last logits leave.
    Tail,
}

/// The approximate-score unit; see the module docs. `W` is the word
/// address width (1..=12: 8·2^W tokens).
#[derive(LogicBlock)]
pub struct DimScore<const W: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Begin a head: latch `s` and `c`.
    pub start: Signal<In, Bit>,
    /// Tokens.
    pub s: Signal<In, Bits<16>>,
    /// The approximate logit scale (Q16).
    pub c: Signal<In, Bits<32>>,
    /// A beat arrives.
    pub in_valid: Signal<In, Bit>,
    /// Its first chosen dim for these tokens: write, do not add.
    pub in_fresh: Signal<In, Bit>,
    /// Its group of 8 tokens.
    pub in_group: Signal<In, Bits<16>>,
    /// q of its dim (`Fx`, i32 bits).
    pub in_q: Signal<In, Bits<32>>,
    /// 8 fp16 key elements of one dim (lane j in bits 16j..).
    pub in_data: Signal<In, Bits<128>>,
    /// No more beats: emit.
    pub flush: Signal<In, Bit>,
    /// A logit leaves (token order).
    pub out_valid: Signal<Out, Bit>,
    /// The logit (i32 bits, Q16).
    pub out_logit: Signal<Out, Bits<32>>,
    /// The clock after the last logit.
    pub done: Signal<Out, Bit>,
    /// Between `start` and `done`.
    pub busy: Signal<Out, Bit>,
    /// A group came back within [`ACC_DEPTH`] beats (sticky until `start`).
    pub hazard: Signal<Out, Bit>,
    acc: RAM<Bits<WORD_BITS>, W>,
    state: DFF<DimScoreState>,
    s_r: DFF<Bits<16>>,
    c_r: DFF<Bits<32>>,
    haz: DFF<Bit>,
    cnt: DFF<Bits<16>>,
    // Recent groups, for the hazard check.
    recent_v: [DFF<Bit>; ACC_DEPTH - 1],
    recent_g: [DFF<Bits<16>>; ACC_DEPTH - 1],
    // Stage 1: the beat, registered.
    a1_v: DFF<Bit>,
    a1_fresh: DFF<Bit>,
    a1_group: DFF<Bits<16>>,
    a1_qmag: DFF<Bits<32>>,
    a1_qneg: DFF<Bit>,
    a1_data: DFF<Bits<128>>,
    fxd: [FxDecode; LANES],
    // Stage 2: decoded; the old word off the RAM.
    a2_v: DFF<Bit>,
    a2_fresh: DFF<Bit>,
    a2_group: DFF<Bits<16>>,
    a2_x: DFF<Bits<32>>,
    a2_m: [DFF<Bits<16>>; LANES],
    a2_sh: [DFF<Bits<5>>; LANES],
    a2_neg: [DFF<Bit>; LANES],
    a2_old: DFF<Bits<WORD_BITS>>,
    // Stages 3–4: the terms (`FxMul`), the old word alongside.
    mul: [FxMul<ACC_BITS>; LANES],
    a3_v: DFF<Bit>,
    a3_fresh: DFF<Bit>,
    a3_group: DFF<Bits<16>>,
    a3_old: DFF<Bits<WORD_BITS>>,
    a4_v: DFF<Bit>,
    a4_fresh: DFF<Bit>,
    a4_group: DFF<Bits<16>>,
    a4_old: DFF<Bits<WORD_BITS>>,
    // Stage 5: low halves summed, carries registered.
    a5_v: DFF<Bit>,
    a5_group: DFF<Bits<16>>,
    a5_lo: [DFF<Bits<HALF>>; LANES],
    a5_cy: [DFF<Bit>; LANES],
    a5_ohi: [DFF<Bits<HALF>>; LANES],
    a5_thi: [DFF<Bits<HALF>>; LANES],
    lo_sum: [Signal<Local, Bits<36>>; LANES],
    hi_sum: [Signal<Local, Bits<HALF>>; LANES],
    lane_word: [Signal<Local, Bits<ACC_BITS>>; LANES],
    word: Signal<Local, Bits<WORD_BITS>>,
    // Emit.
    e1_v: DFF<Bit>,
    e1_lane: DFF<Bits<3>>,
    e2_v: DFF<Bit>,
    e2_dot: DFF<Bits<ACC_BITS>>,
    scale: LogitScale,
    tail: DFF<Bits<4>>,
    tail_c: Constant<Bits<4>>,
    grp: Signal<Local, Bits<16>>,
    done_r: DFF<Bit>,
    rd_word: Signal<Local, Bits<WORD_BITS>>,
    issue: Signal<Local, Bit>,
}

impl<const W: usize> Default for DimScore<W> {
    fn default() -> Self {
        assert!((1..=12).contains(&W), "W must be in 1..=12");
        Self {
            clock: Default::default(),
            start: Default::default(),
            s: Default::default(),
            c: Default::default(),
            in_valid: Default::default(),
            in_fresh: Default::default(),
            in_group: Default::default(),
            in_q: Default::default(),
            in_data: Default::default(),
            flush: Default::default(),
            out_valid: Default::default(),
            out_logit: Default::default(),
            done: Default::default(),
            busy: Default::default(),
            hazard: Default::default(),
            acc: Default::default(),
            state: Default::default(),
            s_r: Default::default(),
            c_r: Default::default(),
            haz: Default::default(),
            cnt: Default::default(),
            recent_v: std::array::from_fn(|_| Default::default()),
            recent_g: std::array::from_fn(|_| Default::default()),
            a1_v: Default::default(),
            a1_fresh: Default::default(),
            a1_group: Default::default(),
            a1_qmag: Default::default(),
            a1_qneg: Default::default(),
            a1_data: Default::default(),
            fxd: std::array::from_fn(|_| Default::default()),
            a2_v: Default::default(),
            a2_fresh: Default::default(),
            a2_group: Default::default(),
            a2_x: Default::default(),
            a2_m: std::array::from_fn(|_| Default::default()),
            a2_sh: std::array::from_fn(|_| Default::default()),
            a2_neg: std::array::from_fn(|_| Default::default()),
            a2_old: Default::default(),
            mul: std::array::from_fn(|_| Default::default()),
            a3_v: Default::default(),
            a3_fresh: Default::default(),
            a3_group: Default::default(),
            a3_old: Default::default(),
            a4_v: Default::default(),
            a4_fresh: Default::default(),
            a4_group: Default::default(),
            a4_old: Default::default(),
            a5_v: Default::default(),
            a5_group: Default::default(),
            a5_lo: std::array::from_fn(|_| Default::default()),
            a5_cy: std::array::from_fn(|_| Default::default()),
            a5_ohi: std::array::from_fn(|_| Default::default()),
            a5_thi: std::array::from_fn(|_| Default::default()),
            lo_sum: std::array::from_fn(|_| Default::default()),
            hi_sum: std::array::from_fn(|_| Default::default()),
            lane_word: std::array::from_fn(|_| Default::default()),
            word: Default::default(),
            e1_v: Default::default(),
            e1_lane: Default::default(),
            e2_v: Default::default(),
            e2_dot: Default::default(),
            scale: Default::default(),
            tail: Default::default(),
            tail_c: Constant::new((EMIT_LATENCY as u64).into()),
            grp: Default::default(),
            done_r: Default::default(),
            rd_word: Default::default(),
            issue: Default::default(),
        }
    }
}

impl<const W: usize> std::fmt::Debug for DimScore<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DimScore").field("word_bits", &W).finish()
    }
}

impl<const W: usize> Logic for DimScore<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, s_r, c_r, haz, cnt, a1_v, a1_fresh, a1_group, a1_qmag, a1_qneg,
            a1_data, a2_v, a2_fresh, a2_group, a2_x, a2_old, a3_v, a3_fresh, a3_group, a3_old,
            a4_v, a4_fresh, a4_group, a4_old, a5_v, a5_group, e1_v, e1_lane, e2_v, e2_dot, tail,
            done_r
        );
        for i in 0..(ACC_DEPTH - 1) {
            self.recent_v[i].clock.next = self.clock.val();
            self.recent_v[i].d.next = self.recent_v[i].q.val();
            self.recent_g[i].clock.next = self.clock.val();
            self.recent_g[i].d.next = self.recent_g[i].q.val();
        }
        for j in 0..LANES {
            self.a2_m[j].clock.next = self.clock.val();
            self.a2_m[j].d.next = self.a2_m[j].q.val();
            self.a2_sh[j].clock.next = self.clock.val();
            self.a2_sh[j].d.next = self.a2_sh[j].q.val();
            self.a2_neg[j].clock.next = self.clock.val();
            self.a2_neg[j].d.next = self.a2_neg[j].q.val();
            self.mul[j].clock.next = self.clock.val();
            self.a5_lo[j].clock.next = self.clock.val();
            self.a5_lo[j].d.next = self.a5_lo[j].q.val();
            self.a5_cy[j].clock.next = self.clock.val();
            self.a5_cy[j].d.next = self.a5_cy[j].q.val();
            self.a5_ohi[j].clock.next = self.clock.val();
            self.a5_ohi[j].d.next = self.a5_ohi[j].q.val();
            self.a5_thi[j].clock.next = self.clock.val();
            self.a5_thi[j].d.next = self.a5_thi[j].q.val();
        }
        self.acc.read_clock.next = self.clock.val();
        self.acc.write_clock.next = self.clock.val();
        self.scale.clock.next = self.clock.val();
        self.busy.next = self.state.q.val() != DimScoreState::Idle;
        self.hazard.next = self.haz.q.val();
        self.done_r.d.next = false;
        self.done.next = self.done_r.q.val();

        // Stage 0: a beat's word is read; the beat is registered.
        self.issue.next = self.in_valid.val() & (self.state.q.val() == DimScoreState::Accumulate);
        self.acc.read_address.next = bit_cast::<W, 16>(self.in_group.val());
        self.a1_v.d.next = self.issue.val();
        self.a1_fresh.d.next = self.in_fresh.val();
        self.a1_group.d.next = self.in_group.val();
        self.a1_qneg.d.next = self.in_q.val().get_bit(31);
        self.a1_qmag.d.next = self.in_q.val();
        if self.in_q.val().get_bit(31) {
            self.a1_qmag.d.next = !self.in_q.val() + 1;
        }
        self.a1_data.d.next = self.in_data.val();
        if self.issue.val() {
            for i in 0..(ACC_DEPTH - 1) {
                if self.recent_v[i].q.val() & (self.recent_g[i].q.val() == self.in_group.val()) {
                    self.haz.d.next = true;
                }
            }
        }
        self.recent_v[0].d.next = self.issue.val();
        self.recent_g[0].d.next = self.in_group.val();
        for i in 1..(ACC_DEPTH - 1) {
            self.recent_v[i].d.next = self.recent_v[i - 1].q.val();
            self.recent_g[i].d.next = self.recent_g[i - 1].q.val();
        }

        // Stage 1: decode; the old word is registered off the RAM.
        for j in 0..LANES {
            self.fxd[j].h.next = self.a1_data.q.val().get_bits::<16>(16 * j);
            self.a2_m[j].d.next = self.fxd[j].m.val();
            self.a2_sh[j].d.next = self.fxd[j].sh.val();
            self.a2_neg[j].d.next =
                self.a1_qneg.q.val() ^ self.a1_data.q.val().get_bit(16 * j + 15);
        }
        self.a2_v.d.next = self.a1_v.q.val();
        self.a2_fresh.d.next = self.a1_fresh.q.val();
        self.a2_group.d.next = self.a1_group.q.val();
        self.a2_x.d.next = self.a1_qmag.q.val();
        self.a2_old.d.next = self.acc.read_data.val();

        // Stages 2–3: the signed 70-bit terms ±|q| · m · 2^sh.
        for j in 0..LANES {
            self.mul[j].x.next = self.a2_x.q.val();
            self.mul[j].m.next = self.a2_m[j].q.val();
            self.mul[j].sh.next = self.a2_sh[j].q.val();
            self.mul[j].neg.next = self.a2_neg[j].q.val();
        }
        self.a3_v.d.next = self.a2_v.q.val();
        self.a3_fresh.d.next = self.a2_fresh.q.val();
        self.a3_group.d.next = self.a2_group.q.val();
        self.a3_old.d.next = self.a2_old.q.val();
        self.a4_v.d.next = self.a3_v.q.val();
        self.a4_fresh.d.next = self.a3_fresh.q.val();
        self.a4_group.d.next = self.a3_group.q.val();
        self.a4_old.d.next = self.a3_old.q.val();

        // Stage 4: the low halves (a fresh beat adds to zero).
        self.a5_v.d.next = self.a4_v.q.val();
        self.a5_group.d.next = self.a4_group.q.val();
        // (Literal widths and offsets: the code generator prints a named
        // constant as a signal name. 35 = HALF, 70 = ACC_BITS.)
        for j in 0..LANES {
            self.lo_sum[j].next = self.mul[j].term.val().get_bits::<35>(0).to_bits::<36>();
            self.a5_ohi[j].d.next = 0.into();
            if !self.a4_fresh.q.val() {
                self.lo_sum[j].next = self.mul[j].term.val().get_bits::<35>(0).to_bits::<36>()
                    + self.a4_old.q.val().get_bits::<35>(70 * j).to_bits::<36>();
                self.a5_ohi[j].d.next = self.a4_old.q.val().get_bits::<35>(70 * j + 35);
            }
            self.a5_lo[j].d.next = self.lo_sum[j].val().get_bits::<35>(0);
            self.a5_cy[j].d.next = self.lo_sum[j].val().get_bit(35);
            self.a5_thi[j].d.next = self.mul[j].term.val().get_bits::<35>(35);
        }

        // Stage 5: the high halves with the carries; the word is written.
        self.word.next = 0.into();
        for j in 0..LANES {
            self.hi_sum[j].next = self.a5_ohi[j].q.val() + self.a5_thi[j].q.val();
            if self.a5_cy[j].q.val() {
                self.hi_sum[j].next = self.a5_ohi[j].q.val() + self.a5_thi[j].q.val() + 1;
            }
        }
        // The word, lane 7 first (a shift by a loop-dependent amount, or a
        // `bit_cast` of a loop-indexed value, does not generate).
        for j in 0..LANES {
            self.lane_word[j].next = (self.hi_sum[j].val().to_bits::<70>() << 35)
                | self.a5_lo[j].q.val().to_bits::<70>();
        }
        for j in 0..LANES {
            self.word.next = (self.word.val() << 70) | self.lane_word[7 - j].val().to_bits::<560>();
        }
        self.acc.write_enable.next = self.a5_v.q.val();
        self.acc.write_address.next = bit_cast::<W, 16>(self.a5_group.q.val());
        self.acc.write_data.next = self.word.val();

        // Emit: token `cnt` is read (its group's word), its lane selected
        // a clock later, then scaled.
        self.e1_v.d.next = false;
        self.e1_lane.d.next = self.cnt.q.val().get_bits::<3>(0);
        self.e2_v.d.next = self.e1_v.q.val();
        self.rd_word.next = self.acc.read_data.val();
        self.e2_dot.d.next = self.rd_word.val().get_bits::<70>(0);
        for j in 0..LANES {
            if self.e1_lane.q.val().index() == j {
                self.e2_dot.d.next = self.rd_word.val().get_bits::<70>(70 * j);
            }
        }
        self.grp.next = self.cnt.q.val() >> 3;
        self.scale.in_valid.next = self.e2_v.q.val();
        self.scale.in_dot.next = self.e2_dot.q.val();
        self.scale.in_c.next = self.c_r.q.val();
        self.out_valid.next = self.scale.out_valid.val();
        self.out_logit.next = self.scale.out_logit.val();

        match self.state.q.val() {
            DimScoreState::Idle => {}
            DimScoreState::Accumulate => {
                if self.flush.val() {
                    self.cnt.d.next = 0.into();
                    self.state.d.next = DimScoreState::Drain;
                }
            }
            DimScoreState::Drain => {
                // The last beat's write lands ACC_DEPTH − 1 clocks after
                // the flush clock.
                if !(self.a1_v.q.val()
                    | self.a2_v.q.val()
                    | self.a3_v.q.val()
                    | self.a4_v.q.val()
                    | self.a5_v.q.val())
                {
                    self.state.d.next = DimScoreState::Emit;
                }
            }
            DimScoreState::Emit => {
                if self.cnt.q.val() < self.s_r.q.val() {
                    self.acc.read_address.next = bit_cast::<W, 16>(self.grp.val());
                    self.e1_v.d.next = true;
                    self.cnt.d.next = self.cnt.q.val() + 1;
                } else {
                    self.tail.d.next = self.tail_c.val();
                    self.state.d.next = DimScoreState::Tail;
                }
            }
            DimScoreState::Tail => {
                if self.tail.q.val().any() {
                    self.tail.d.next = self.tail.q.val() - 1;
                } else {
                    self.done_r.d.next = true;
                    self.state.d.next = DimScoreState::Idle;
                }
            }
        }
        if self.start.val() {
            self.state.d.next = DimScoreState::Accumulate;
            self.s_r.d.next = self.s.val();
            self.c_r.d.next = self.c.val();
            self.haz.d.next = false;
            for i in 0..(ACC_DEPTH - 1) {
                self.recent_v[i].d.next = false;
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// The inputs of one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimCycle {
    /// `start`.
    pub start: bool,
    /// `s`.
    pub s: u16,
    /// `c`.
    pub c: u32,
    /// `in_valid`.
    pub in_valid: bool,
    /// `in_fresh`.
    pub in_fresh: bool,
    /// `in_group`.
    pub in_group: u16,
    /// `in_q` (i32 bits).
    pub in_q: u32,
    /// `in_data`.
    pub in_data: u128,
    /// `flush`.
    pub flush: bool,
}

impl DimCycle {
    /// The fields in the order of `tb/dim_score_tb.v`'s vector lines, hex.
    pub fn vector_line(&self) -> String {
        format!(
            "{:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x}",
            u8::from(self.start),
            self.s,
            self.c,
            u8::from(self.in_valid),
            u8::from(self.in_fresh),
            self.in_group,
            self.in_q,
            self.in_data,
            u8::from(self.flush)
        )
    }
}

impl<const W: usize> DimScore<W> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &DimCycle) {
        self.start.next = c.start;
        self.s.next = u64::from(c.s).into();
        self.c.next = u64::from(c.c).into();
        self.in_valid.next = c.in_valid;
        self.in_fresh.next = c.in_fresh;
        self.in_group.next = u64::from(c.in_group).into();
        self.in_q.next = u64::from(c.in_q).into();
        self.in_data.next = c.in_data.to_bits();
        self.flush.next = c.flush;
    }
}

/// What a run of one head produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DimRun {
    /// The logits, in output order.
    pub logits: Vec<i32>,
    /// Clocks from the `flush` clock to the `done` clock, inclusive.
    pub flush_to_done: usize,
    /// `hazard` at the end.
    pub hazard: bool,
}

/// Runs one head's clocks through a fresh `DimScore<W>` in rust-hdl.
pub fn run_head<const W: usize>(stim: &[DimCycle]) -> DimRun {
    let mut uut = DimScore::<W>::default();
    crate::sim::prepare(&mut uut);
    let mut run = DimRun::default();
    let mut flushed = 0;
    for (t, c) in stim.iter().enumerate() {
        if c.flush {
            flushed = t;
        }
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            run.logits.push(uut.out_logit.val().to_u32() as i32);
        }
        if uut.done.val() {
            run.flush_to_done = t + 1 - flushed;
        }
    }
    run.hazard = uut.hazard.val();
    run
}
