//! `LogitScale`: the logit of a dot product, `attention::engine::logit`'s
//! last step in hardware: `sat_i32((dot · c) >> 28)` (floor shift) for a
//! 70-bit signed `dot` and a u32 scale `c`. The last stages of
//! [`GemvUnit`](crate::GemvUnit), which instantiates it, and the output
//! stage of [`DimScore`](crate::DimScore).
//!
//! [`LATENCY`] = 8 register stages, one logit per clock: the inputs
//! sampled at clock edge t give `out_valid`/`out_logit` after edge t + 7.
//! Every stage is short enough for 285 MHz on the 7 series by the
//! estimate of `cargo xtask hdl synth` (no carry chain over 53 bits, at
//! most three LUT levels besides one):
//!
//! 1. `|dot|`, low half: the two's complement of the low 35 bits with its
//!    carry out, the high half inverted (when dot < 0).
//! 2. `|dot|`, high half: plus the carry.
//! 3. `|dot| · c` as 5 × 2 partial products of 16 × 16 bits (rust-hdl
//!    0.46 multiplies only 16 × 16 bits; yosys maps each to a DSP48 with
//!    its M register).
//! 4. The ten products as four non-overlapping concatenations (even and
//!    odd limbs of `|dot|` per limb of `c`), reduced to two by two
//!    carry-save adders (bitwise, no carry chain).
//! 5. `P = |dot| · c` (< 2^101), low 52 bits with their carry.
//! 6. The high 52 bits.
//! 7. `h = P >> 28`, `z = (P mod 2^28 ≠ 0)`, and whether the logit
//!    saturates: dot ≥ 0 gives `h` clamped at 2^31 − 1; dot < 0 gives
//!    `−⌈P / 2^28⌉ = −(h + z)`, clamped at −2^31.
//! 8. The logit: `h`, or `!h + !z` (= −(h + z) in 32 bits), or the clamp.

use rust_hdl::prelude::*;

use crate::gemv::{ACC_BITS, PROD_BITS, Widen};

/// Register stages from the inputs to the logit.
pub const LATENCY: usize = 8;

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
    /// Valid and sign, per stage 1..=7.
    v: [DFF<Bit>; 7],
    neg: [DFF<Bit>; 7],
    // Stage 1.
    lo36: Signal<Local, Bits<36>>,
    inv_lo: Signal<Local, Bits<35>>,
    a_lo: DFF<Bits<35>>,
    a_cy: DFF<Bit>,
    a_hi: DFF<Bits<35>>,
    a_c: DFF<Bits<32>>,
    // Stage 2.
    b_abs: DFF<Bits<ACC_BITS>>,
    b_c: DFF<Bits<32>>,
    hi_sum: Signal<Local, Bits<35>>,
    // Stage 3.
    dot_limb: [Signal<Local, Bits<16>>; 5],
    c_limb: [Signal<Local, Bits<16>>; 2],
    c_pp: [DFF<Bits<32>>; 10],
    // Stage 4.
    t: [Signal<Local, Bits<PROD_BITS>>; 4],
    s1: Signal<Local, Bits<PROD_BITS>>,
    c1: Signal<Local, Bits<PROD_BITS>>,
    d_s: DFF<Bits<PROD_BITS>>,
    d_c: DFF<Bits<PROD_BITS>>,
    // Stage 5.
    lo53: Signal<Local, Bits<53>>,
    e_lo: DFF<Bits<52>>,
    e_cy: DFF<Bit>,
    e_shi: DFF<Bits<52>>,
    e_chi: DFF<Bits<52>>,
    // Stage 6.
    f_hi: DFF<Bits<52>>,
    f_lo: DFF<Bits<52>>,
    f_hi_sum: Signal<Local, Bits<52>>,
    // Stage 7.
    lo_top: Signal<Local, Bits<52>>,
    h: Signal<Local, Bits<76>>,
    g_h32: DFF<Bits<32>>,
    g_z: DFF<Bit>,
    g_satp: DFF<Bit>,
    g_satn: DFF<Bit>,
    // Stage 8.
    out_valid_r: DFF<Bit>,
    out_logit_r: DFF<Bits<32>>,
}

