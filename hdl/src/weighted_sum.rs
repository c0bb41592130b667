//! `WeightedSum`: the value side of an attention kernel for one query
//! head, `attention::engine::{accumulate, finish}` bit for bit. d ≤
//! [`D_MAX`] = 256 accumulators; for each token row a probability p and the
//! row's d fp16 values (`L` per clock) add `p · fx(v_i)` to accumulator i;
//! after the last row, *finish* beats stream v̄ in and the d i32 outputs
//! out, `L` per clock:
//!
//! `o_i = sat_i32((acc_i + 2^29) >> 30)`; `out_i = o_i` if α = P_ONE, else
//! `sat_i32((α·o_i + (P_ONE − α)·v̄_i + 2^29) >> 30)` (α above P_ONE is
//! P_ONE).
//!
//! # Design
//!
//! `L` lanes ([`SYNTH_LANES`] = 8 is generated and synthesized; the tests
//! also run 4 and 1). One fixed pipeline without back-pressure; row beats
//! and finish beats go down the same stages in order, so a finish beat
//! reads the accumulators after every earlier row beat has been added.
//!
//! 0. *Fetch*: the beat's position in its row (`step`, lanes past d
//!    masked), `p` (sampled on a row's first beat) or α (sampled on the
//!    first finish beat), and `fx(v_j) = ±m · 2^sh` by
//!    [`FxDecode`], the decoder shared with
//!    [`GemvUnit`](crate::GemvUnit).
//! 1. Registered: m, sh, sign, p, the beat's kind, v̄ lanes.
//! 2. *Multiply* and 3. *Term* ([`FxMul`], shared with
//!    [`GemvUnit`](crate::GemvUnit)): `p · m` as two 16×16 partial
//!    products (`p` in two 16-bit halves; rust-hdl 0.46 multiplies only
//!    16×16 bits), then the term `((p_hi·m << 16) + p_lo·m) << sh`,
//!    negated for a negative v: 64-bit two's complement.
//! 4. *Accumulate* (row beats): lane j reads accumulator `step·L + j`
//!    through a 256/L-to-1 mux, adds its term and writes it back, all in
//!    one clock (so rows of one beat, d ≤ L, back to back are fine).
//!    *Finish* beats read the same muxes instead: `t = acc + 2^29`,
//!    `o = sat_i32(t >> 30)` (an overflow of `acc + 2^29` gives i32::MAX,
//!    as the model's `saturating_add`), registered with v̄ and α.
//! 5. `|o|`, `|v̄|` times α and P_ONE − α: 2 × 4 partial products.
//! 6. The two signed 64-bit products.
//! 7. `(α·o + (P_ONE−α)·v̄ + 2^29) >> 30` (bits 30..62), or o when
//!    α = P_ONE; masked lanes are 0.
//!
//! `start` rides down the pipeline too: at stage 4 it clears all d
//! accumulators (and a row beat arriving with it adds to 0).
//!
//! # Widths and bounds
//!
//! `|fx(v)| ≤ 2047·2^19 < 2^30`, p any u32 (< 2^32): a term is below 2^62.
//! The accumulators are 64-bit two's complement ([`ACC_BITS`]), i.e. the
//! model's i64 exactly. For a softmax's probabilities Σp ≤ 2^30, so
//! `|acc_i| ≤ 2^30 · max|fx| < 2^60` (the model's bound); no partial sum
//! wraps. The blend needs no clamp: with `α + (P_ONE−α) = 2^30` it is a
//! convex combination of two i32 values plus 1/2, so its floor is an i32;
//! `|α·o| ≤ 2^30·2^31 = 2^61` and the sum is below 2^62 in 64 bits.
//!
//! # Protocol
//!
//! * `start` (a clock of its own or with the first row beat): latch `d`
//!   (0..=256) and clear the accumulators; the next beat is a row's first.
//! * `v_valid`/`v_data[j]`/`p`: a row beat, elements `step·L + j`;
//!   ⌈d/L⌉ beats a row, back to back or with idle clocks between. `p` is
//!   read on the row's first beat. Lanes past d are masked (pad with
//!   anything, NaN and Inf included). `d = 0`: every beat is a row of its
//!   own, all masked.
//! * `f_valid`/`vmean[j]`/`alpha`: a finish beat, ⌈d/L⌉ of them after the
//!   last row (at a row boundary), lane j carrying v̄ of element `step·L +
//!   j`; `alpha` is read on the first. Finish does not clear: finishing
//!   again (another α, v̄) gives the blend of the same sums.
//! * `out_valid`/`out_data[j]`: the outputs of a finish beat (i32 bits),
//!   [`LATENCY`] clocks after it; lanes past d are 0.
//!
//! # Cycles
//!
//! ⌈d/L⌉ clocks per row; the finish is ⌈d/L⌉ clocks of beats and the
//! last outputs leave [`LATENCY`] clocks after the last finish beat
//! (measured in the tests, `weighted_sum_cycles`).

