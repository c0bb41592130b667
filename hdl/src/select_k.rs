//! `SelectK`: the engine's top-k for any k, a radix select over keys held
//! in block RAM: `attention::engine::argtopk` bit for bit (the larger key
//! wins, equal keys go to the lower index, the chosen indices leave in
//! ascending order), following the plan of `attention::engine::radix_plan`.
//!
//! # Design
//!
//! One key RAM of 2^A × 64 bits (A = [`SYNTH_ADDR_BITS`] = 15: 32K keys),
//! one histogram RAM of 256 × 16 bits, and a handful of 64-bit registers;
//! no comparator array, so its size does not grow with k.
//!
//! 1. *Collect* (one key per clock): key j is written at address j; `diff`
//!    ORs `key ^ key₀`.
//! 2. *Normalise* (one bit per clock): `diff` shifts left until its top bit
//!    is set; the bits passed over are common to every key and become the
//!    first prefix (`pmask`, `pval`).
//! 3. *Passes*: *Hist* reads every key (one per clock, the RAM's read
//!    latency pipelined) and counts the candidates (`key & pmask == pval`)
//!    by their next 8 bits (fewer at the bottom) in the histogram RAM,
//!    read-modify-write with forwarding from the two writes before it
//!    for keys close together in one bin. *Scan* reads the bins from the top, clearing each, and
//!    picks the first bin at which the running count reaches `need`;
//!    *Decide* extends the prefix with it and either stops (the bin holds
//!    exactly `need`, or the prefix is the whole key) or starts another
//!    pass.
//! 4. *Emit*: every key again in index order; a key is taken when its
//!    prefix is above `pval`, or equal while fewer than `need` equal keys
//!    were taken. Taken indices leave on `out_valid`/`out_index` and are
//!    also written over the key RAM from address 0 (the write address never
//!    passes the read address), so after `done` the result can be read
//!    back at random through `res_addr`/`res_index` (one clock's latency):
//!    the engine's register port reads it that way.
//!
//! # Protocol
//!
//! `start` (any state) latches `k` and empties the unit; then `in_valid`
//! keys (index = arrival order, from 0); then `flush`. `busy` is high from
//! `start` to `done`; `selected` holds how many indices were taken. A key
//! beyond 2^A is dropped and sets `overflow` until the next `start`. `k =
//! 0` emits nothing; `k ≥ n` emits every index.
//!
//! # Cycles
//!
//! From the `start` clock to the `done` clock inclusive, for the plan of
//! the keys (`attention::engine::RadixPlan::clocks`, which the tests check
//! clock for clock):
//!
//! * 1 (start) + n + 1 (flush) + 1 (setup, then `done` at once when k = 0);
//! * when 0 < k < n: shifts + 1 (normalise), and per pass n + 11 (pass
//!   start, n reads, the read, compare and histogram pipelines drain, the
//!   scan's registered reads, decide) plus its bins (256 for an 8-bit
//!   digit);
//! * when k > 0: n + 4 (emit: n reads through the registered read and
//!   compare stages, the last index), or 1 with no keys.
//!
//! About (3 + passes)·n clocks; SparF's token keys at 32K tokens and
//! k = S/8 take five passes (`docs/hdl.md`).
//!
//! # Timing
//!
//! Both RAMs' outputs are registered before any logic, the key compare is
//! a stage of its own, the histogram's read-modify-write spans two clocks
//! with its forwarding choice made a stage early, and the scan's first
//! bin and digit width are registered ahead: the longest path is a
//! 64-bit compare (3 LUTs and 5 CARRY4 on xc7, 2.9 ns), within 285 MHz
//! by the estimate of `cargo xtask hdl synth`.

use rust_hdl::prelude::*;

use crate::argtopk::TopKRun;

/// Key RAM address bits of the synthesized and tested unit (32K keys).
pub const SYNTH_ADDR_BITS: usize = 15;
/// Keys the synthesized unit holds.
pub const SYNTH_N_MAX: usize = 1 << SYNTH_ADDR_BITS;
/// Histogram bins (8-bit digits).
const BINS: usize = 256;

