//! `ArgTopK`: streaming top-k of (u64 key, u32 index) pairs, the engine
//! model's `attention::engine::argtopk`: the larger key wins, equal keys go
//! to the lower index, and the chosen indices leave in ascending order.
//!
//! # Design
//!
//! Two sorted shift-register arrays of `K` entries (the const generic
//! `K_MAX`; [`SYNTH_K_MAX`] = 64 in synthesis and in the tests):
//!
//! 1. *Collect* (one pair per clock): array A holds the best pairs so far,
//!    best first. Every entry compares the incoming pair with its own in
//!    parallel (`key > a.key || key == a.key && index < a.index`, or the
//!    entry is empty); the comparisons form a step (lose…lose, win…win),
//!    and each entry takes the new pair (first winner) or its upper
//!    neighbour's (later winners). The worst pair falls off the end.
//! 2. *Drain* (one per clock, `min(k, n)` clocks): A's head is popped into
//!    array B, sorted the same way by ascending index.
//! 3. *Emit* (one per clock): B's head leaves on `out_valid`/`out_index`;
//!    `done` pulses after the last.
//!
//! A pair's index is whatever comes in; the model numbers keys 0, 1, 2, …,
//! and any distinct indices give the same order because the tie rule is in
//! the comparison, not in the arrival order.
//!
//! # Protocol
//!
//! `start` (any state) clears both arrays and latches `k`; then `in_valid`
//! pairs; then `flush` (a clock of its own, after the last pair) drains and
//! emits. `busy` is high from `start` to `done`. `k = 0` emits nothing;
//! `k ≥ n` emits every index; `k > K` acts as `k = K` (the model would
//! return more, so the firmware never asks for it).
//!
//! # Cycles
//!
//! From the `start` clock to the `done` clock inclusive: 1 (start) + n
//! (pairs) + 1 (flush) + m (drain) + 1 + m (emit) + 1 (done), m = min(k,
//! n, K): n + 2m + 4, measured in the tests (`argtopk_cycles`).

use rust_hdl::prelude::*;

/// `K_MAX` of the synthesized and tested unit.
pub const SYNTH_K_MAX: usize = 64;

/// The unit's phase.
#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum TopKState {
    /// Waiting for `start`.
    Idle,
    /// Taking pairs.
    Collect,
    /// Moving the best `k` from A to B.
    Drain,
    /// Sending B out.
    Emit,
}

/// The streaming argtopk unit; see the module docs.
#[derive(LogicBlock, Debug)]
pub struct ArgTopK<const K: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Begin a new selection; latches `k`.
    pub start: Signal<In, Bit>,
    /// How many to select (≤ K).
    pub k: Signal<In, Bits<16>>,
    /// A pair arrives.
    pub in_valid: Signal<In, Bit>,
    /// Its key.
    pub in_key: Signal<In, Bits<64>>,
    /// Its index.
    pub in_index: Signal<In, Bits<32>>,
    /// No more pairs: drain and emit.
    pub flush: Signal<In, Bit>,
    /// A selected index leaves (ascending order).
    pub out_valid: Signal<Out, Bit>,
    /// The selected index.
    pub out_index: Signal<Out, Bits<32>>,
    /// One clock after the last selected index.
    pub done: Signal<Out, Bit>,
    /// Between `start` and `done`.
    pub busy: Signal<Out, Bit>,
    state: DFF<TopKState>,
    k_r: DFF<Bits<16>>,
    drained: DFF<Bits<16>>,
    done_r: DFF<Bit>,
    a_key: [DFF<Bits<64>>; K],
    a_idx: [DFF<Bits<32>>; K],
    a_ok: [DFF<Bit>; K],
    b_idx: [DFF<Bits<32>>; K],
    b_ok: [DFF<Bit>; K],
    a_win: [Signal<Local, Bit>; K],
    b_win: [Signal<Local, Bit>; K],
}

