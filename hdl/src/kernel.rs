//! `AttentionKernel`: one query head's dense attention over S ≤
//! [`S_MAX`] = 8192 tokens and head dimension d ≤ 256, the engine model's
//! `attention::engine::dense_group` with a group of one, bit for bit:
//! logits `logit(q, k_j, c)`, `softmax`, `accumulate` of every value row,
//! `finish` with α = P_ONE and v̄ = 0.
//!
//! # Design
//!
//! The three datapath blocks, chained, plus one block RAM and a small
//! controller:
//!
//! 1. *K pass*: the key rows stream into the [`GemvUnit`] (`L` fp16 per
//!    clock); its logits go straight into the [`Softmax`] (which keeps
//!    them in its own RAM). After the S-th logit the controller gives the
//!    softmax its `flush`.
//! 2. *Softmax*: the unit weighs, divides and emits the S probabilities in
//!    token order; the controller writes them into a `2^13 × 32` block RAM
//!    ([`ADDR_BITS`]; 8 RAMB36 on xc7). When the softmax is `done`,
//!    `v_ready` rises.
//! 3. *V pass*: the value rows stream into the [`WeightedSum`] in the same
//!    token order. The probability of row r is read from the RAM one clock
//!    ahead of the row's first beat: the RAM's read address is the row
//!    index *after* the current clock (combinational: the row counter plus
//!    one when this beat ends a row), so the RAM's registered output holds
//!    p of the next row on the clock that row's first beat arrives, back to
//!    back rows included.
//! 4. *Finish*: after the S-th row the controller issues the ⌈d/L⌉ finish
//!    beats itself (α = P_ONE, v̄ = 0) and the d outputs leave, `L` per
//!    clock, on `out_valid`/`out_data`.
//!
//! # Protocol
//!
//! * `q_we`/`q_addr`/`q_data`: write query element `q_addr` (`Fx`, Q14 in
//!   an i32: `attention::engine::fx` of the fp16 query), one per clock,
//!   before the first key beat (passed to the [`GemvUnit`]).
//! * `start` (a clock of its own, or with the first key beat): latches `d`
//!   (1..=256), `s` (1..=8192) and `c` (the logit scale,
//!   `attention::engine::dense_scale(d)` for the model's dense attention);
//!   `busy` rises. Meant for an idle kernel (`busy` low): a `start` while
//!   busy restarts the controller, but logits or outputs of the old query
//!   still in a pipeline are not cancelled.
//! * `k_valid`/`k_data[j]`: the key rows, ⌈d/L⌉ beats each, element
//!   `step·L + j` on lane j, exactly S rows, back to back or with idle
//!   clocks between beats; lanes past d are masked (pad with anything).
//!   Beats are taken from the `start` clock until the S-th logit is out.
//! * `v_ready`: high from the clock after the softmax is done until the
//!   last value beat has been taken. Value beats (`v_valid`/`v_data[j]`,
//!   same layout as the keys, the S rows in the same token order) are taken
//!   only while `v_ready` is high and ignored otherwise; gaps are allowed.
//! * `out_valid`/`out_data[j]`: ⌈d/L⌉ beats of outputs (`Fx`, i32 bits),
//!   lane j = element `step·L + j`, lanes past d are 0.
//! * `done`: pulses the clock after the last output beat; `busy` is high
//!   from the clock after `start` up to and including the last output
//!   beat.
//! * `s = 0` (no tokens; the model rejects it): no value beats are taken,
//!   the outputs are d zeros.
//!
//! # Cycles
//!
//! With nb = ⌈d/L⌉, key beats back to back from the clock after `start`
//! and value beats from the first clock `v_ready` is high, from the
//! `start` clock to the `done` clock inclusive ([`cycles`]):
//!
//! * GeMV: S·nb clocks of key beats, the last logit [`gemv::LATENCY`] = 12
//!   clocks after the last beat; `flush` the clock after it: S·nb + 14;
//! * Softmax: its 3S + 51 clocks from `start` to `done` minus the S + 2 of
//!   `start`, loading and `flush` (overlapped with the GeMV): 2S + 49; then
//!   one clock to raise `v_ready`;
//! * Weighted sum: S·nb clocks of value beats, nb finish beats, the last
//!   output [`weighted_sum::LATENCY`] = 6 clocks after the last, `done`
//!   one clock later: (S + 1)·nb + 7;
//!
//! total **2·S·nb + 2S + nb + 72** (measured in the tests,
//! `kernel_structured_matches_dense_group`, `kernel_s_max` and the
//! Verilog co-simulation): 8,485 for S = 300, d = 100 and 32,841 for
//! S = 8192, d = 8 with 8 lanes (3 more than before the logit stage was
//! pipelined for 285 MHz).