impl Logic for LogitScale {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            a_lo,
            a_cy,
            a_hi,
            a_c,
            b_abs,
            b_c,
            d_s,
            d_c,
            e_lo,
            e_cy,
            e_shi,
            e_chi,
            f_hi,
            f_lo,
            g_h32,
            g_z,
            g_satp,
            g_satn,
            out_valid_r,
            out_logit_r
        );
        for k in 0..7 {
            self.v[k].clock.next = self.clock.val();
            self.neg[k].clock.next = self.clock.val();
        }
        for p in 0..10 {
            self.c_pp[p].clock.next = self.clock.val();
        }
        self.v[0].d.next = self.in_valid.val();
        self.neg[0].d.next = self.in_dot.val().get_bit(69);
        for k in 1..7 {
            self.v[k].d.next = self.v[k - 1].q.val();
            self.neg[k].d.next = self.neg[k - 1].q.val();
        }

        // Stage 1: |dot| low half and carry; high half inverted.
        self.lo36.next = self.in_dot.val().get_bits::<35>(0).to_bits::<36>();
        self.a_hi.d.next = self.in_dot.val().get_bits::<35>(35);
        // (The inverse in a signal of its own: inline, the generated
        // Verilog would widen before inverting and set bit 35.)
        self.inv_lo.next = !self.in_dot.val().get_bits::<35>(0);
        if self.in_dot.val().get_bit(69) {
            self.lo36.next = self.inv_lo.val().to_bits::<36>() + 1;
            self.a_hi.d.next = !self.in_dot.val().get_bits::<35>(35);
        }
        self.a_lo.d.next = self.lo36.val().get_bits::<35>(0);
        self.a_cy.d.next = self.lo36.val().get_bit(35);
        self.a_c.d.next = self.in_c.val();

        // Stage 2: |dot| high half.
        self.hi_sum.next = self.a_hi.q.val();
        if self.a_cy.q.val() {
            self.hi_sum.next = self.a_hi.q.val() + 1;
        }
        self.b_abs.d.next =
            (self.hi_sum.val().to_bits::<70>() << 35) | self.a_lo.q.val().to_bits::<70>();
        self.b_c.d.next = self.a_c.q.val();

        // Stage 3: |dot| · c, 5 × 2 partial products of 16 × 16 bits.
        for a in 0..4 {
            self.dot_limb[a].next = self.b_abs.q.val().get_bits::<16>(16 * a);
        }
        for a in 4..5 {
            self.dot_limb[a].next = self.b_abs.q.val().get_bits::<6>(16 * a).to_bits::<16>();
        }
        for b in 0..2 {
            self.c_limb[b].next = self.b_c.q.val().get_bits::<16>(16 * b);
        }
        for a in 0..5 {
            for b in 0..2 {
                self.c_pp[2 * a + b].d.next = self.dot_limb[a].val() * self.c_limb[b].val();
            }
        }

        // Stage 4: the products as four sums without overlap (limb a of
        // |dot| at 16a, limb b of c at 16b), then two carry-save adders.
        // (Literal widths: the code generator prints a named constant as a
        // signal name; 104 = PROD_BITS.)
        self.t[0].next = (self.c_pp[8].q.val().to_bits::<104>() << 64)
            | (self.c_pp[4].q.val().to_bits::<104>() << 32)
            | self.c_pp[0].q.val().to_bits::<104>();
        self.t[1].next = (self.c_pp[6].q.val().to_bits::<104>() << 48)
            | (self.c_pp[2].q.val().to_bits::<104>() << 16);
        self.t[2].next = (self.c_pp[9].q.val().to_bits::<104>() << 80)
            | (self.c_pp[5].q.val().to_bits::<104>() << 48)
            | (self.c_pp[1].q.val().to_bits::<104>() << 16);
        self.t[3].next = (self.c_pp[7].q.val().to_bits::<104>() << 64)
            | (self.c_pp[3].q.val().to_bits::<104>() << 32);
        self.s1.next = self.t[0].val() ^ self.t[1].val() ^ self.t[2].val();
        self.c1.next = ((self.t[0].val() & self.t[1].val())
            | (self.t[0].val() & self.t[2].val())
            | (self.t[1].val() & self.t[2].val()))
            << 1;
        self.d_s.d.next = self.s1.val() ^ self.c1.val() ^ self.t[3].val();
        self.d_c.d.next = ((self.s1.val() & self.c1.val())
            | (self.s1.val() & self.t[3].val())
            | (self.c1.val() & self.t[3].val()))
            << 1;

        // Stage 5: P, low 52 bits.
        self.lo53.next = self.d_s.q.val().get_bits::<52>(0).to_bits::<53>()
            + self.d_c.q.val().get_bits::<52>(0).to_bits::<53>();
        self.e_lo.d.next = self.lo53.val().get_bits::<52>(0);
        self.e_cy.d.next = self.lo53.val().get_bit(52);
        self.e_shi.d.next = self.d_s.q.val().get_bits::<52>(52);
        self.e_chi.d.next = self.d_c.q.val().get_bits::<52>(52);

        // Stage 6: P, high 52 bits.
        self.f_hi_sum.next = self.e_shi.q.val() + self.e_chi.q.val();
        if self.e_cy.q.val() {
            self.f_hi_sum.next = self.e_shi.q.val() + self.e_chi.q.val() + 1;
        }
        self.f_hi.d.next = self.f_hi_sum.val();
        self.f_lo.d.next = self.e_lo.q.val();

        // Stage 7: h = P >> 28 (the high half's 52 bits above the low
        // half's top 24), z, and the saturation flags.
        self.lo_top.next = self.f_lo.q.val() >> 28;
        self.h.next = (self.f_hi.q.val().to_bits::<76>() << 24) | self.lo_top.val().to_bits::<76>();
        self.g_h32.d.next = self.h.val().get_bits::<32>(0);
        self.g_z.d.next = self.f_lo.q.val().get_bits::<28>(0).any();
        self.g_satp.d.next = self.h.val().get_bits::<45>(31).any();
        // −(h + z) < −2^31: h > 2^31, or h = 2^31 and z.
        self.g_satn.d.next = self.h.val().get_bits::<44>(32).any()
            | (self.h.val().get_bit(31)
                & (self.h.val().get_bits::<31>(0).any()
                    | self.f_lo.q.val().get_bits::<28>(0).any()));

        // Stage 8: the logit.
        self.out_valid_r.d.next = self.v[6].q.val();
        if self.neg[6].q.val() {
            if self.g_satn.q.val() {
                self.out_logit_r.d.next = 0x8000_0000_u64.into();
            } else if self.g_z.q.val() {
                self.out_logit_r.d.next = !self.g_h32.q.val();
            } else {
                self.out_logit_r.d.next = !self.g_h32.q.val() + 1;
            }
        } else if self.g_satp.q.val() {
            self.out_logit_r.d.next = 0x7FFF_FFFF.into();
        } else {
            self.out_logit_r.d.next = self.g_h32.q.val();
        }
        self.out_valid.next = self.out_valid_r.q.val();
        self.out_logit.next = self.out_logit_r.q.val();
    }
}