impl<const K: usize> Default for ArgTopK<K> {
    fn default() -> Self {
        assert!(K >= 1 && K < (1 << 16), "K_MAX must be in 1..65536");
        Self {
            clock: Default::default(),
            start: Default::default(),
            k: Default::default(),
            in_valid: Default::default(),
            in_key: Default::default(),
            in_index: Default::default(),
            flush: Default::default(),
            out_valid: Default::default(),
            out_index: Default::default(),
            done: Default::default(),
            busy: Default::default(),
            state: Default::default(),
            k_r: Default::default(),
            drained: Default::default(),
            done_r: Default::default(),
            a_key: std::array::from_fn(|_| Default::default()),
            a_idx: std::array::from_fn(|_| Default::default()),
            a_ok: std::array::from_fn(|_| Default::default()),
            b_idx: std::array::from_fn(|_| Default::default()),
            b_ok: std::array::from_fn(|_| Default::default()),
            a_win: std::array::from_fn(|_| Default::default()),
            b_win: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const K: usize> Logic for ArgTopK<K> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, k_r, drained, done_r);
        for i in 0..K {
            self.a_key[i].clock.next = self.clock.val();
            self.a_key[i].d.next = self.a_key[i].q.val();
            self.a_idx[i].clock.next = self.clock.val();
            self.a_idx[i].d.next = self.a_idx[i].q.val();
            self.a_ok[i].clock.next = self.clock.val();
            self.a_ok[i].d.next = self.a_ok[i].q.val();
            self.b_idx[i].clock.next = self.clock.val();
            self.b_idx[i].d.next = self.b_idx[i].q.val();
            self.b_ok[i].clock.next = self.clock.val();
            self.b_ok[i].d.next = self.b_ok[i].q.val();
        }
        // Does the incoming pair beat entry i of A? Does A's head (by
        // index) beat entry i of B?
        for i in 0..K {
            self.a_win[i].next = !self.a_ok[i].q.val()
                | (self.in_key.val() > self.a_key[i].q.val())
                | ((self.in_key.val() == self.a_key[i].q.val())
                    & (self.in_index.val() < self.a_idx[i].q.val()));
            self.b_win[i].next =
                !self.b_ok[i].q.val() | (self.a_idx[0].q.val() < self.b_idx[i].q.val());
        }
        self.out_valid.next = false;
        self.out_index.next = self.b_idx[0].q.val();
        self.done_r.d.next = false;
        self.done.next = self.done_r.q.val();
        self.busy.next = self.state.q.val() != TopKState::Idle;
        match self.state.q.val() {
            TopKState::Idle => {}
            TopKState::Collect => {
                if self.flush.val() {
                    self.state.d.next = TopKState::Drain;
                } else if self.in_valid.val() {
                    if self.a_win[0].val() {
                        self.a_key[0].d.next = self.in_key.val();
                        self.a_idx[0].d.next = self.in_index.val();
                        self.a_ok[0].d.next = true;
                    }
                    for i in 1..K {
                        if self.a_win[i].val() {
                            if self.a_win[i - 1].val() {
                                self.a_key[i].d.next = self.a_key[i - 1].q.val();
                                self.a_idx[i].d.next = self.a_idx[i - 1].q.val();
                                self.a_ok[i].d.next = self.a_ok[i - 1].q.val();
                            } else {
                                self.a_key[i].d.next = self.in_key.val();
                                self.a_idx[i].d.next = self.in_index.val();
                                self.a_ok[i].d.next = true;
                            }
                        }
                    }
                }
            }
            TopKState::Drain => {
                if self.a_ok[0].q.val() & (self.drained.q.val() < self.k_r.q.val()) {
                    self.drained.d.next = self.drained.q.val() + 1;
                    // Pop A's head...
                    for i in 0..(K - 1) {
                        self.a_key[i].d.next = self.a_key[i + 1].q.val();
                        self.a_idx[i].d.next = self.a_idx[i + 1].q.val();
                        self.a_ok[i].d.next = self.a_ok[i + 1].q.val();
                    }
                    // (A one-trip loop: rust-hdl resolves index expressions
                    // against loop variables only, not const generics.)
                    for i in (K - 1)..K {
                        self.a_ok[i].d.next = false;
                    }
                    // ...into B, by ascending index.
                    if self.b_win[0].val() {
                        self.b_idx[0].d.next = self.a_idx[0].q.val();
                        self.b_ok[0].d.next = true;
                    }
                    for i in 1..K {
                        if self.b_win[i].val() {
                            if self.b_win[i - 1].val() {
                                self.b_idx[i].d.next = self.b_idx[i - 1].q.val();
                                self.b_ok[i].d.next = self.b_ok[i - 1].q.val();
                            } else {
                                self.b_idx[i].d.next = self.a_idx[0].q.val();
                                self.b_ok[i].d.next = true;
                            }
                        }
                    }
                } else {
                    self.state.d.next = TopKState::Emit;
                }
            }
            TopKState::Emit => {
                if self.b_ok[0].q.val() {
                    self.out_valid.next = true;
                    for i in 0..(K - 1) {
                        self.b_idx[i].d.next = self.b_idx[i + 1].q.val();
                        self.b_ok[i].d.next = self.b_ok[i + 1].q.val();
                    }
                    for i in (K - 1)..K {
                        self.b_ok[i].d.next = false;
                    }
                } else {
                    self.state.d.next = TopKState::Idle;
                    self.done_r.d.next = true;
                }
            }
        }
        if self.start.val() {
            self.state.d.next = TopKState::Collect;
            self.k_r.d.next = self.k.val();
            self.drained.d.next = 0.into();
            for i in 0..K {
                self.a_ok[i].d.next = false;
                self.b_ok[i].d.next = false;
            }
        }
    }
}

