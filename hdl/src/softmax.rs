//! `Softmax`: the softmax unit of the attention kernel, the engine model's
//! `attention::engine::softmax` bit for bit: n Q16 logits (i32) in, n Q0.30
//! probabilities (u32) out, in the same order.
//!
//! # Design
//!
//! The logits are held in a block RAM inside the unit (`2^A` words of 32
//! bits; [`SYNTH_ADDR_BITS`] = 13, so up to [`SYNTH_N_MAX`] = 8192 logits,
//! 8 RAMB36 on xc7), so they stream in once and are read back twice:
//!
//! 1. *Load* (one logit per clock): each logit is written to the RAM with
//!    its sign bit flipped (`x ^ 2^31`, so unsigned order is signed order),
//!    and the running maximum m is kept.
//! 2. *Weigh* (one read per clock): every logit goes through the weight
//!    pipeline (below) and its weight w is added to `sum` (64 bits).
//! 3. *Divide*: recip = ⌊2^62 / sum⌋ by a radix-2 restoring divider, one
//!    quotient bit per clock. sum ≥ 2^30 (the max's weight is exactly
//!    2^30), so the quotient has 33 bits: the remainder starts at 2^62 >> 33
//!    = 2^29 (< sum, so the quotient's upper bits are 0) and 33 steps
//!    `r = 2r; if r ≥ sum { r −= sum; q = 2q + 1 } else { q = 2q }` bring
//!    down the 33 zero bits below.
//! 4. *Emit* (one read per clock): the weights are *recomputed* by the same
//!    pipeline (rather than stored: no second 2^A × 31-bit RAM) and p =
//!    (w · recip) >> 32 leaves on `out_valid`/`out_prob`.
//!
//! # The weight pipeline and its widths
//!
//! rust-hdl 0.46 multiplies only `Bits<16> × Bits<16> → Bits<32>`, so every
//! product is built from 16 × 16 partial products (14 in all, each one
//! DSP48), summed in 64 bits. Stages (each registered):
//!
//! * A: u = m − x (32 bits unsigned, = −t); u · LOG2E_Q16 = u·2^16 +
//!   u · 29012 (94548 = 2^16 + 29012; 2 products); z = ⌈u · LOG2E / 2^16⌉
//!   = −((t · LOG2E) >> 16), f = z mod 2^16, n = z >> 16 (< 2^18); the
//!   weight is 0 if n ≥ 31, else n fits 5 bits.
//! * B–E: the degree-4 Horner evaluation of `EXP2_POLY` at f, `acc = c_i +
//!   ((acc · f) >> 16)` (floor). The sign of every partial result is fixed
//!   by the coefficients' magnitudes (acc3 ≤ c3 + c4 < 0, acc2 ≥ c2 + c3 >
//!   0, acc1 ≤ c1 + c2 < 0, acc0 > 0), so the stages work on magnitudes
//!   with unsigned products: for a negative acc, (acc · f) >> 16 =
//!   −⌈|acc| · f / 2^16⌉. |acc3| < 2^26, acc2 < 2^28, |acc1| < 2^30, P ≤
//!   2^30; each stage is 2 partial products (c4 · f splits the constant).
//! * F: w = P >> n, or 0 if n ≥ 31 (31 bits, ≤ 2^30).
//! * G (Emit only): recip ≤ 2^32 has 33 bits; (w · recip) >> 32 =
//!   ((w · (recip mod 2^32)) >> 32) + w · `recip[32]` (4 partial products).
//!
//! # Protocol
//!
//! `start` (any state, a clock of its own) clears the unit; then the logits
//! on `in_valid`/`in_logit`, one per clock (gaps allowed); then `flush` (a
//! clock of its own). `out_valid`/`out_prob` carry the n probabilities in
//! input order, one per clock; `done` pulses one clock after the last (or
//! two clocks after `flush` when n = 0: the model writes nothing then).
//! `busy` is high from `start` to `done`. Logits past `2^A` are ignored
//! (the firmware never sends more).
//!
//! # Cycles
//!
//! From the `start` clock to the `done` clock inclusive, for n ≥ 1: 1
//! (start) + n (load) + 1 (flush) + n + [`PIPE`] + 1 (weigh: n reads, the
//! pipeline drains, one clock sees it empty) + [`DIV_STEPS`] (divide) + n +
//! PIPE + 1 (emit; the last probability leaves one clock before `done`) =
//! 3n + 2·PIPE + DIV_STEPS + 4 = **3n + 51** ([`cycles`]); 2 for n = 0.
//! Measured in the tests (`softmax_cycles`, `softmax_n_max`, and the
//! Verilog co-simulation): 24,627 clocks for n = 8192.