/// The unit's phase.
#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum SelectState {
    /// Waiting for `start`.
    Idle,
    /// Taking keys.
    Collect,
    /// Choosing what follows the flush (waits for a histogram clear).
    Setup,
    /// Skipping the bits common to every key.
    Normalise,
    /// Before a histogram pass.
    PassStart,
    /// Counting the candidates' digits.
    Hist,
    /// Reading (and clearing) the bins from the top.
    Scan,
    /// Extending the prefix; another pass or the emit pass.
    Decide,
    /// Sending the chosen indices.
    Emit,
}

/// The radix-select unit; see the module docs. `A` is the key RAM's
/// address width (at most 15: counters are 16 bits).
#[derive(LogicBlock)]
pub struct SelectK<const A: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Begin a new selection; latches `k`.
    pub start: Signal<In, Bit>,
    /// How many to select.
    pub k: Signal<In, Bits<16>>,
    /// A key arrives.
    pub in_valid: Signal<In, Bit>,
    /// The key.
    pub in_key: Signal<In, Bits<64>>,
    /// No more keys: select and emit.
    pub flush: Signal<In, Bit>,
    /// A selected index leaves (ascending order).
    pub out_valid: Signal<Out, Bit>,
    /// The selected index.
    pub out_index: Signal<Out, Bits<32>>,
    /// One clock after the last selected index.
    pub done: Signal<Out, Bit>,
    /// Between `start` and `done`.
    pub busy: Signal<Out, Bit>,
    /// A key arrived with 2^A keys held (sticky until `start`).
    pub overflow: Signal<Out, Bit>,
    /// Indices taken by the last selection.
    pub selected: Signal<Out, Bits<16>>,
    /// While idle: the result position to read.
    pub res_addr: Signal<In, Bits<16>>,
    /// The index at `res_addr` of the clock before.
    pub res_index: Signal<Out, Bits<32>>,
    keys: RAM<Bits<64>, A>,
    hist: RAM<Bits<16>, 8>,
    state: DFF<SelectState>,
    k_r: DFF<Bits<16>>,
    n: DFF<Bits<16>>,
    key0: DFF<Bits<64>>,
    diff: DFF<Bits<64>>,
    s: DFF<Bits<7>>,
    sp: DFF<Bits<7>>,
    pmask: DFF<Bits<64>>,
    pval: DFF<Bits<64>>,
    need: DFF<Bits<16>>,
    rd: DFF<Bits<16>>,
    v1: DFF<Bit>,
    i1: DFF<Bits<16>>,
    v2: DFF<Bit>,
    i2: DFF<Bits<16>>,
    key_r: DFF<Bits<64>>,
    v3: DFF<Bit>,
    i3: DFF<Bits<16>>,
    gt3: DFF<Bit>,
    eq3: DFF<Bit>,
    bin3: DFF<Bits<8>>,
    h_v: DFF<Bit>,
    h_bin: DFF<Bits<8>>,
    h_p: DFF<Bit>,
    hd: DFF<Bits<16>>,
    g_v: DFF<Bit>,
    g_p: DFF<Bit>,
    g_bin: DFF<Bits<8>>,
    fw1: DFF<Bit>,
    fw2: DFF<Bit>,
    w1_v: DFF<Bit>,
    w1_bin: DFF<Bits<8>>,
    w1_val: DFF<Bits<16>>,
    w2_v: DFF<Bit>,
    w2_bin: DFF<Bits<8>>,
    w2_val: DFF<Bits<16>>,
    sb: DFF<Bits<9>>,
    sb_go: DFF<Bit>,
    s_v: DFF<Bit>,
    s_bin: DFF<Bits<8>>,
    s_v2: DFF<Bit>,
    s_bin2: DFF<Bits<8>>,
    rem: DFF<Bits<16>>,
    found: DFF<Bit>,
    bstar: DFF<Bits<8>>,
    bcount: DFF<Bits<16>>,
    wp: DFF<Bits<16>>,
    eqt: DFF<Bits<16>>,
    out_v: DFF<Bit>,
    out_i: DFF<Bits<32>>,
    done_r: DFF<Bit>,
    ovf: DFF<Bit>,
    dirty: DFF<Bit>,
    clr: DFF<Bits<9>>,
    cap: Constant<Bits<16>>,
    one: Constant<Bits<64>>,
    ones: Constant<Bits<64>>,
    msb: Constant<Bits<64>>,
    issue: Signal<Local, Bit>,
    key: Signal<Local, Bits<64>>,
    masked: Signal<Local, Bits<64>>,
    cand: Signal<Local, Bit>,
    bin: Signal<Local, Bits<8>>,
    count_now: Signal<Local, Bits<16>>,
    tie_ok: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    width: DFF<Bits<4>>,
    top_bin: DFF<Bits<9>>,
    sp_next: Signal<Local, Bits<7>>,
    below: Signal<Local, Bits<64>>,
    shifted: Signal<Local, Bits<64>>,
    digit: Signal<Local, Bits<8>>,
    clr_lo: Signal<Local, Bits<8>>,
}