use rust_hdl::prelude::*;

use crate::{GemvUnit, Softmax, WeightedSum, gemv, softmax, weighted_sum};

/// Address bits of the probability RAM (and of the softmax's logit RAM).
pub const ADDR_BITS: usize = softmax::SYNTH_ADDR_BITS;
/// Most tokens per query head (2^13).
pub const S_MAX: usize = 1 << ADDR_BITS;
/// Largest head dimension.
pub const D_MAX: usize = gemv::D_MAX;
/// Lanes of the synthesized kernel (and the Verilog co-simulation).
pub const SYNTH_LANES: usize = 8;

/// Clocks from `start` to `done` inclusive for `s ≥ 1` tokens of head
/// dimension `d` on `lanes` lanes (see the module docs).
pub fn cycles(s: usize, d: usize, lanes: usize) -> usize {
    let nb = weighted_sum::beats(d, lanes);
    2 * s * nb + 2 * s + nb + 60 + gemv::LATENCY
}

/// The controller's phase.
#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum KernelState {
    /// Waiting for `start`.
    Idle,
    /// Key rows → logits → softmax.
    KPass,
    /// The softmax computes; probabilities → RAM.
    Softmax,
    /// Value rows → weighted sum (`v_ready`).
    VPass,
    /// Finish beats.
    Finish,
    /// Waiting for the last outputs.
    Drain,
}

/// The attention kernel with `L` lanes (a power of two ≤ 8); see the
/// module docs.
#[derive(LogicBlock)]
pub struct AttentionKernel<const L: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Write one query element.
    pub q_we: Signal<In, Bit>,
    /// Its index (0..d).
    pub q_addr: Signal<In, Bits<8>>,
    /// Its value (`Fx`, i32 bits).
    pub q_data: Signal<In, Bits<32>>,
    /// Begin a query head: latch `d`, `s`, `c`.
    pub start: Signal<In, Bit>,
    /// Head dimension, 1..=256.
    pub d: Signal<In, Bits<9>>,
    /// Tokens, 1..=8192.
    pub s: Signal<In, Bits<14>>,
    /// Logit scale (Q16).
    pub c: Signal<In, Bits<32>>,
    /// A key beat arrives.
    pub k_valid: Signal<In, Bit>,
    /// Its fp16 values, lane j = element `step·L + j`.
    pub k_data: [Signal<In, Bits<16>>; L],
    /// The kernel takes value beats.
    pub v_ready: Signal<Out, Bit>,
    /// A value beat arrives (taken only while `v_ready`).
    pub v_valid: Signal<In, Bit>,
    /// Its fp16 values, lane j = element `step·L + j`.
    pub v_data: [Signal<In, Bits<16>>; L],
    /// An output beat leaves.
    pub out_valid: Signal<Out, Bit>,
    /// The outputs (`Fx`, i32 bits), lane j = element `step·L + j`.
    pub out_data: [Signal<Out, Bits<32>>; L],
    /// Between `start` and `done`.
    pub busy: Signal<Out, Bit>,
    /// The clock after the last output beat.
    pub done: Signal<Out, Bit>,
    gemv: GemvUnit<L>,
    softmax: Softmax<ADDR_BITS>,
    wsum: WeightedSum<L>,
    ram: RAM<Bits<32>, ADDR_BITS>,
    lanes: Constant<Bits<9>>,
    state: DFF<KernelState>,
    d_r: DFF<Bits<9>>,
    s_r: DFF<Bits<14>>,
    /// Logits taken (K pass), then probabilities written (softmax).
    count: DFF<Bits<14>>,
    /// Value rows taken.
    row: DFF<Bits<14>>,
    /// Elements left in the current value row, then in the finish.
    left: DFF<Bits<9>>,
    /// Elements left to output.
    o_left: DFF<Bits<9>>,
    done_r: DFF<Bit>,
    v_beat: Signal<Local, Bit>,
    v_last: Signal<Local, Bit>,
    next_row: Signal<Local, Bits<14>>,
}