use rust_hdl::prelude::*;

/// RAM address bits of the synthesized and tested unit.
pub const SYNTH_ADDR_BITS: usize = 13;
/// Logits the synthesized unit holds (2^13).
pub const SYNTH_N_MAX: usize = 1 << SYNTH_ADDR_BITS;
/// Quotient bits of the divider (recip ≤ 2^32).
pub const DIV_STEPS: usize = 33;
/// Pipeline depth of a pass: clocks from a read's issue to its weight in
/// stage F (RAM read + stages A–F).
pub const PIPE: usize = 7;

/// Clocks from `start` to `done` inclusive for `n` logits (n ≤ 2^A).
pub fn cycles(n: usize) -> usize {
    if n == 0 {
        2
    } else {
        3 * n + 2 * PIPE + DIV_STEPS + 4
    }
}

/// The unit's phase.
#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum SoftmaxState {
    /// Waiting for `start`.
    Idle,
    /// Taking logits.
    Load,
    /// Pass 2: summing the weights.
    Weigh,
    /// Computing the reciprocal.
    Divide,
    /// Pass 3: sending the probabilities.
    Emit,
}

/// The softmax unit; see the module docs. `A` is the RAM's address width
/// (at most 15: counters are 16 bits).
#[derive(LogicBlock)]
pub struct Softmax<const A: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Begin a new softmax.
    pub start: Signal<In, Bit>,
    /// A logit arrives.
    pub in_valid: Signal<In, Bit>,
    /// The logit (Q16, two's complement i32).
    pub in_logit: Signal<In, Bits<32>>,
    /// No more logits: compute and emit.
    pub flush: Signal<In, Bit>,
    /// A probability leaves (input order).
    pub out_valid: Signal<Out, Bit>,
    /// The probability (Q0.30).
    pub out_prob: Signal<Out, Bits<32>>,
    /// One clock after the last probability.
    pub done: Signal<Out, Bit>,
    /// Between `start` and `done`.
    pub busy: Signal<Out, Bit>,
    ram: RAM<Bits<32>, A>,
    state: DFF<SoftmaxState>,
    count: DFF<Bits<16>>,
    rd: DFF<Bits<16>>,
    max_b: DFF<Bits<32>>,
    sum: DFF<Bits<64>>,
    rem: DFF<Bits<64>>,
    quot: DFF<Bits<64>>,
    step: DFF<Bits<8>>,
    done_r: DFF<Bit>,
    // Pipeline: valid bits (v0 = RAM data valid), and per stage the
    // fraction f, the shift n, the zero flag and the Horner value.
    v0: DFF<Bit>,
    va: DFF<Bit>,
    vb: DFF<Bit>,
    vc: DFF<Bit>,
    vd: DFF<Bit>,
    ve: DFF<Bit>,
    vf: DFF<Bit>,
    fa: DFF<Bits<16>>,
    fb: DFF<Bits<16>>,
    fc: DFF<Bits<16>>,
    fd: DFF<Bits<16>>,
    na: DFF<Bits<5>>,
    nb: DFF<Bits<5>>,
    nc: DFF<Bits<5>>,
    nd: DFF<Bits<5>>,
    ne: DFF<Bits<5>>,
    za: DFF<Bit>,
    zb: DFF<Bit>,
    zc: DFF<Bit>,
    zd: DFF<Bit>,
    ze: DFF<Bit>,
    acc3: DFF<Bits<32>>,
    acc2: DFF<Bits<32>>,
    acc1: DFF<Bits<32>>,
    poly: DFF<Bits<32>>,
    w: DFF<Bits<32>>,
    out_v: DFF<Bit>,
    out_p: DFF<Bits<32>>,
    // Constants.
    sign: Constant<Bits<32>>,
    log2e_lo: Constant<Bits<16>>,
    c4_hi: Constant<Bits<16>>,
    c4_lo: Constant<Bits<16>>,
    c3_neg: Constant<Bits<32>>,
    c2: Constant<Bits<32>>,
    c1_neg: Constant<Bits<32>>,
    c0: Constant<Bits<32>>,
    rem0: Constant<Bits<64>>,
    n_max: Constant<Bits<16>>,
    // Combinational.
    issue: Signal<Local, Bit>,
    in_flight: Signal<Local, Bit>,
    x_b: Signal<Local, Bits<32>>,
    u: Signal<Local, Bits<32>>,
    pa0: Signal<Local, Bits<32>>,
    pa1: Signal<Local, Bits<32>>,
    ul: Signal<Local, Bits<64>>,
    za_full: Signal<Local, Bits<32>>,
    pb0: Signal<Local, Bits<32>>,
    pb1: Signal<Local, Bits<32>>,
    prod_b: Signal<Local, Bits<64>>,
    pc0: Signal<Local, Bits<32>>,
    pc1: Signal<Local, Bits<32>>,
    prod_c: Signal<Local, Bits<64>>,
    pd0: Signal<Local, Bits<32>>,
    pd1: Signal<Local, Bits<32>>,
    prod_d: Signal<Local, Bits<64>>,
    pe0: Signal<Local, Bits<32>>,
    pe1: Signal<Local, Bits<32>>,
    prod_e: Signal<Local, Bits<64>>,
    pg00: Signal<Local, Bits<32>>,
    pg01: Signal<Local, Bits<32>>,
    pg10: Signal<Local, Bits<32>>,
    pg11: Signal<Local, Bits<32>>,
    prod_g: Signal<Local, Bits<64>>,
    rem2: Signal<Local, Bits<64>>,
}