use rust_hdl::prelude::*;

use crate::fx::FxDecode;
use crate::fx_mul::FxMul;

/// Largest head dimension.
pub const D_MAX: usize = 256;
/// Lanes of the synthesized unit (and the Verilog co-simulation).
pub const SYNTH_LANES: usize = 8;
/// Bits of an accumulator: the model's i64.
pub const ACC_BITS: usize = 64;
/// Clocks from a finish beat (its clock is 0) to its `out_valid`.
pub const LATENCY: usize = 6;

/// The weighted-sum unit with `L` lanes; see the module docs.
#[derive(LogicBlock, Debug)]
pub struct WeightedSum<const L: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Begin a query head: latch `d`, clear the sums.
    pub start: Signal<In, Bit>,
    /// Elements per row, 0..=256.
    pub d: Signal<In, Bits<9>>,
    /// A row beat arrives.
    pub v_valid: Signal<In, Bit>,
    /// The row's probability (Q0.30), read on its first beat.
    pub p: Signal<In, Bits<32>>,
    /// The beat's fp16 values, lane j = element `step·L + j`.
    pub v_data: [Signal<In, Bits<16>>; L],
    /// A finish beat arrives.
    pub f_valid: Signal<In, Bit>,
    /// α (Q0.30, values above 2^30 act as 2^30), read on the first finish beat.
    pub alpha: Signal<In, Bits<32>>,
    /// v̄ of the beat's elements (Fx, i32 bits).
    pub vmean: [Signal<In, Bits<32>>; L],
    /// A finish beat's outputs leave.
    pub out_valid: Signal<Out, Bit>,
    /// The outputs (Fx, i32 bits), lane j = element `step·L + j`.
    pub out_data: [Signal<Out, Bits<32>>; L],
    lanes: Constant<Bits<9>>,
    acc: [DFF<Bits<ACC_BITS>>; D_MAX],
    d_r: DFF<Bits<9>>,
    left: DFF<Bits<9>>,
    step: DFF<Bits<8>>,
    p_r: DFF<Bits<32>>,
    alpha_r: DFF<Bits<32>>,
    // Stage 0 (combinational).
    beat: Signal<Local, Bit>,
    cur_left: Signal<Local, Bits<9>>,
    cur_step: Signal<Local, Bits<8>>,
    cur_last: Signal<Local, Bit>,
    cur_p: Signal<Local, Bits<32>>,
    cur_alpha: Signal<Local, Bits<32>>,
    fxd: [FxDecode; L],
    v_m: [Signal<Local, Bits<16>>; L],
    lane_on: [Signal<Local, Bit>; L],
    // Stage 1.
    s1_row: DFF<Bit>,
    s1_fin: DFF<Bit>,
    s1_clr: DFF<Bit>,
    s1_step: DFF<Bits<8>>,
    s1_p: DFF<Bits<32>>,
    s1_alpha: DFF<Bits<32>>,
    s1_m: [DFF<Bits<16>>; L],
    s1_sh: [DFF<Bits<5>>; L],
    s1_neg: [DFF<Bit>; L],
    s1_on: [DFF<Bit>; L],
    s1_vm: [DFF<Bits<32>>; L],
    // Stages 2–3: the signed terms, by `FxMul`.
    mul: [FxMul<ACC_BITS>; L],
    s2_row: DFF<Bit>,
    s2_fin: DFF<Bit>,
    s2_clr: DFF<Bit>,
    s2_step: DFF<Bits<8>>,
    s2_alpha: DFF<Bits<32>>,
    s2_on: [DFF<Bit>; L],
    s2_vm: [DFF<Bits<32>>; L],
    // Stage 3.
    s3_row: DFF<Bit>,
    s3_fin: DFF<Bit>,
    s3_clr: DFF<Bit>,
    s3_step: DFF<Bits<8>>,
    s3_alpha: DFF<Bits<32>>,
    s3_on: [DFF<Bit>; L],
    s3_vm: [DFF<Bits<32>>; L],
    // Stage 4: accumulate / read.
    sel: [Signal<Local, Bits<ACC_BITS>>; L],
    base: [Signal<Local, Bits<ACC_BITS>>; L],
    sum: [Signal<Local, Bits<ACC_BITS>>; L],
    rnd: [Signal<Local, Bits<ACC_BITS>>; L],
    o_val: [Signal<Local, Bits<32>>; L],
    s4_fin: DFF<Bit>,
    s4_one: DFF<Bit>,
    s4_alpha: DFF<Bits<32>>,
    s4_o: [DFF<Bits<32>>; L],
    s4_vm: [DFF<Bits<32>>; L],
    // Stage 5: partial products.
    beta: Signal<Local, Bits<32>>,
    o_abs: [Signal<Local, Bits<32>>; L],
    vm_abs: [Signal<Local, Bits<32>>; L],
    s5_fin: DFF<Bit>,
    s5_one: DFF<Bit>,
    s5_o: [DFF<Bits<32>>; L],
    s5_oneg: [DFF<Bit>; L],
    s5_vneg: [DFF<Bit>; L],
    /// α·|o| (index 0..4) and (P_ONE−α)·|v̄| (4..8), lane-major, index
    /// `8j + 2a + b` for limbs a (α or P_ONE−α) and b (|o| or |v̄|).
    s5_pp: [DFF<Bits<32>>; 64],
    // Stage 6: signed products.
    pa: [Signal<Local, Bits<ACC_BITS>>; L],
    pb: [Signal<Local, Bits<ACC_BITS>>; L],
    s6_fin: DFF<Bit>,
    s6_one: DFF<Bit>,
    s6_o: [DFF<Bits<32>>; L],
    s6_a: [DFF<Bits<ACC_BITS>>; L],
    s6_b: [DFF<Bits<ACC_BITS>>; L],
    blend: [Signal<Local, Bits<ACC_BITS>>; L],
    // Stage 7: outputs.
    out_v: DFF<Bit>,
    out_r: [DFF<Bits<32>>; L],
}