/// The inputs of one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopKCycle {
    /// `start`.
    pub start: bool,
    /// `k`.
    pub k: u16,
    /// `in_valid`.
    pub in_valid: bool,
    /// `in_key`.
    pub in_key: u64,
    /// `in_index`.
    pub in_index: u32,
    /// `flush`.
    pub flush: bool,
}

impl TopKCycle {
    /// The fields in the order of `tb/argtopk_tb.v`'s vector lines, hex.
    pub fn vector_line(&self) -> String {
        format!(
            "{:x} {:x} {:x} {:x} {:x} {:x}",
            u8::from(self.start),
            self.k,
            u8::from(self.in_valid),
            self.in_key,
            self.in_index,
            u8::from(self.flush)
        )
    }
}

/// The clocks of one selection: `start` with `k`, key `j` with index `j`
/// on each following clock, `flush`, then idle clocks until `done` (for a
/// unit of `k_max` entries).
pub fn stimulus(keys: &[u64], k: u16, k_max: usize) -> Vec<TopKCycle> {
    let mut out = vec![TopKCycle {
        start: true,
        k,
        ..TopKCycle::default()
    }];
    out.extend(keys.iter().zip(0u32..).map(|(&key, j)| TopKCycle {
        in_valid: true,
        in_key: key,
        in_index: j,
        ..TopKCycle::default()
    }));
    out.push(TopKCycle {
        flush: true,
        ..TopKCycle::default()
    });
    let m = usize::from(k).min(keys.len()).min(k_max);
    out.extend(std::iter::repeat_n(TopKCycle::default(), 2 * m + 3));
    out
}

impl<const K: usize> ArgTopK<K> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &TopKCycle) {
        self.start.next = c.start;
        self.k.next = u64::from(c.k).into();
        self.in_valid.next = c.in_valid;
        self.in_key.next = c.in_key.into();
        self.in_index.next = u64::from(c.in_index).into();
        self.flush.next = c.flush;
    }
}

/// What one run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopKRun {
    /// Selected indices per `done`, in output order.
    pub selections: Vec<Vec<u32>>,
    /// Clocks from each selection's `start` to its `done` (inclusive).
    pub clocks: Vec<usize>,
}

/// Runs `stim` through a fresh `ArgTopK<K>` in rust-hdl.
pub fn run<const K: usize>(stim: &[TopKCycle]) -> TopKRun {
    let mut uut = ArgTopK::<K>::default();
    crate::sim::prepare(&mut uut);
    let (selections, clocks) = crate::sim::run_batches(
        &mut uut,
        stim,
        |c| c.start,
        |u, c| u.drive(c),
        |u| &mut u.clock,
        |u| u.out_valid.val().then(|| u.out_index.val().to_u32()),
        |u| u.done.val(),
    );
    TopKRun { selections, clocks }
}

#[cfg(test)]
mod tests;
