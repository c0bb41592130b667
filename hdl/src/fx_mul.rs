//! `FxMul`: the fp16 multiply stage that [`GemvUnit`](crate::GemvUnit)
//! (`q · fx(k)`) and [`WeightedSum`](crate::WeightedSum) (`p · fx(v)`)
//! share: an unsigned 32-bit `x` times a decoded fp16 `±m · 2^sh`
//! ([`FxDecode`](crate::fx::FxDecode)), as a `W`-bit two's-complement term.
//!
//! [`STAGES`] = 2 register stages, one term per clock: the term of the
//! inputs sampled at clock edge t is on `term` after edge t + 1.
//!
//! 1. *Multiply*: `x · m` as two 16×16 partial products (`x` in two 16-bit
//!    halves, `m` in 16 bits). rust-hdl 0.46 implements `*` only for
//!    `Bits<16> × Bits<16> → Bits<32>`, which yosys maps to one DSP48
//!    each; `sh` and `neg` ride along.
//! 2. *Term*: `(hi << 16) + lo` (< 2^48) shifted left by `sh`, negated
//!    when `neg`.
//!
//! `x < 2^32`, `m ≤ 2047`, `sh ≤ 19`: `|term| < 2^62`, so `W ≥ 63` holds
//! it exactly (`GemvUnit` takes `W` = its 70-bit accumulator, so the term
//! is already sign-extended; `WeightedSum` 64). Masked lanes give `m = 0`,
//! hence 0 whatever `neg`.

use rust_hdl::prelude::*;

use crate::gemv::Widen;

/// Register stages from the inputs to their term.
pub const STAGES: usize = 2;
/// Term width of the generated block: the weighted sum's accumulator.
pub const SYNTH_BITS: usize = crate::weighted_sum::ACC_BITS;

/// `±x · m · 2^sh` in `W` bits, [`STAGES`] clock edges later; see the
/// module docs.
#[derive(LogicBlock, Debug)]
pub struct FxMul<const W: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// The unsigned factor (`|q|` or `p`).
    pub x: Signal<In, Bits<32>>,
    /// [`FxDecode`](crate::fx::FxDecode)'s magnitude mantissa, ≤ 2047 (0
    /// for a masked lane).
    pub m: Signal<In, Bits<16>>,
    /// [`FxDecode`](crate::fx::FxDecode)'s left shift, ≤ 19.
    pub sh: Signal<In, Bits<5>>,
    /// Negate the product.
    pub neg: Signal<In, Bit>,
    /// The signed term (two's complement).
    pub term: Signal<Out, Bits<W>>,
    lo: DFF<Bits<32>>,
    hi: DFF<Bits<32>>,
    sh_r: DFF<Bits<5>>,
    neg_r: DFF<Bit>,
    mag48: Signal<Local, Bits<48>>,
    mag: Signal<Local, Bits<W>>,
    term_r: DFF<Bits<W>>,
}

impl<const W: usize> Default for FxMul<W> {
    fn default() -> Self {
        assert!((63..=128).contains(&W), "a term needs 63 bits");
        Self {
            clock: Default::default(),
            x: Default::default(),
            m: Default::default(),
            sh: Default::default(),
            neg: Default::default(),
            term: Default::default(),
            lo: Default::default(),
            hi: Default::default(),
            sh_r: Default::default(),
            neg_r: Default::default(),
            mag48: Default::default(),
            mag: Default::default(),
            term_r: Default::default(),
        }
    }
}

impl<const W: usize> Logic for FxMul<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, lo, hi, sh_r, neg_r, term_r);
        // Stage 1: two 16×16 partial products.
        self.lo.d.next = self.x.val().get_bits::<16>(0) * self.m.val();
        self.hi.d.next = self.x.val().get_bits::<16>(16) * self.m.val();
        self.sh_r.d.next = self.sh.val();
        self.neg_r.d.next = self.neg.val();
        // Stage 2: the signed, shifted term.
        self.mag48.next = self.lo.q.val().to_bits::<48>() + (self.hi.q.val().to_bits::<48>() << 16);
        self.mag.next = self.mag48.val().to_bits::<W>() << self.sh_r.q.val();
        self.term_r.d.next = self.mag.val();
        if self.neg_r.q.val() {
            self.term_r.d.next = !self.mag.val() + 1;
        }
        self.term.next = self.term_r.q.val();
    }
}

#[cfg(test)]
mod tests;