/// Zero extension or truncation that rust-hdl 0.46's code generator accepts
/// anywhere (see [`crate::gemv::Widen`]: a method named `to_bits` is
/// rendered as its bare receiver). Narrow only as the whole right-hand side
/// of an assignment, where Verilog truncates to the target's width exactly
/// as this does in Rust. (Narrowing a shifted signal this way, rather than
/// with `get_bits`, keeps every bit of the signal read, so verilator's
/// UNUSEDSIGNAL has nothing to report.)
trait Fit {
    /// Zero-extends or truncates to `M` bits.
    fn to_bits<const M: usize>(self) -> Bits<M>;
}

impl<const N: usize> Fit for Bits<N> {
    fn to_bits<const M: usize>(self) -> Bits<M> {
        bit_cast::<M, N>(self)
    }
}

/// An array of defaults (one line per field below).
fn a<T: Default, const N: usize>() -> [T; N] {
    std::array::from_fn(|_| T::default())
}

impl<const L: usize> Default for WeightedSum<L> {
    fn default() -> Self {
        assert!(
            L.is_power_of_two() && L <= 8,
            "L must be a power of two ≤ 8"
        );
        Self {
            clock: Default::default(),
            start: Default::default(),
            d: Default::default(),
            v_valid: Default::default(),
            p: Default::default(),
            v_data: a(),
            f_valid: Default::default(),
            alpha: Default::default(),
            vmean: a(),
            out_valid: Default::default(),
            out_data: a(),
            lanes: Constant::new((L as u64).into()),
            acc: std::array::from_fn(|_| Default::default()),
            d_r: Default::default(),
            left: Default::default(),
            step: Default::default(),
            p_r: Default::default(),
            alpha_r: Default::default(),
            beat: Default::default(),
            cur_left: Default::default(),
            cur_step: Default::default(),
            cur_last: Default::default(),
            cur_p: Default::default(),
            cur_alpha: Default::default(),
            fxd: std::array::from_fn(|_| Default::default()),
            v_m: a(),
            lane_on: a(),
            s1_row: Default::default(),
            s1_fin: Default::default(),
            s1_clr: Default::default(),
            s1_step: Default::default(),
            s1_p: Default::default(),
            s1_alpha: Default::default(),
            s1_m: a(),
            s1_sh: a(),
            s1_neg: a(),
            s1_on: a(),
            s1_vm: a(),
            mul: std::array::from_fn(|_| Default::default()),
            s2_row: Default::default(),
            s2_fin: Default::default(),
            s2_clr: Default::default(),
            s2_step: Default::default(),
            s2_alpha: Default::default(),
            s2_on: a(),
            s2_vm: a(),
            s3_row: Default::default(),
            s3_fin: Default::default(),
            s3_clr: Default::default(),
            s3_step: Default::default(),
            s3_alpha: Default::default(),
            s3_on: a(),
            s3_vm: a(),
            sel: a(),
            base: a(),
            sum: a(),
            rnd: a(),
            o_val: a(),
            s4_fin: Default::default(),
            s4_one: Default::default(),
            s4_alpha: Default::default(),
            s4_o: a(),
            s4_vm: a(),
            beta: Default::default(),
            o_abs: a(),
            vm_abs: a(),
            s5_fin: Default::default(),
            s5_one: Default::default(),
            s5_o: a(),
            s5_oneg: a(),
            s5_vneg: a(),
            s5_pp: std::array::from_fn(|_| Default::default()),
            pa: a(),
            pb: a(),
            s6_fin: Default::default(),
            s6_one: Default::default(),
            s6_o: a(),
            s6_a: a(),
            s6_b: a(),
            blend: a(),
            out_v: Default::default(),
            out_r: a(),
        }
    }
}