impl<const A: usize> Default for SelectK<A> {
    fn default() -> Self {
        assert!((1..=15).contains(&A), "A must be in 1..=15");
        Self {
            clock: Default::default(),
            start: Default::default(),
            k: Default::default(),
            in_valid: Default::default(),
            in_key: Default::default(),
            flush: Default::default(),
            out_valid: Default::default(),
            out_index: Default::default(),
            done: Default::default(),
            busy: Default::default(),
            overflow: Default::default(),
            selected: Default::default(),
            res_addr: Default::default(),
            res_index: Default::default(),
            keys: Default::default(),
            // Zero at configuration, as block RAM is; every scan clears
            // the bins it read.
            hist: RAM::from(std::iter::repeat_n(Bits::<16>::default(), BINS)),
            state: Default::default(),
            k_r: Default::default(),
            n: Default::default(),
            key0: Default::default(),
            diff: Default::default(),
            s: Default::default(),
            sp: Default::default(),
            pmask: Default::default(),
            pval: Default::default(),
            need: Default::default(),
            rd: Default::default(),
            v1: Default::default(),
            i1: Default::default(),
            v2: Default::default(),
            i2: Default::default(),
            key_r: Default::default(),
            v3: Default::default(),
            i3: Default::default(),
            gt3: Default::default(),
            eq3: Default::default(),
            bin3: Default::default(),
            h_v: Default::default(),
            h_bin: Default::default(),
            h_p: Default::default(),
            hd: Default::default(),
            g_v: Default::default(),
            g_p: Default::default(),
            g_bin: Default::default(),
            fw1: Default::default(),
            fw2: Default::default(),
            w1_v: Default::default(),
            w1_bin: Default::default(),
            w1_val: Default::default(),
            w2_v: Default::default(),
            w2_bin: Default::default(),
            w2_val: Default::default(),
            sb: Default::default(),
            sb_go: Default::default(),
            s_v: Default::default(),
            s_bin: Default::default(),
            s_v2: Default::default(),
            s_bin2: Default::default(),
            rem: Default::default(),
            found: Default::default(),
            bstar: Default::default(),
            bcount: Default::default(),
            wp: Default::default(),
            eqt: Default::default(),
            out_v: Default::default(),
            out_i: Default::default(),
            done_r: Default::default(),
            ovf: Default::default(),
            dirty: Default::default(),
            clr: Default::default(),
            cap: Constant::new((1u64 << A).into()),
            one: Constant::new(1u64.into()),
            ones: Constant::new(u64::MAX.into()),
            msb: Constant::new((1u64 << 63).into()),
            issue: Default::default(),
            key: Default::default(),
            masked: Default::default(),
            cand: Default::default(),
            bin: Default::default(),
            count_now: Default::default(),
            tie_ok: Default::default(),
            take: Default::default(),
            width: Default::default(),
            top_bin: Default::default(),
            sp_next: Default::default(),
            below: Default::default(),
            shifted: Default::default(),
            digit: Default::default(),
            clr_lo: Default::default(),
        }
    }
}