impl<const L: usize> Default for AttentionKernel<L> {
    fn default() -> Self {
        assert!(
            L.is_power_of_two() && L <= 8,
            "L must be a power of two ≤ 8"
        );
        Self {
            clock: Default::default(),
            q_we: Default::default(),
            q_addr: Default::default(),
            q_data: Default::default(),
            start: Default::default(),
            d: Default::default(),
            s: Default::default(),
            c: Default::default(),
            k_valid: Default::default(),
            k_data: std::array::from_fn(|_| Default::default()),
            v_ready: Default::default(),
            v_valid: Default::default(),
            v_data: std::array::from_fn(|_| Default::default()),
            out_valid: Default::default(),
            out_data: std::array::from_fn(|_| Default::default()),
            busy: Default::default(),
            done: Default::default(),
            gemv: Default::default(),
            softmax: Default::default(),
            wsum: Default::default(),
            ram: Default::default(),
            lanes: Constant::new((L as u64).into()),
            state: Default::default(),
            d_r: Default::default(),
            s_r: Default::default(),
            count: Default::default(),
            row: Default::default(),
            left: Default::default(),
            o_left: Default::default(),
            done_r: Default::default(),
            v_beat: Default::default(),
            v_last: Default::default(),
            next_row: Default::default(),
        }
    }
}

impl<const L: usize> std::fmt::Debug for AttentionKernel<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttentionKernel")
            .field("lanes", &L)
            .finish()
    }
}