impl<const L: usize> Logic for WeightedSum<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, d_r, left, step, p_r, alpha_r, s1_row, s1_fin, s1_clr, s1_step, s1_p,
            s1_alpha, s2_row, s2_fin, s2_clr, s2_step, s2_alpha, s3_row, s3_fin, s3_clr, s3_step,
            s3_alpha, s4_fin, s4_one, s4_alpha, s5_fin, s5_one, s6_fin, s6_one, out_v
        );
        for e in 0..D_MAX {
            self.acc[e].clock.next = self.clock.val();
            self.acc[e].d.next = self.acc[e].q.val();
        }
        for j in 0..L {
            self.s1_m[j].clock.next = self.clock.val();
            self.s1_m[j].d.next = self.s1_m[j].q.val();
            self.s1_sh[j].clock.next = self.clock.val();
            self.s1_sh[j].d.next = self.s1_sh[j].q.val();
            self.s1_neg[j].clock.next = self.clock.val();
            self.s1_neg[j].d.next = self.s1_neg[j].q.val();
            self.s1_on[j].clock.next = self.clock.val();
            self.s1_on[j].d.next = self.s1_on[j].q.val();
            self.s1_vm[j].clock.next = self.clock.val();
            self.s1_vm[j].d.next = self.s1_vm[j].q.val();
            self.mul[j].clock.next = self.clock.val();
            self.s2_on[j].clock.next = self.clock.val();
            self.s2_on[j].d.next = self.s2_on[j].q.val();
            self.s2_vm[j].clock.next = self.clock.val();
            self.s2_vm[j].d.next = self.s2_vm[j].q.val();
            self.s3_on[j].clock.next = self.clock.val();
            self.s3_on[j].d.next = self.s3_on[j].q.val();
            self.s3_vm[j].clock.next = self.clock.val();
            self.s3_vm[j].d.next = self.s3_vm[j].q.val();
            self.s4_o[j].clock.next = self.clock.val();
            self.s4_o[j].d.next = self.s4_o[j].q.val();
            self.s4_vm[j].clock.next = self.clock.val();
            self.s4_vm[j].d.next = self.s4_vm[j].q.val();
            self.s5_o[j].clock.next = self.clock.val();
            self.s5_o[j].d.next = self.s5_o[j].q.val();
            self.s5_oneg[j].clock.next = self.clock.val();
            self.s5_oneg[j].d.next = self.s5_oneg[j].q.val();
            self.s5_vneg[j].clock.next = self.clock.val();
            self.s5_vneg[j].d.next = self.s5_vneg[j].q.val();
            self.s6_o[j].clock.next = self.clock.val();
            self.s6_o[j].d.next = self.s6_o[j].q.val();
            self.s6_a[j].clock.next = self.clock.val();
            self.s6_a[j].d.next = self.s6_a[j].q.val();
            self.s6_b[j].clock.next = self.clock.val();
            self.s6_b[j].d.next = self.s6_b[j].q.val();
            self.out_r[j].clock.next = self.clock.val();
            self.out_r[j].d.next = self.out_r[j].q.val();
        }
        for i in 0..64 {
            self.s5_pp[i].clock.next = self.clock.val();
            self.s5_pp[i].d.next = self.s5_pp[i].q.val();
        }

        // Stage 0: the beat's position in its row (`start` begins a row).
        self.beat.next = self.v_valid.val() | self.f_valid.val();
        if self.start.val() {
            self.d_r.d.next = self.d.val();
        }
        self.cur_left.next = self.left.q.val();
        self.cur_step.next = self.step.q.val();
        if self.start.val() {
            self.cur_left.next = self.d.val();
            self.cur_step.next = 0.into();
            self.left.d.next = self.d.val();
            self.step.d.next = 0.into();
        }
        self.cur_last.next = self.cur_left.val() <= self.lanes.val();
        if self.beat.val() {
            if self.cur_last.val() {
                self.left.d.next = self.d_r.q.val();
                if self.start.val() {
                    self.left.d.next = self.d.val();
                }
                self.step.d.next = 0.into();
            } else {
                self.left.d.next = self.cur_left.val() - self.lanes.val();
                self.step.d.next = self.cur_step.val() + 1;
            }
        }
        // p and α are read on the first beat of a row / of the finish.
        self.cur_p.next = self.p_r.q.val();
        self.cur_alpha.next = self.alpha_r.q.val();
        if self.cur_step.val() == 0 {
            self.cur_p.next = self.p.val();
            self.cur_alpha.next = self.alpha.val();
        }
        if self.v_valid.val() {
            self.p_r.d.next = self.cur_p.val();
        }
        if self.f_valid.val() {
            self.alpha_r.d.next = self.cur_alpha.val();
        }
        for j in 0..L {
            self.fxd[j].h.next = self.v_data[j].val();
            self.lane_on[j].next = self.cur_left.val().index() > j;
            self.v_m[j].next = self.fxd[j].m.val();
            if !self.lane_on[j].val() | !self.v_valid.val() {
                self.v_m[j].next = 0.into();
            }
        }

        // Stage 1: decoded beat.
        self.s1_row.d.next = self.v_valid.val();
        self.s1_fin.d.next = self.f_valid.val() & !self.v_valid.val();
        self.s1_clr.d.next = self.start.val();
        self.s1_step.d.next = self.cur_step.val();
        self.s1_p.d.next = self.cur_p.val();
        self.s1_alpha.d.next = self.cur_alpha.val();
        for j in 0..L {
            self.s1_m[j].d.next = self.v_m[j].val();
            self.s1_sh[j].d.next = self.fxd[j].sh.val();
            self.s1_neg[j].d.next = self.v_data[j].val().get_bit(15);
            self.s1_on[j].d.next = self.lane_on[j].val();
            self.s1_vm[j].d.next = self.vmean[j].val();
        }

        // Stages 2–3: the signed 64-bit terms ±p · m · 2^sh (`FxMul`).
        for j in 0..L {
            self.mul[j].x.next = self.s1_p.q.val();
            self.mul[j].m.next = self.s1_m[j].q.val();
            self.mul[j].sh.next = self.s1_sh[j].q.val();
            self.mul[j].neg.next = self.s1_neg[j].q.val();
        }
        self.s2_row.d.next = self.s1_row.q.val();
        self.s2_fin.d.next = self.s1_fin.q.val();
        self.s2_clr.d.next = self.s1_clr.q.val();
        self.s2_step.d.next = self.s1_step.q.val();
        self.s2_alpha.d.next = self.s1_alpha.q.val();
        for j in 0..L {
            self.s2_on[j].d.next = self.s1_on[j].q.val();
            self.s2_vm[j].d.next = self.s1_vm[j].q.val();
        }
        self.s3_row.d.next = self.s2_row.q.val();
        self.s3_fin.d.next = self.s2_fin.q.val();
        self.s3_clr.d.next = self.s2_clr.q.val();
        self.s3_step.d.next = self.s2_step.q.val();
        self.s3_alpha.d.next = self.s2_alpha.q.val();
        for j in 0..L {
            self.s3_on[j].d.next = self.s2_on[j].q.val();
            self.s3_vm[j].d.next = self.s2_vm[j].q.val();
        }

        // Stage 4: lane j's accumulator `step·L + j` (the one-trip loop
        // binds L to a loop variable: rust-hdl resolves index expressions
        // against loop variables only).
        for j in 0..L {
            self.sel[j].next = 0.into();
        }
        for lanes in L..(L + 1) {
            for i in 0..(D_MAX / L) {
                if self.s3_step.q.val().index() == i {
                    for j in 0..L {
                        self.sel[j].next = self.acc[i * lanes + j].q.val();
                    }
                }
            }
        }
        for j in 0..L {
            self.base[j].next = self.sel[j].val();
            if self.s3_clr.q.val() {
                self.base[j].next = 0.into();
            }
            self.sum[j].next = self.base[j].val() + self.mul[j].term.val();
        }
        for e in 0..D_MAX {
            if self.s3_clr.q.val() {
                self.acc[e].d.next = 0.into();
            }
        }
        for lanes in L..(L + 1) {
            for i in 0..(D_MAX / L) {
                if self.s3_row.q.val() & (self.s3_step.q.val().index() == i) {
                    for j in 0..L {
                        self.acc[i * lanes + j].d.next = self.sum[j].val();
                    }
                }
            }
        }
        // Finish: o = sat_i32((acc + 2^29) >> 30), arithmetic shift: the
        // value fits i32 iff bits 61..63 of acc + 2^29 agree (bit numbers
        // are literals: the code generator prints a named constant as a
        // signal name).
        for j in 0..L {
            self.rnd[j].next = self.sel[j].val() + 0x2000_0000;
            self.o_val[j].next = (self.rnd[j].val() >> 30).to_bits::<32>();
            if !self.sel[j].val().get_bit(63) & self.rnd[j].val().get_bit(63) {
                // acc + 2^29 overflowed: the model saturates to i64::MAX.
                self.o_val[j].next = 0x7FFF_FFFF.into();
            } else if !self.rnd[j].val().get_bit(63) {
                if self.rnd[j].val().get_bit(62) | self.rnd[j].val().get_bit(61) {
                    self.o_val[j].next = 0x7FFF_FFFF.into();
                }
            } else if !(self.rnd[j].val().get_bit(62) & self.rnd[j].val().get_bit(61)) {
                self.o_val[j].next = 0x8000_0000_u64.into();
            }
            self.s4_o[j].d.next = self.o_val[j].val();
            self.s4_vm[j].d.next = self.s3_vm[j].q.val();
            if !self.s3_on[j].q.val() {
                self.s4_o[j].d.next = 0.into();
                self.s4_vm[j].d.next = 0.into();
            }
        }
        self.s4_fin.d.next = self.s3_fin.q.val();
        self.s4_alpha.d.next = self.s3_alpha.q.val();
        self.s4_one.d.next = self.s3_alpha.q.val() >= 0x4000_0000;
        if self.s3_alpha.q.val() >= 0x4000_0000 {
            self.s4_alpha.d.next = 0x4000_0000.into();
        }

        // Stage 5: α·|o| and (P_ONE − α)·|v̄|, 4 partial products each.
        self.beta.next = 0x4000_0000 - self.s4_alpha.q.val();
        for j in 0..L {
            self.o_abs[j].next = self.s4_o[j].q.val();
            if self.s4_o[j].q.val().get_bit(31) {
                self.o_abs[j].next = !self.s4_o[j].q.val() + 1;
            }
            self.vm_abs[j].next = self.s4_vm[j].q.val();
            if self.s4_vm[j].q.val().get_bit(31) {
                self.vm_abs[j].next = !self.s4_vm[j].q.val() + 1;
            }
            self.s5_o[j].d.next = self.s4_o[j].q.val();
            self.s5_oneg[j].d.next = self.s4_o[j].q.val().get_bit(31);
            self.s5_vneg[j].d.next = self.s4_vm[j].q.val().get_bit(31);
        }
        for j in 0..L {
            for a in 0..2 {
                for b in 0..2 {
                    self.s5_pp[8 * j + 2 * a + b].d.next =
                        self.s4_alpha.q.val().get_bits::<16>(16 * a)
                            * self.o_abs[j].val().get_bits::<16>(16 * b);
                    self.s5_pp[8 * j + 4 + 2 * a + b].d.next =
                        self.beta.val().get_bits::<16>(16 * a)
                            * self.vm_abs[j].val().get_bits::<16>(16 * b);
                }
            }
        }
        self.s5_fin.d.next = self.s4_fin.q.val();
        self.s5_one.d.next = self.s4_one.q.val();

        // Stage 6: the two signed 64-bit products.
        for j in 0..L {
            self.pa[j].next = self.s5_pp[8 * j].q.val().to_bits::<ACC_BITS>()
                + (self.s5_pp[8 * j + 1].q.val().to_bits::<ACC_BITS>() << 16)
                + (self.s5_pp[8 * j + 2].q.val().to_bits::<ACC_BITS>() << 16)
                + (self.s5_pp[8 * j + 3].q.val().to_bits::<ACC_BITS>() << 32);
            self.pb[j].next = self.s5_pp[8 * j + 4].q.val().to_bits::<ACC_BITS>()
                + (self.s5_pp[8 * j + 5].q.val().to_bits::<ACC_BITS>() << 16)
                + (self.s5_pp[8 * j + 6].q.val().to_bits::<ACC_BITS>() << 16)
                + (self.s5_pp[8 * j + 7].q.val().to_bits::<ACC_BITS>() << 32);
        }
        for j in 0..L {
            self.s6_a[j].d.next = self.pa[j].val();
            if self.s5_oneg[j].q.val() {
                self.s6_a[j].d.next = !self.pa[j].val() + 1;
            }
            self.s6_b[j].d.next = self.pb[j].val();
            if self.s5_vneg[j].q.val() {
                self.s6_b[j].d.next = !self.pb[j].val() + 1;
            }
            self.s6_o[j].d.next = self.s5_o[j].q.val();
        }
        self.s6_fin.d.next = self.s5_fin.q.val();
        self.s6_one.d.next = self.s5_one.q.val();

        // Stage 7: the blend's floor, an i32 (module docs: no clamp).
        for j in 0..L {
            self.blend[j].next = self.s6_a[j].q.val() + self.s6_b[j].q.val() + 0x2000_0000;
            self.out_r[j].d.next = (self.blend[j].val() >> 30).to_bits::<32>();
            if self.s6_one.q.val() {
                self.out_r[j].d.next = self.s6_o[j].q.val();
            }
        }
        self.out_v.d.next = self.s6_fin.q.val();
        self.out_valid.next = self.out_v.q.val();
        for j in 0..L {
            self.out_data[j].next = self.out_r[j].q.val();
        }
    }
}