impl<const A: usize> Default for Softmax<A> {
    fn default() -> Self {
        assert!((1..=15).contains(&A), "A must be in 1..=15");
        Self {
            clock: Default::default(),
            start: Default::default(),
            in_valid: Default::default(),
            in_logit: Default::default(),
            flush: Default::default(),
            out_valid: Default::default(),
            out_prob: Default::default(),
            done: Default::default(),
            busy: Default::default(),
            ram: Default::default(),
            state: Default::default(),
            count: Default::default(),
            rd: Default::default(),
            max_b: Default::default(),
            sum: Default::default(),
            rem: Default::default(),
            quot: Default::default(),
            step: Default::default(),
            done_r: Default::default(),
            v0: Default::default(),
            va: Default::default(),
            vb: Default::default(),
            vc: Default::default(),
            vd: Default::default(),
            ve: Default::default(),
            vf: Default::default(),
            fa: Default::default(),
            fb: Default::default(),
            fc: Default::default(),
            fd: Default::default(),
            na: Default::default(),
            nb: Default::default(),
            nc: Default::default(),
            nd: Default::default(),
            ne: Default::default(),
            za: Default::default(),
            zb: Default::default(),
            zc: Default::default(),
            zd: Default::default(),
            ze: Default::default(),
            acc3: Default::default(),
            acc2: Default::default(),
            acc1: Default::default(),
            poly: Default::default(),
            w: Default::default(),
            out_v: Default::default(),
            out_p: Default::default(),
            sign: Constant::new(bits(1 << 31)),
            log2e_lo: Constant::new(bits(LOG2E_LO)),
            c4_hi: Constant::new(bits(C4_HI)),
            c4_lo: Constant::new(bits(C4_LO)),
            c3_neg: Constant::new(bits(C3_NEG)),
            c2: Constant::new(bits(C2)),
            c1_neg: Constant::new(bits(C1_NEG)),
            c0: Constant::new(bits(C0)),
            rem0: Constant::new(bits(1 << 29)),
            n_max: Constant::new(bits(1 << A)),
            issue: Default::default(),
            in_flight: Default::default(),
            x_b: Default::default(),
            u: Default::default(),
            pa0: Default::default(),
            pa1: Default::default(),
            ul: Default::default(),
            za_full: Default::default(),
            pb0: Default::default(),
            pb1: Default::default(),
            prod_b: Default::default(),
            pc0: Default::default(),
            pc1: Default::default(),
            prod_c: Default::default(),
            pd0: Default::default(),
            pd1: Default::default(),
            prod_d: Default::default(),
            pe0: Default::default(),
            pe1: Default::default(),
            prod_e: Default::default(),
            pg00: Default::default(),
            pg01: Default::default(),
            pg10: Default::default(),
            pg11: Default::default(),
            prod_g: Default::default(),
            rem2: Default::default(),
        }
    }
}