impl<const L: usize> Logic for AttentionKernel<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, d_r, s_r, count, row, left, o_left, done_r
        );
        self.gemv.clock.next = self.clock.val();
        self.softmax.clock.next = self.clock.val();
        self.wsum.clock.next = self.clock.val();
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();

        // GeMV: query, start and key beats pass through.
        self.gemv.q_we.next = self.q_we.val();
        self.gemv.q_addr.next = self.q_addr.val();
        self.gemv.q_data.next = self.q_data.val();
        self.gemv.start.next = self.start.val();
        self.gemv.d.next = self.d.val();
        self.gemv.c.next = self.c.val();
        self.gemv.k_valid.next =
            self.k_valid.val() & (self.start.val() | (self.state.q.val() == KernelState::KPass));
        for j in 0..L {
            self.gemv.k_data[j].next = self.k_data[j].val();
        }

        // Softmax: the logits straight in, flush after the S-th.
        self.softmax.start.next = self.start.val();
        self.softmax.in_valid.next =
            self.gemv.out_valid.val() & (self.state.q.val() == KernelState::KPass);
        self.softmax.in_logit.next = self.gemv.out_logit.val();
        self.softmax.flush.next = false;

        // Probability RAM: written in the softmax phase, read one row ahead
        // in the V pass.
        self.v_beat.next = self.v_valid.val() & (self.state.q.val() == KernelState::VPass);
        self.v_last.next = self.left.q.val() <= self.lanes.val();
        self.next_row.next = self.row.q.val();
        if self.v_beat.val() & self.v_last.val() {
            self.next_row.next = self.row.q.val() + 1;
        }
        self.ram.read_address.next = self.next_row.val().get_bits::<ADDR_BITS>(0);
        self.ram.write_address.next = self.count.q.val().get_bits::<ADDR_BITS>(0);
        self.ram.write_data.next = self.softmax.out_prob.val();
        self.ram.write_enable.next =
            self.softmax.out_valid.val() & (self.state.q.val() == KernelState::Softmax);

        // Weighted sum: value beats, p from the RAM, the finish with
        // α = P_ONE and v̄ = 0.
        self.wsum.start.next = self.start.val();
        self.wsum.d.next = self.d.val();
        self.wsum.v_valid.next = self.v_beat.val();
        self.wsum.p.next = self.ram.read_data.val();
        self.wsum.f_valid.next = self.state.q.val() == KernelState::Finish;
        self.wsum.alpha.next = 0x4000_0000.into();
        for j in 0..L {
            self.wsum.v_data[j].next = self.v_data[j].val();
            self.wsum.vmean[j].next = 0.into();
            self.out_data[j].next = self.wsum.out_data[j].val();
        }
        self.out_valid.next = self.wsum.out_valid.val();

        self.v_ready.next = self.state.q.val() == KernelState::VPass;
        // (The softmax is busy only while the controller is, too.)
        self.busy.next = (self.state.q.val() != KernelState::Idle) | self.softmax.busy.val();
        self.done_r.d.next = false;
        self.done.next = self.done_r.q.val();

        match self.state.q.val() {
            KernelState::Idle => {}
            KernelState::KPass => {
                if self.gemv.out_valid.val() {
                    self.count.d.next = self.count.q.val() + 1;
                }
                if self.count.q.val() == self.s_r.q.val() {
                    self.softmax.flush.next = true;
                    self.count.d.next = 0.into();
                    self.state.d.next = KernelState::Softmax;
                }
            }
            KernelState::Softmax => {
                if self.softmax.out_valid.val() {
                    self.count.d.next = self.count.q.val() + 1;
                }
                if self.softmax.done.val() {
                    self.left.d.next = self.d_r.q.val();
                    if self.s_r.q.val() == 0 {
                        self.state.d.next = KernelState::Finish;
                    } else {
                        self.state.d.next = KernelState::VPass;
                    }
                }
            }
            KernelState::VPass => {
                if self.v_beat.val() {
                    self.left.d.next = self.left.q.val() - self.lanes.val();
                    if self.v_last.val() {
                        self.left.d.next = self.d_r.q.val();
                        self.row.d.next = self.next_row.val();
                        if self.next_row.val() == self.s_r.q.val() {
                            self.state.d.next = KernelState::Finish;
                        }
                    }
                }
            }
            KernelState::Finish => {
                self.left.d.next = self.left.q.val() - self.lanes.val();
                if self.left.q.val() <= self.lanes.val() {
                    self.state.d.next = KernelState::Drain;
                }
            }
            KernelState::Drain => {}
        }
        // Outputs: ⌈d/L⌉ beats (one for d = 0).
        if self.wsum.out_valid.val() {
            self.o_left.d.next = self.o_left.q.val() - self.lanes.val();
            if self.o_left.q.val() <= self.lanes.val() {
                self.done_r.d.next = true;
                self.state.d.next = KernelState::Idle;
            }
        }
        if self.start.val() {
            self.state.d.next = KernelState::KPass;
            self.d_r.d.next = self.d.val();
            self.s_r.d.next = self.s.val();
            self.count.d.next = 0.into();
            self.row.d.next = 0.into();
            self.left.d.next = self.d.val();
            self.o_left.d.next = self.d.val();
            self.done_r.d.next = false;
        }
    }
}

/// One query head: d, S, the scale, the query (`Fx`) and the S key and
/// value rows (d fp16 each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelQuery {
    /// Head dimension.
    pub d: usize,
    /// Logit scale (Q16).
    pub c: u32,
    /// The query, d `Fx` values.
    pub q: Vec<i32>,
    /// S key rows.
    pub k: Vec<Vec<u16>>,
    /// S value rows.
    pub v: Vec<Vec<u16>>,
}

/// The inputs of one clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCycle {
    /// `q_we`.
    pub q_we: bool,
    /// `q_addr`.
    pub q_addr: u8,
    /// `q_data` (i32 bits).
    pub q_data: i32,
    /// `start`.
    pub start: bool,
    /// `d`.
    pub d: u16,
    /// `s`.
    pub s: u16,
    /// `c`.
    pub c: u32,
    /// `k_valid`.
    pub k_valid: bool,
    /// `k_data[j]`; empty is all zero.
    pub k: Vec<u16>,
    /// `v_valid`.
    pub v_valid: bool,
    /// `v_data[j]`; empty is all zero.
    pub v: Vec<u16>,
}