/// One query head: d, its value rows with their probabilities, α and v̄.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WsQuery {
    /// Elements per row, 0..=256.
    pub d: usize,
    /// (p, row of d fp16 values).
    pub rows: Vec<(u32, Vec<u16>)>,
    /// α of the finish.
    pub alpha: u32,
    /// v̄ (d values).
    pub vmean: Vec<i32>,
}

/// The inputs of one clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WsCycle {
    /// `start`.
    pub start: bool,
    /// `d`.
    pub d: u16,
    /// `v_valid`.
    pub v_valid: bool,
    /// `p`.
    pub p: u32,
    /// `v_data[j]`; empty is all zero.
    pub v: Vec<u16>,
    /// `f_valid`.
    pub f_valid: bool,
    /// `alpha`.
    pub alpha: u32,
    /// `vmean[j]` (i32 bits); empty is all zero.
    pub vmean: Vec<i32>,
}

impl WsCycle {
    /// The fields in the order of `tb/weighted_sum_tb.v`'s vector lines,
    /// hex: `start d v_valid p f_valid alpha v[0..L] vmean[0..L]`.
    pub fn vector_line(&self, lanes: usize) -> String {
        let mut s = format!(
            "{:x} {:x} {:x} {:x} {:x} {:x}",
            u8::from(self.start),
            self.d,
            u8::from(self.v_valid),
            self.p,
            u8::from(self.f_valid),
            self.alpha
        );
        for j in 0..lanes {
            s.push_str(&format!(" {:x}", self.v.get(j).copied().unwrap_or(0)));
        }
        for j in 0..lanes {
            s.push_str(&format!(
                " {:x}",
                self.vmean.get(j).copied().unwrap_or(0) as u32
            ));
        }
        s
    }
}