impl<const A: usize> std::fmt::Debug for Softmax<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Softmax").field("addr_bits", &A).finish()
    }
}

/// LOG2E_Q16 − 2^16 (94548 = 2^16 + 29012).
pub const LOG2E_LO: u64 = 29_012;
/// `EXP2_POLY[4]` = 111 · 2^16 + 61448.
pub const C4_HI: u64 = 111;
/// See [`C4_HI`].
pub const C4_LO: u64 = 61_448;
/// −`EXP2_POLY[3]`.
pub const C3_NEG: u64 = 57_148_825;
/// `EXP2_POLY[2]`.
pub const C2: u64 = 257_114_954;
/// −`EXP2_POLY[1]`.
pub const C1_NEG: u64 = 744_171_376;
/// `EXP2_POLY[0]` (2^30).
pub const C0: u64 = 1 << 30;

/// The weight pipeline in plain integers, stage by stage as the hardware
/// computes it (magnitudes, unsigned 16 × 16 partial products); `u = m − x`.
/// The tests check it against `attention::engine::weight` exhaustively over
/// the polynomial's input and on random `u`.
pub fn datapath_weight(u: u32) -> u32 {
    let mul = |a: u64, b: u64| -> u64 {
        debug_assert!(a < 1 << 16 && b < 1 << 16);
        a * b
    };
    let split = |x: u64, f: u64| (mul(x >> 16, f) << 16) + mul(x & 0xFFFF, f);
    let u = u64::from(u);
    // A
    let ul = (u << 16) + (mul(u >> 16, LOG2E_LO) << 16) + mul(u & 0xFFFF, LOG2E_LO);
    let z = ul + 0xFFFF;
    let f = (z >> 16) & 0xFFFF;
    let n = z >> 32;
    // B–E
    let acc3 = C3_NEG - (((mul(C4_HI, f) << 16) + mul(C4_LO, f)) >> 16);
    let acc2 = C2 - ((split(acc3, f) + 0xFFFF) >> 16);
    let acc1 = C1_NEG - (split(acc2, f) >> 16);
    let p = C0 - ((split(acc1, f) + 0xFFFF) >> 16);
    // F
    if n > 30 { 0 } else { (p >> n) as u32 }
}

