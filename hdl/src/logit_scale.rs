//! `LogitScale`: the logit of a dot product, `attention::engine::logit`'s
//! last step in hardware: `sat_i32((dot · c) >> 28)` (floor shift) for a
//! 70-bit signed `dot` and a u32 scale `c`. Stages 6–10 of
//! [`GemvUnit`](crate::GemvUnit), which instantiates it, and the output
//! stage of the dim-score unit (`DimScore`).
//!
//! [`LATENCY`] = 5 register stages, one logit per clock: the inputs
//! sampled at clock edge t give `out_valid`/`out_logit` after edge t + 4.
//!
//! 1. `|dot|` and its sign.
//! 2. `|dot| · c` as 5 × 2 partial products of 16 × 16 bits (rust-hdl
//!    0.46 multiplies only 16 × 16 bits; yosys maps each to a DSP48).
//! 3. Two 104-bit partial sums, one per limb of `c`.
//! 4. Their sum `P = |dot| · c` (< 2^101).
//! 5. Shift and saturate: `P >> 28` when dot ≥ 0, `−⌈P / 2^28⌉` (the
//!    floor of the negative value) when dot < 0, clamped to i32.

use rust_hdl::prelude::*;

use crate::gemv::{ACC_BITS, PROD_BITS, Widen};

/// Register stages from the inputs to the logit.
pub const LATENCY: usize = 5;

/// `sat_i32((dot · c) >> 28)`; see the module docs.
#[derive(LogicBlock, Default, Debug)]
pub struct LogitScale {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// A dot product arrives.
    pub in_valid: Signal<In, Bit>,
    /// The dot product (70-bit two's complement).
    pub in_dot: Signal<In, Bits<ACC_BITS>>,
    /// The logit scale (Q16, u32).
    pub in_c: Signal<In, Bits<32>>,
    /// Its logit leaves.
    pub out_valid: Signal<Out, Bit>,
    /// The logit (i32 bits, Q16).
    pub out_logit: Signal<Out, Bits<32>>,
    // Stage 6: |dot|.
    s6_valid: DFF<Bit>,
    s6_neg: DFF<Bit>,
    s6_abs: DFF<Bits<ACC_BITS>>,
    s6_c: DFF<Bits<32>>,
    dot_limb: [Signal<Local, Bits<16>>; 5],
    c_limb: [Signal<Local, Bits<16>>; 2],
    // Stage 7: |dot| · c partial products, index 2a + b.
    s7_valid: DFF<Bit>,
    s7_neg: DFF<Bit>,
    s7_pp: [DFF<Bits<32>>; 10],
    // Stage 8: partial sums by c limb.
    s8_valid: DFF<Bit>,
    s8_neg: DFF<Bit>,
    s8_r: [DFF<Bits<PROD_BITS>>; 2],
    // Stage 9: P = |dot| · c.
    s9_valid: DFF<Bit>,
    s9_neg: DFF<Bit>,
    s9_p: DFF<Bits<PROD_BITS>>,
    // Stage 10: the logit.
    u: Signal<Local, Bits<PROD_BITS>>,
    u_lo: Signal<Local, Bits<32>>,
    sat_pos: Signal<Local, Bit>,
    sat_neg: Signal<Local, Bit>,
    out_valid_r: DFF<Bit>,
    out_logit_r: DFF<Bits<32>>,
}