impl KernelCycle {
    /// The fields in the order of `tb/kernel_tb.v`'s vector lines, hex:
    /// `q_we q_addr q_data start d s c k_valid k[0..L] v_valid v[0..L]`.
    pub fn vector_line(&self, lanes: usize) -> String {
        let mut s = format!(
            "{:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x}",
            u8::from(self.q_we),
            self.q_addr,
            self.q_data as u32,
            u8::from(self.start),
            self.d,
            self.s,
            self.c,
            u8::from(self.k_valid)
        );
        for j in 0..lanes {
            s.push_str(&format!(" {:x}", self.k.get(j).copied().unwrap_or(0)));
        }
        s.push_str(&format!(" {:x}", u8::from(self.v_valid)));
        for j in 0..lanes {
            s.push_str(&format!(" {:x}", self.v.get(j).copied().unwrap_or(0)));
        }
        s
    }
}

/// The beats of `rows` (⌈d/L⌉ each, lanes past d filled with `pad`).
pub fn row_beats(rows: &[Vec<u16>], d: usize, lanes: usize, pad: u16) -> Vec<Vec<u16>> {
    let mut out = Vec::new();
    for row in rows {
        assert_eq!(row.len(), d, "a row has d elements");
        for b in 0..weighted_sum::beats(d, lanes) {
            out.push(
                (0..lanes)
                    .map(|j| row.get(b * lanes + j).copied().unwrap_or(pad))
                    .collect(),
            );
        }
    }
    out
}

/// The clocks of one query head up to its first value beat: the d query
/// writes, `start`, the key beats back to back, then idle clocks until
/// `v_ready` (which [`cycles`] places `2S + 50` clocks after the flush);
/// then the value beats back to back and idle clocks until `done`. This is
/// the fixed schedule the Verilog testbench replays.
pub fn stimulus(query: &KernelQuery, lanes: usize, pad: u16) -> Vec<KernelCycle> {
    let (d, s) = (query.d, query.k.len());
    assert!(
        (1..=S_MAX).contains(&s) && d <= D_MAX,
        "1 ≤ S ≤ 8192, d ≤ 256"
    );
    let nb = weighted_sum::beats(d, lanes);
    let mut out: Vec<KernelCycle> = query
        .q
        .iter()
        .enumerate()
        .map(|(i, &x)| KernelCycle {
            q_we: true,
            q_addr: i as u8,
            q_data: x,
            ..KernelCycle::default()
        })
        .collect();
    let t0 = out.len();
    out.push(KernelCycle {
        start: true,
        d: d as u16,
        s: s as u16,
        c: query.c,
        ..KernelCycle::default()
    });
    for k in row_beats(&query.k, d, lanes, pad) {
        out.push(KernelCycle {
            k_valid: true,
            k,
            ..KernelCycle::default()
        });
    }
    // v_ready is first seen high after clock t0 + s·nb + 2s + 52 +
    // gemv::LATENCY (61 before the logit stage was pipelined).
    let first_v = t0 + s * nb + 2 * s + 53 + gemv::LATENCY;
    out.resize(first_v, KernelCycle::default());
    for v in row_beats(&query.v, d, lanes, pad) {
        out.push(KernelCycle {
            v_valid: true,
            v,
            ..KernelCycle::default()
        });
    }
    out.resize(t0 + cycles(s, d, lanes), KernelCycle::default());
    out
}

impl<const L: usize> AttentionKernel<L> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &KernelCycle) {
        self.q_we.next = c.q_we;
        self.q_addr.next = u64::from(c.q_addr).into();
        self.q_data.next = u64::from(c.q_data as u32).into();
        self.start.next = c.start;
        self.d.next = u64::from(c.d).into();
        self.s.next = u64::from(c.s).into();
        self.c.next = u64::from(c.c).into();
        self.k_valid.next = c.k_valid;
        self.v_valid.next = c.v_valid;
        for j in 0..L {
            self.k_data[j].next = u64::from(c.k.get(j).copied().unwrap_or(0)).into();
            self.v_data[j].next = u64::from(c.v.get(j).copied().unwrap_or(0)).into();
        }
    }
}

/// What one run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelRun {
    /// The `L` output lanes of each output beat, in order.
    pub beats: Vec<Vec<i32>>,
    /// The clock of each `done`.
    pub done_clock: Vec<usize>,
    /// The clock after which `v_ready` was first seen high, per query head.
    pub v_ready_clock: Vec<usize>,
}

impl KernelRun {
    /// The first `d` outputs.
    pub fn outputs(&self, d: usize) -> Vec<i32> {
        let mut o: Vec<i32> = self.beats.iter().flatten().copied().collect();
        o.truncate(d);
        o
    }
}