impl<const A: usize> Logic for Softmax<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, count, rd, max_b, sum, rem, quot, step, done_r, v0, va, vb, vc, vd,
            ve, vf, fa, fb, fc, fd, na, nb, nc, nd, ne, za, zb, zc, zd, ze, acc3, acc2, acc1, poly,
            w, out_v, out_p
        );
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.ram.write_enable.next = false;
        self.ram.write_address.next = bit_cast::<A, 16>(self.count.q.val());
        self.ram.write_data.next = self.in_logit.val() ^ self.sign.val();
        self.ram.read_address.next = bit_cast::<A, 16>(self.rd.q.val());

        // Reads are issued in Weigh and Emit until every logit is read.
        self.issue.next = ((self.state.q.val() == SoftmaxState::Weigh)
            | (self.state.q.val() == SoftmaxState::Emit))
            & (self.rd.q.val() < self.count.q.val());
        self.in_flight.next = self.v0.q.val()
            | self.va.q.val()
            | self.vb.q.val()
            | self.vc.q.val()
            | self.vd.q.val()
            | self.ve.q.val()
            | self.vf.q.val();
        if self.issue.val() {
            self.rd.d.next = self.rd.q.val() + 1;
        }
        self.v0.d.next = self.issue.val();

        // Stage A: z = ceil(u · LOG2E / 2^16), u = m − x.
        self.x_b.next = self.ram.read_data.val();
        self.u.next = self.max_b.q.val() - self.x_b.val();
        self.pa0.next = self.u.val().get_bits::<16>(0) * self.log2e_lo.val();
        self.pa1.next = self.u.val().get_bits::<16>(16) * self.log2e_lo.val();
        self.ul.next = (bit_cast::<64, 32>(self.u.val()) << 16)
            + (bit_cast::<64, 32>(self.pa1.val()) << 16)
            + bit_cast::<64, 32>(self.pa0.val())
            + 0xFFFF;
        self.za_full.next = bit_cast::<32, 64>(self.ul.val() >> 32);
        self.va.d.next = self.v0.q.val();
        self.fa.d.next = bit_cast::<16, 64>(self.ul.val() >> 16);
        self.na.d.next = self.za_full.val().get_bits::<5>(0);
        self.za.d.next = self.za_full.val() > 30;

        // Stage B: |acc3| = −c3 − ((c4 · f) >> 16).
        self.pb0.next = self.fa.q.val() * self.c4_lo.val();
        self.pb1.next = self.fa.q.val() * self.c4_hi.val();
        self.prod_b.next =
            (bit_cast::<64, 32>(self.pb1.val()) << 16) + bit_cast::<64, 32>(self.pb0.val());
        self.acc3.d.next = self.c3_neg.val() - bit_cast::<32, 64>(self.prod_b.val() >> 16);
        self.vb.d.next = self.va.q.val();
        self.fb.d.next = self.fa.q.val();
        self.nb.d.next = self.na.q.val();
        self.zb.d.next = self.za.q.val();

        // Stage C: acc2 = c2 − ceil(|acc3| · f / 2^16).
        self.pc0.next = self.acc3.q.val().get_bits::<16>(0) * self.fb.q.val();
        self.pc1.next = self.acc3.q.val().get_bits::<16>(16) * self.fb.q.val();
        self.prod_c.next = (bit_cast::<64, 32>(self.pc1.val()) << 16)
            + bit_cast::<64, 32>(self.pc0.val())
            + 0xFFFF;
        self.acc2.d.next = self.c2.val() - bit_cast::<32, 64>(self.prod_c.val() >> 16);
        self.vc.d.next = self.vb.q.val();
        self.fc.d.next = self.fb.q.val();
        self.nc.d.next = self.nb.q.val();
        self.zc.d.next = self.zb.q.val();

        // Stage D: |acc1| = −c1 − ((acc2 · f) >> 16).
        self.pd0.next = self.acc2.q.val().get_bits::<16>(0) * self.fc.q.val();
        self.pd1.next = self.acc2.q.val().get_bits::<16>(16) * self.fc.q.val();
        self.prod_d.next =
            (bit_cast::<64, 32>(self.pd1.val()) << 16) + bit_cast::<64, 32>(self.pd0.val());
        self.acc1.d.next = self.c1_neg.val() - bit_cast::<32, 64>(self.prod_d.val() >> 16);
        self.vd.d.next = self.vc.q.val();
        self.fd.d.next = self.fc.q.val();
        self.nd.d.next = self.nc.q.val();
        self.zd.d.next = self.zc.q.val();

        // Stage E: P = c0 − ceil(|acc1| · f / 2^16).
        self.pe0.next = self.acc1.q.val().get_bits::<16>(0) * self.fd.q.val();
        self.pe1.next = self.acc1.q.val().get_bits::<16>(16) * self.fd.q.val();
        self.prod_e.next = (bit_cast::<64, 32>(self.pe1.val()) << 16)
            + bit_cast::<64, 32>(self.pe0.val())
            + 0xFFFF;
        self.poly.d.next = self.c0.val() - bit_cast::<32, 64>(self.prod_e.val() >> 16);
        self.ve.d.next = self.vd.q.val();
        self.ne.d.next = self.nd.q.val();
        self.ze.d.next = self.zd.q.val();

        // Stage F: w = P >> n, 0 once n ≥ 31.
        self.w.d.next = self.poly.q.val() >> self.ne.q.val();
        if self.ze.q.val() {
            self.w.d.next = 0.into();
        }
        self.vf.d.next = self.ve.q.val();

        // Stage G: p = (w · recip) >> 32, recip = quot (33 bits).
        self.pg00.next = self.w.q.val().get_bits::<16>(0) * self.quot.q.val().get_bits::<16>(0);
        self.pg01.next = self.w.q.val().get_bits::<16>(0) * self.quot.q.val().get_bits::<16>(16);
        self.pg10.next = self.w.q.val().get_bits::<16>(16) * self.quot.q.val().get_bits::<16>(0);
        self.pg11.next = self.w.q.val().get_bits::<16>(16) * self.quot.q.val().get_bits::<16>(16);
        self.prod_g.next = (bit_cast::<64, 32>(self.pg11.val()) << 32)
            + (bit_cast::<64, 32>(self.pg01.val()) << 16)
            + (bit_cast::<64, 32>(self.pg10.val()) << 16)
            + bit_cast::<64, 32>(self.pg00.val());
        self.out_p.d.next = bit_cast::<32, 64>(self.prod_g.val() >> 32);
        if self.quot.q.val().get_bit(32) {
            self.out_p.d.next = bit_cast::<32, 64>(self.prod_g.val() >> 32) + self.w.q.val();
        }
        self.out_v.d.next = false;

        // Divider step: r = 2r; subtract the sum when it fits.
        self.rem2.next = self.rem.q.val() << 1;

        self.out_valid.next = self.out_v.q.val();
        self.out_prob.next = self.out_p.q.val();
        self.done_r.d.next = false;
        self.done.next = self.done_r.q.val();
        self.busy.next = self.state.q.val() != SoftmaxState::Idle;
        match self.state.q.val() {
            SoftmaxState::Idle => {}
            SoftmaxState::Load => {
                if self.flush.val() {
                    self.rd.d.next = 0.into();
                    if self.count.q.val() == 0 {
                        self.state.d.next = SoftmaxState::Idle;
                        self.done_r.d.next = true;
                    } else {
                        self.state.d.next = SoftmaxState::Weigh;
                    }
                } else if self.in_valid.val() & (self.count.q.val() < self.n_max.val()) {
                    self.ram.write_enable.next = true;
                    self.count.d.next = self.count.q.val() + 1;
                    if (self.in_logit.val() ^ self.sign.val()) > self.max_b.q.val() {
                        self.max_b.d.next = self.in_logit.val() ^ self.sign.val();
                    }
                }
            }
            SoftmaxState::Weigh => {
                if self.vf.q.val() {
                    self.sum.d.next = self.sum.q.val() + bit_cast::<64, 32>(self.w.q.val());
                }
                if !self.issue.val() & !self.in_flight.val() {
                    self.state.d.next = SoftmaxState::Divide;
                    self.rem.d.next = self.rem0.val();
                    self.quot.d.next = 0.into();
                    self.step.d.next = 0.into();
                }
            }
            SoftmaxState::Divide => {
                if self.rem2.val() >= self.sum.q.val() {
                    self.rem.d.next = self.rem2.val() - self.sum.q.val();
                    self.quot.d.next = (self.quot.q.val() << 1) | 1;
                } else {
                    self.rem.d.next = self.rem2.val();
                    self.quot.d.next = self.quot.q.val() << 1;
                }
                self.step.d.next = self.step.q.val() + 1;
                if self.step.q.val() == 32 {
                    self.state.d.next = SoftmaxState::Emit;
                    self.rd.d.next = 0.into();
                }
            }
            SoftmaxState::Emit => {
                self.out_v.d.next = self.vf.q.val();
                if !self.issue.val() & !self.in_flight.val() {
                    self.state.d.next = SoftmaxState::Idle;
                    self.done_r.d.next = true;
                }
            }
        }
        if self.start.val() {
            self.state.d.next = SoftmaxState::Load;
            self.count.d.next = 0.into();
            self.rd.d.next = 0.into();
            self.max_b.d.next = 0.into();
            self.sum.d.next = 0.into();
            self.out_v.d.next = false;
            self.v0.d.next = false;
            self.va.d.next = false;
            self.vb.d.next = false;
            self.vc.d.next = false;
            self.vd.d.next = false;
            self.ve.d.next = false;
            self.vf.d.next = false;
        }
    }
}