/// Beats of a row of `d` elements: ⌈d/L⌉, and 1 for `d = 0`.
pub fn beats(d: usize, lanes: usize) -> usize {
    d.div_ceil(lanes).max(1)
}

/// The clocks of a run of query heads: `start` (a clock of its own for
/// even-numbered heads, with the first row beat for odd ones), the row
/// beats back to back (lanes past d filled with `pad`), the finish beats,
/// then idle clocks until the last output is out.
pub fn stimulus(queries: &[WsQuery], lanes: usize, pad: u16) -> Vec<WsCycle> {
    let mut out = Vec::new();
    for (n, query) in queries.iter().enumerate() {
        let d = query.d;
        assert!(d <= D_MAX, "d ≤ 256");
        let start = WsCycle {
            start: true,
            d: d as u16,
            ..WsCycle::default()
        };
        let together = n % 2 == 1 && !query.rows.is_empty();
        if !together {
            out.push(start.clone());
        }
        for (r, (p, row)) in query.rows.iter().enumerate() {
            assert_eq!(row.len(), d, "a row has d elements");
            for b in 0..beats(d, lanes) {
                let v = (0..lanes)
                    .map(|j| row.get(b * lanes + j).copied().unwrap_or(pad))
                    .collect();
                out.push(WsCycle {
                    start: together && r == 0 && b == 0,
                    d: if together { d as u16 } else { 0 },
                    v_valid: true,
                    // p only on the first beat: the unit must latch it.
                    p: if b == 0 { *p } else { 0xDEAD_BEEF },
                    v,
                    ..WsCycle::default()
                });
            }
        }
        for b in 0..beats(d, lanes) {
            let vmean = (0..lanes)
                .map(|j| query.vmean.get(b * lanes + j).copied().unwrap_or(-1))
                .collect();
            out.push(WsCycle {
                f_valid: true,
                alpha: if b == 0 { query.alpha } else { 0x1234_5678 },
                vmean,
                ..WsCycle::default()
            });
        }
    }
    out.extend(std::iter::repeat_n(WsCycle::default(), LATENCY + 1));
    out
}