/// Runs `stim` through a fresh `AttentionKernel<L>` in rust-hdl.
pub fn run<const L: usize>(stim: &[KernelCycle]) -> KernelRun {
    let mut uut = AttentionKernel::<L>::default();
    crate::sim::prepare(&mut uut);
    let mut run = KernelRun::default();
    let mut ready = false;
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        record(&uut, t, &mut ready, &mut run);
    }
    run
}

fn record<const L: usize>(
    uut: &AttentionKernel<L>,
    t: usize,
    ready: &mut bool,
    run: &mut KernelRun,
) {
    if uut.out_valid.val() {
        run.beats.push(
            uut.out_data
                .iter()
                .map(|x| x.val().to_u32() as i32)
                .collect(),
        );
    }
    if uut.v_ready.val() && !*ready {
        run.v_ready_clock.push(t);
    }
    *ready = uut.v_ready.val();
    if uut.done.val() {
        run.done_clock.push(t);
    }
}

/// A rust-hdl kernel driven clock by clock.
struct Driver<const L: usize> {
    uut: AttentionKernel<L>,
    run: KernelRun,
    ready: bool,
    t: usize,
}

impl<const L: usize> Driver<L> {
    fn step(&mut self, c: &KernelCycle) {
        self.uut.drive(c);
        crate::sim::tick(&mut self.uut, |u| &mut u.clock);
        record(&self.uut, self.t, &mut self.ready, &mut self.run);
        self.t += 1;
    }
}

/// Runs one query head through a fresh `AttentionKernel<L>`, reacting to
/// `v_ready`: `k_gap(i)` idle clocks before key beat i, `v_delay` clocks
/// after `v_ready` before the first value beat, `v_gap(i)` idle clocks
/// before value beat i. Value beats offered before `v_ready` and after
/// the S rows (fp16 +Inf) must be ignored. Returns the run and the clock
/// of `start`.
pub fn run_reactive<const L: usize>(
    query: &KernelQuery,
    pad: u16,
    k_gap: impl Fn(usize) -> usize,
    v_delay: usize,
    v_gap: impl Fn(usize) -> usize,
) -> (KernelRun, usize) {
    let (d, s) = (query.d, query.k.len());
    let mut uut = AttentionKernel::<L>::default();
    crate::sim::prepare(&mut uut);
    let mut dr = Driver {
        uut,
        run: KernelRun::default(),
        ready: false,
        t: 0,
    };
    for (i, &x) in query.q.iter().enumerate() {
        dr.step(&KernelCycle {
            q_we: true,
            q_addr: i as u8,
            q_data: x,
            ..KernelCycle::default()
        });
    }
    let t0 = dr.t;
    dr.step(&KernelCycle {
        start: true,
        d: d as u16,
        s: s as u16,
        c: query.c,
        ..KernelCycle::default()
    });
    let idle = KernelCycle::default();
    let junk = KernelCycle {
        v_valid: true,
        v: vec![0x7C00; L],
        ..KernelCycle::default()
    };
    for (i, k) in row_beats(&query.k, d, L, pad).into_iter().enumerate() {
        for _ in 0..k_gap(i) {
            dr.step(&idle);
        }
        dr.step(&KernelCycle {
            k_valid: true,
            k,
            ..KernelCycle::default()
        });
    }
    let limit = t0 + 100 * (cycles(s, d, L) + 1000);
    while !dr.uut.v_ready.val() {
        dr.step(&junk);
        assert!(dr.run.done_clock.is_empty(), "done before the V pass");
        assert!(dr.t < limit, "v_ready never rose");
    }
    for _ in 0..v_delay {
        dr.step(&idle);
    }
    for (i, v) in row_beats(&query.v, d, L, pad).into_iter().enumerate() {
        for _ in 0..v_gap(i) {
            dr.step(&idle);
        }
        dr.step(&KernelCycle {
            v_valid: true,
            v,
            ..KernelCycle::default()
        });
    }
    while dr.run.done_clock.is_empty() {
        dr.step(&junk);
        assert!(dr.t < limit, "done never came");
    }
    (dr.run, t0)
}

#[cfg(test)]
mod tests;