/// The inputs of one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftmaxCycle {
    /// `start`.
    pub start: bool,
    /// `in_valid`.
    pub in_valid: bool,
    /// `in_logit`.
    pub in_logit: i32,
    /// `flush`.
    pub flush: bool,
}

impl SoftmaxCycle {
    /// The fields in the order of `tb/softmax_tb.v`'s vector lines, hex.
    pub fn vector_line(&self) -> String {
        format!(
            "{:x} {:x} {:x} {:x}",
            u8::from(self.start),
            u8::from(self.in_valid),
            self.in_logit as u32,
            u8::from(self.flush)
        )
    }
}

/// The clocks of one softmax: `start`, one logit per clock, `flush`, then
/// idle clocks until `done` ([`cycles`]).
pub fn stimulus(logits: &[i32]) -> Vec<SoftmaxCycle> {
    let mut out = vec![SoftmaxCycle {
        start: true,
        ..SoftmaxCycle::default()
    }];
    out.extend(logits.iter().map(|&x| SoftmaxCycle {
        in_valid: true,
        in_logit: x,
        ..SoftmaxCycle::default()
    }));
    out.push(SoftmaxCycle {
        flush: true,
        ..SoftmaxCycle::default()
    });
    let idle = cycles(logits.len()) - logits.len() - 2;
    out.extend(std::iter::repeat_n(SoftmaxCycle::default(), idle));
    out
}

impl<const A: usize> Softmax<A> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &SoftmaxCycle) {
        self.start.next = c.start;
        self.in_valid.next = c.in_valid;
        self.in_logit.next = u64::from(c.in_logit as u32).into();
        self.flush.next = c.flush;
    }
}

/// What one run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SoftmaxRun {
    /// Probabilities per `done`, in output order.
    pub probs: Vec<Vec<u32>>,
    /// Clocks from each softmax's `start` to its `done` (inclusive).
    pub clocks: Vec<usize>,
}

/// Runs `stim` through a fresh `Softmax<A>` in rust-hdl.
pub fn run<const A: usize>(stim: &[SoftmaxCycle]) -> SoftmaxRun {
    let mut uut = Softmax::<A>::default();
    crate::sim::prepare(&mut uut);
    let (probs, clocks) = crate::sim::run_batches(
        &mut uut,
        stim,
        |c| c.start,
        |u, c| u.drive(c),
        |u| &mut u.clock,
        |u| u.out_valid.val().then(|| u.out_prob.val().to_u32()),
        |u| u.done.val(),
    );
    SoftmaxRun { probs, clocks }
}

#[cfg(test)]
mod tests;