impl<const A: usize> std::fmt::Debug for SelectK<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectK").field("addr_bits", &A).finish()
    }
}

impl<const A: usize> Logic for SelectK<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, k_r, n, key0, diff, s, sp, pmask, pval, need, rd, v1, i1, v2, i2,
            key_r, v3, i3, gt3, eq3, bin3, h_v, h_bin, h_p, hd, g_v, g_p, g_bin, fw1, fw2, w1_v,
            w1_bin, w1_val, w2_v, w2_bin, w2_val, sb, sb_go, s_v, s_bin, s_v2, s_bin2, rem, width,
            top_bin, found, bstar, bcount, wp, eqt, out_v, out_i, done_r, ovf, dirty, clr
        );
        self.keys.read_clock.next = self.clock.val();
        self.keys.write_clock.next = self.clock.val();
        self.hist.read_clock.next = self.clock.val();
        self.hist.write_clock.next = self.clock.val();

        self.out_valid.next = self.out_v.q.val();
        self.out_index.next = self.out_i.q.val();
        self.done.next = self.done_r.q.val();
        self.busy.next = self.state.q.val() != SelectState::Idle;
        self.overflow.next = self.ovf.q.val();
        self.selected.next = self.wp.q.val();
        self.res_index.next = self.keys.read_data.val().get_bits::<32>(0);
        self.out_v.d.next = false;
        self.done_r.d.next = false;

        // Key reads: Hist and Emit issue one per clock; idle, the result
        // port owns the read address.
        self.issue.next = ((self.state.q.val() == SelectState::Hist)
            | (self.state.q.val() == SelectState::Emit))
            & (self.rd.q.val() < self.n.q.val());
        self.keys.read_address.next = bit_cast::<A, 16>(self.rd.q.val());
        if self.state.q.val() == SelectState::Idle {
            self.keys.read_address.next = bit_cast::<A, 16>(self.res_addr.val());
        }
        if self.issue.val() {
            self.rd.d.next = self.rd.q.val() + 1;
        }
        self.v1.d.next = self.issue.val();
        self.i1.d.next = self.rd.q.val();

        // The key read two clocks ago, registered off the RAM, against the
        // prefix; the comparisons and the digit registered again (stage 3)
        // before the histogram and the emit decision use them.
        self.v2.d.next = self.v1.q.val();
        self.i2.d.next = self.i1.q.val();
        self.key_r.d.next = self.keys.read_data.val();
        self.key.next = self.key_r.q.val();
        self.masked.next = self.key.val() & self.pmask.q.val();
        // The digit: the key below the prefix, shifted down by `sp`; it
        // fits 8 bits by construction (the shift's upper bits are zero and
        // unused: `hdl/lint.vlt` waives them).
        self.below.next = self.key.val() & !self.pmask.q.val();
        self.shifted.next = self.below.val() >> self.sp.q.val();
        self.digit.next = self.shifted.val().get_bits::<8>(0);
        self.v3.d.next = self.v2.q.val();
        self.i3.d.next = self.i2.q.val();
        self.gt3.d.next = self.masked.val() > self.pval.q.val();
        self.eq3.d.next = self.masked.val() == self.pval.q.val();
        self.bin3.d.next = self.digit.val();
        self.cand.next = self.eq3.q.val();
        self.bin.next = self.bin3.q.val();
        self.tie_ok.next = self.eqt.q.val() < self.need.q.val();
        self.take.next =
            self.v3.q.val() & (self.gt3.q.val() | (self.cand.val() & self.tie_ok.val()));

        // Key writes: Collect stores keys, Emit the chosen indices.
        self.keys.write_enable.next = false;
        self.keys.write_address.next = bit_cast::<A, 16>(self.n.q.val());
        self.keys.write_data.next = self.in_key.val();

        // Histogram: Hist reads the bin of each candidate and writes it
        // back plus one; Scan reads from `sb` and clears what it read.
        // The RAM's output is registered (`hd`) before anything uses it, so
        // a read-modify-write spans two edges: the count read for a key
        // misses the two writes before it, which are forwarded (`w1` the
        // last, `w2` the one before).
        self.hd.d.next = self.hist.read_data.val();
        self.hist.read_address.next = self.bin.val();
        self.hist.write_enable.next = false;
        self.hist.write_address.next = self.g_bin.q.val();
        // Which write to forward is decided a stage early: the key ahead
        // (stage g now) writes next edge and becomes `w1`; `w1` becomes
        // `w2`.
        self.fw1.d.next = self.g_v.q.val() & (self.g_bin.q.val() == self.h_bin.q.val());
        self.fw2.d.next = self.w1_v.q.val() & (self.w1_bin.q.val() == self.h_bin.q.val());
        self.count_now.next = self.hd.q.val();
        if self.fw2.q.val() {
            self.count_now.next = self.w2_val.q.val();
        }
        if self.fw1.q.val() {
            self.count_now.next = self.w1_val.q.val();
        }
        self.hist.write_data.next = self.count_now.val() + 1;
        self.g_v.d.next = self.h_v.q.val();
        self.g_p.d.next = self.h_p.q.val();
        self.g_bin.d.next = self.h_bin.q.val();
        self.w1_v.d.next = false;
        self.w2_v.d.next = self.w1_v.q.val();
        self.w2_bin.d.next = self.w1_bin.q.val();
        self.w2_val.d.next = self.w1_val.q.val();
        self.h_v.d.next = false;
        self.h_p.d.next = false;
        self.s_v.d.next = false;
        self.s_v2.d.next = self.s_v.q.val();
        self.s_bin2.d.next = self.s_bin.q.val();

        // The digit's width (min(s, 8)) is set at PassStart; the scan's
        // first bin follows it one register later (both settle long before
        // the histogram pass ends).
        self.top_bin.d.next = (bit_cast::<9, 64>(self.one.val()) << self.width.q.val()) - 1;
        self.sp_next.next = 0.into();
        if self.s.q.val() > 8 {
            self.sp_next.next = self.s.q.val() - 8;
        }

        // A histogram left dirty by an aborted pass is cleared one bin per
        // clock while keys are collected (Setup waits for it).
        self.clr_lo.next = self.clr.q.val().get_bits::<8>(0);
        if self.clr.q.val().any()
            & (self.state.q.val() != SelectState::Hist)
            & (self.state.q.val() != SelectState::Scan)
        {
            self.hist.write_enable.next = true;
            // Bins 255 down to 0 (256 − 1 wraps to 255 in 8 bits).
            self.hist.write_address.next = self.clr_lo.val() - 1;
            self.hist.write_data.next = 0.into();
            self.clr.d.next = self.clr.q.val() - 1;
        }

        match self.state.q.val() {
            SelectState::Idle => {}
            SelectState::Collect => {
                if self.flush.val() {
                    self.state.d.next = SelectState::Setup;
                } else if self.in_valid.val() {
                    if self.n.q.val() < self.cap.val() {
                        self.keys.write_enable.next = true;
                        self.n.d.next = self.n.q.val() + 1;
                        if self.n.q.val().any() {
                            self.diff.d.next =
                                self.diff.q.val() | (self.in_key.val() ^ self.key0.q.val());
                        } else {
                            self.key0.d.next = self.in_key.val();
                        }
                    } else {
                        self.ovf.d.next = true;
                    }
                }
            }
            SelectState::Setup => {
                if !self.clr.q.val().any() {
                    if !self.k_r.q.val().any() {
                        self.state.d.next = SelectState::Idle;
                        self.done_r.d.next = true;
                    } else if self.k_r.q.val() >= self.n.q.val() {
                        self.need.d.next = self.n.q.val();
                        self.state.d.next = SelectState::Emit;
                    } else {
                        self.need.d.next = self.k_r.q.val();
                        self.s.d.next = 64.into();
                        self.state.d.next = SelectState::Normalise;
                    }
                }
            }
            SelectState::Normalise => {
                if self.s.q.val().any() & !self.diff.q.val().get_bit(63) {
                    self.diff.d.next = self.diff.q.val() << 1;
                    self.s.d.next = self.s.q.val() - 1;
                    self.pmask.d.next = (self.pmask.q.val() >> 1) | self.msb.val();
                } else {
                    self.pval.d.next = self.key0.q.val() & self.pmask.q.val();
                    if self.s.q.val().any() {
                        self.state.d.next = SelectState::PassStart;
                    } else {
                        self.state.d.next = SelectState::Emit;
                    }
                }
            }
            SelectState::PassStart => {
                self.sp.d.next = self.sp_next.val();
                self.width.d.next = 8.into();
                if self.s.q.val() <= 8 {
                    self.width.d.next = self.s.q.val().get_bits::<4>(0);
                }
                self.rd.d.next = 0.into();
                self.dirty.d.next = true;
                self.state.d.next = SelectState::Hist;
            }
            SelectState::Hist => {
                self.h_v.d.next = self.v3.q.val() & self.cand.val();
                self.h_bin.d.next = self.bin.val();
                self.h_p.d.next = self.v3.q.val();
                if self.g_v.q.val() {
                    self.hist.write_enable.next = true;
                    self.w1_v.d.next = true;
                    self.w1_bin.d.next = self.g_bin.q.val();
                    self.w1_val.d.next = self.count_now.val() + 1;
                }
                if !self.issue.val()
                    & !self.v1.q.val()
                    & !self.v2.q.val()
                    & !self.v3.q.val()
                    & !self.h_p.q.val()
                    & !self.g_p.q.val()
                {
                    self.sb.d.next = self.top_bin.q.val();
                    self.sb_go.d.next = true;
                    self.rem.d.next = self.need.q.val();
                    self.found.d.next = false;
                    self.state.d.next = SelectState::Scan;
                }
            }
            SelectState::Scan => {
                self.hist.read_address.next = self.sb.q.val().get_bits::<8>(0);
                if self.sb_go.q.val() {
                    self.s_v.d.next = true;
                    self.s_bin.d.next = self.sb.q.val().get_bits::<8>(0);
                    if self.sb.q.val().any() {
                        self.sb.d.next = self.sb.q.val() - 1;
                    } else {
                        self.sb_go.d.next = false;
                    }
                }
                // `rem`: what is still needed below the bins read so far.
                if self.s_v2.q.val() {
                    self.hist.write_enable.next = true;
                    self.hist.write_address.next = self.s_bin2.q.val();
                    self.hist.write_data.next = 0.into();
                    if !self.found.q.val() {
                        if self.hd.q.val() >= self.rem.q.val() {
                            self.found.d.next = true;
                            self.bstar.d.next = self.s_bin2.q.val();
                            self.bcount.d.next = self.hd.q.val();
                        } else {
                            self.rem.d.next = self.rem.q.val() - self.hd.q.val();
                        }
                    }
                }
                if !self.sb_go.q.val() & !self.s_v.q.val() & !self.s_v2.q.val() {
                    self.dirty.d.next = false;
                    self.state.d.next = SelectState::Decide;
                }
            }
            SelectState::Decide => {
                self.rd.d.next = 0.into();
                self.need.d.next = self.rem.q.val();
                self.s.d.next = self.sp.q.val();
                self.pmask.d.next = self.ones.val() << self.sp.q.val();
                self.pval.d.next =
                    self.pval.q.val() | (bit_cast::<64, 8>(self.bstar.q.val()) << self.sp.q.val());
                if (self.bcount.q.val() == self.rem.q.val()) | !self.sp.q.val().any() {
                    self.state.d.next = SelectState::Emit;
                } else {
                    self.state.d.next = SelectState::PassStart;
                }
            }
            SelectState::Emit => {
                if self.take.val() {
                    self.out_v.d.next = true;
                    self.out_i.d.next = bit_cast::<32, 16>(self.i3.q.val());
                    self.keys.write_enable.next = true;
                    self.keys.write_address.next = bit_cast::<A, 16>(self.wp.q.val());
                    self.keys.write_data.next = bit_cast::<64, 16>(self.i3.q.val());
                    self.wp.d.next = self.wp.q.val() + 1;
                    if self.cand.val() {
                        self.eqt.d.next = self.eqt.q.val() + 1;
                    }
                }
                if !self.issue.val() & !self.v1.q.val() & !self.v2.q.val() & !self.v3.q.val() {
                    self.state.d.next = SelectState::Idle;
                    self.done_r.d.next = true;
                }
            }
        }
        if self.start.val() {
            self.state.d.next = SelectState::Collect;
            self.k_r.d.next = self.k.val();
            self.n.d.next = 0.into();
            self.diff.d.next = 0.into();
            self.pmask.d.next = 0.into();
            self.pval.d.next = 0.into();
            self.rd.d.next = 0.into();
            self.wp.d.next = 0.into();
            self.eqt.d.next = 0.into();
            self.ovf.d.next = false;
            self.sb_go.d.next = false;
            self.done_r.d.next = false;
            if self.dirty.q.val() {
                self.clr.d.next = 256.into();
                self.dirty.d.next = false;
            }
        }
    }
}