impl<const L: usize> WeightedSum<L> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &WsCycle) {
        self.start.next = c.start;
        self.d.next = u64::from(c.d).into();
        self.v_valid.next = c.v_valid;
        self.p.next = u64::from(c.p).into();
        self.f_valid.next = c.f_valid;
        self.alpha.next = u64::from(c.alpha).into();
        for j in 0..L {
            self.v_data[j].next = u64::from(c.v.get(j).copied().unwrap_or(0)).into();
            self.vmean[j].next = u64::from(c.vmean.get(j).copied().unwrap_or(0) as u32).into();
        }
    }
}

/// What one run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WsRun {
    /// The `L` output lanes of each finish beat, in order.
    pub beats: Vec<Vec<i32>>,
    /// The clock (index into the stimulus) of each.
    pub out_clock: Vec<usize>,
}

impl WsRun {
    /// The outputs of each query head (`d` of `queries[n]` taken from its
    /// ⌈d/L⌉ beats).
    pub fn outputs(&self, queries: &[WsQuery], lanes: usize) -> Vec<Vec<i32>> {
        let mut it = self.beats.iter();
        queries
            .iter()
            .map(|q| {
                let mut o: Vec<i32> = Vec::new();
                for _ in 0..beats(q.d, lanes) {
                    o.extend(it.next().expect("a beat per finish beat"));
                }
                o.truncate(q.d);
                o
            })
            .collect()
    }
}

/// Runs `stim` through a fresh `WeightedSum<L>` in rust-hdl.
pub fn run<const L: usize>(stim: &[WsCycle]) -> WsRun {
    let mut uut = WeightedSum::<L>::default();
    crate::sim::prepare(&mut uut);
    let mut run = WsRun::default();
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            run.beats.push(
                uut.out_data
                    .iter()
                    .map(|x| x.val().to_u32() as i32)
                    .collect(),
            );
            run.out_clock.push(t);
        }
    }
    run
}

#[cfg(test)]
mod tests;