impl Logic for LogitScale {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            s6_valid,
            s6_neg,
            s6_abs,
            s6_c,
            s7_valid,
            s7_neg,
            s8_valid,
            s8_neg,
            s9_valid,
            s9_neg,
            s9_p,
            out_valid_r,
            out_logit_r
        );
        for p in 0..10 {
            self.s7_pp[p].clock.next = self.clock.val();
            self.s7_pp[p].d.next = self.s7_pp[p].q.val();
        }
        for b in 0..2 {
            self.s8_r[b].clock.next = self.clock.val();
            self.s8_r[b].d.next = self.s8_r[b].q.val();
        }

        // Stage 6: |dot| and its sign (bit 69 = ACC_BITS − 1: the code
        // generator prints a named constant as a signal name).
        self.s6_valid.d.next = self.in_valid.val();
        self.s6_neg.d.next = self.in_dot.val().get_bit(69);
        self.s6_abs.d.next = self.in_dot.val();
        if self.in_dot.val().get_bit(69) {
            self.s6_abs.d.next = !self.in_dot.val() + 1;
        }
        self.s6_c.d.next = self.in_c.val();

        // Stage 7: |dot| · c, 5 × 2 partial products of 16 × 16 bits.
        for a in 0..4 {
            self.dot_limb[a].next = self.s6_abs.q.val().get_bits::<16>(16 * a);
        }
        for a in 4..5 {
            self.dot_limb[a].next = self.s6_abs.q.val().get_bits::<6>(16 * a).to_bits::<16>();
        }
        for b in 0..2 {
            self.c_limb[b].next = self.s6_c.q.val().get_bits::<16>(16 * b);
        }
        for a in 0..5 {
            for b in 0..2 {
                self.s7_pp[2 * a + b].d.next = self.dot_limb[a].val() * self.c_limb[b].val();
            }
        }
        self.s7_valid.d.next = self.s6_valid.q.val();
        self.s7_neg.d.next = self.s6_neg.q.val();

        // Stage 8: Σ_a pp[a][b] · 2^(16a) for each c limb b.
        for b in 0..2 {
            self.s8_r[b].d.next = self.s7_pp[b].q.val().to_bits::<PROD_BITS>()
                + (self.s7_pp[2 + b].q.val().to_bits::<PROD_BITS>() << 16)
                + (self.s7_pp[4 + b].q.val().to_bits::<PROD_BITS>() << 32)
                + (self.s7_pp[6 + b].q.val().to_bits::<PROD_BITS>() << 48)
                + (self.s7_pp[8 + b].q.val().to_bits::<PROD_BITS>() << 64);
        }
        self.s8_valid.d.next = self.s7_valid.q.val();
        self.s8_neg.d.next = self.s7_neg.q.val();

        // Stage 9: P = |dot| · c.
        self.s9_p.d.next = self.s8_r[0].q.val() + (self.s8_r[1].q.val() << 16);
        self.s9_valid.d.next = self.s8_valid.q.val();
        self.s9_neg.d.next = self.s8_neg.q.val();

        // Stage 10: floor shift and saturation. dot ≥ 0: u = P >> 28, the
        // logit, clamped at 2^31 − 1. dot < 0: u = ⌈P / 2^28⌉, the logit
        // −u, clamped at −2^31.
        self.u.next = self.s9_p.q.val() >> 28;
        if self.s9_neg.q.val() {
            self.u.next = (self.s9_p.q.val() + 0x0FFF_FFFF) >> 28;
        }
        self.u_lo.next = self.u.val().get_bits::<32>(0);
        self.sat_pos.next = self.u.val().get_bits::<73>(31).any();
        self.sat_neg.next = self.u.val().get_bits::<72>(32).any()
            | (self.u.val().get_bit(31) & self.u.val().get_bits::<31>(0).any());
        self.out_valid_r.d.next = self.s9_valid.q.val();
        if self.s9_neg.q.val() {
            if self.sat_neg.val() {
                self.out_logit_r.d.next = 0x8000_0000_u64.into();
            } else {
                self.out_logit_r.d.next = !self.u_lo.val() + 1;
            }
        } else if self.sat_pos.val() {
            self.out_logit_r.d.next = 0x7FFF_FFFF.into();
        } else {
            self.out_logit_r.d.next = self.u_lo.val();
        }
        self.out_valid.next = self.out_valid_r.q.val();
        self.out_logit.next = self.out_logit_r.q.val();
    }
}