/// The inputs of one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelectCycle {
    /// `start`.
    pub start: bool,
    /// `k`.
    pub k: u16,
    /// `in_valid`.
    pub in_valid: bool,
    /// `in_key`.
    pub in_key: u64,
    /// `flush`.
    pub flush: bool,
}

impl SelectCycle {
    /// The fields in the order of `tb/select_k_tb.v`'s vector lines, hex.
    pub fn vector_line(&self) -> String {
        format!(
            "{:x} {:x} {:x} {:x} {:x}",
            u8::from(self.start),
            self.k,
            u8::from(self.in_valid),
            self.in_key,
            u8::from(self.flush)
        )
    }
}

/// The clocks of one selection: `start` with `k`, one key per clock,
/// `flush`, then `idle` clocks with nothing on the inputs (enough for the
/// unit's clocks, `RadixPlan::clocks`).
pub fn stimulus(keys: &[u64], k: u16, idle: u64) -> Vec<SelectCycle> {
    let mut out = vec![SelectCycle {
        start: true,
        k,
        ..SelectCycle::default()
    }];
    out.extend(keys.iter().map(|&key| SelectCycle {
        in_valid: true,
        in_key: key,
        ..SelectCycle::default()
    }));
    out.push(SelectCycle {
        flush: true,
        ..SelectCycle::default()
    });
    out.extend(std::iter::repeat_n(
        SelectCycle::default(),
        usize::try_from(idle).unwrap_or(usize::MAX),
    ));
    out
}

impl<const A: usize> SelectK<A> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &SelectCycle) {
        self.start.next = c.start;
        self.k.next = u64::from(c.k).into();
        self.in_valid.next = c.in_valid;
        self.in_key.next = c.in_key.into();
        self.flush.next = c.flush;
    }
}

/// Runs `stim` through a fresh `SelectK<A>` in rust-hdl: the selections
/// and their clocks, as `ArgTopK`'s runs report them.
pub fn run<const A: usize>(stim: &[SelectCycle]) -> TopKRun {
    let mut uut = SelectK::<A>::default();
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
