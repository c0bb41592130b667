//! `FxDecode`: `attention::engine::fx` in hardware, shared by the blocks
//! that take fp16 values ([`GemvUnit`](crate::GemvUnit) for keys,
//! [`WeightedSum`](crate::WeightedSum) for values).
//!
//! Purely combinational. Every finite fp16 is `s · 2^(e−25)`, so
//! `fx(h) = ±m · 2^sh` with `m ≤ 2047` and `sh ≤ 19`:
//!
//! * `e ≥ 11`: `m = s`, `sh = e − 11`;
//! * `e ≤ 10`: `m = ((s >> (10 − e)) + 1) >> 1` (round half away from zero
//!   of `s / 2^(11−e)`), `sh = 0` (subnormals use `e = 1` without the
//!   hidden bit);
//! * ±Inf: `m = 2047`, `sh = 19` (= 65504·2^14 = `FX_MAX`); NaN: `m = 0`.
//!
//! The sign is the fp16 sign bit (bit 15), which the user reads directly
//! (−0 and NaN give `m = 0`, so their sign does not matter). The logic is
//! exactly what `GemvUnit` had inline before it was factored out; the
//! GeMV tests (every fp16 pattern on every lane) check it bit for bit.

use rust_hdl::prelude::*;

/// fp16 bits → `m`, `sh` with `|fx(h)| = m · 2^sh`; see the module docs.
#[derive(LogicBlock, Default, Debug)]
pub struct FxDecode {
    /// fp16 bit pattern.
    pub h: Signal<In, Bits<16>>,
    /// Magnitude mantissa, ≤ 2047.
    pub m: Signal<Out, Bits<16>>,
    /// Left shift, ≤ 19.
    pub sh: Signal<Out, Bits<5>>,
    exp: Signal<Local, Bits<5>>,
    s: Signal<Local, Bits<16>>,
    e: Signal<Local, Bits<5>>,
    rsh: Signal<Local, Bits<5>>,
    round: Signal<Local, Bits<16>>,
}

impl Logic for FxDecode {
    #[hdl_gen]
    fn update(&mut self) {
        self.exp.next = self.h.val().get_bits::<5>(10);
        self.s.next = self.h.val() & 0x3FF;
        self.e.next = self.exp.val();
        if self.exp.val() != 0 {
            self.s.next = (self.h.val() & 0x3FF) | 0x400;
        } else {
            self.e.next = 1.into();
        }
        self.rsh.next = 0.into();
        if self.e.val() < 11 {
            self.rsh.next = 10 - self.e.val();
        }
        self.round.next = (self.s.val() >> self.rsh.val()) + 1;
        if self.exp.val() == 31 {
            // ±Inf → 2047·2^19; NaN → 0.
            self.m.next = 2047.into();
            self.sh.next = 19.into();
            if self.h.val().get_bits::<10>(0) != 0 {
                self.m.next = 0.into();
            }
        } else if self.e.val() >= 11 {
            self.m.next = self.s.val();
            self.sh.next = self.e.val() - 11;
        } else {
            self.m.next = self.round.val() >> 1;
            self.sh.next = 0.into();
        }
    }
}

/// The decoder in plain integers: `(m, sh)` as the hardware computes them.
pub fn decode(h: u16) -> (u16, u8) {
    let exp = (h >> 10) & 0x1F;
    let (s, e) = if exp != 0 {
        ((h & 0x3FF) | 0x400, exp)
    } else {
        (h & 0x3FF, 1)
    };
    if exp == 31 {
        (if h & 0x3FF != 0 { 0 } else { 2047 }, 19)
    } else if e >= 11 {
        (s, (e - 11) as u8)
    } else {
        (((s >> (10 - e)) + 1) >> 1, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block equals `decode`, and `decode` equals the model's `fx`, on
    /// every fp16 pattern.
    #[test]
    fn fx_decode_every_fp16() {
        let mut uut = FxDecode::default();
        crate::sim::prepare(&mut uut);
        for h in 0..=u16::MAX {
            uut.h.next = u64::from(h).into();
            crate::sim::settle(&mut uut);
            let (m, sh) = decode(h);
            assert_eq!(uut.m.val().to_u32(), u32::from(m), "m of {h:#06x}");
            assert_eq!(uut.sh.val().to_u32(), u32::from(sh), "sh of {h:#06x}");
            let mag = i32::from(m) << sh;
            let want = attention::engine::fx(h);
            assert_eq!(if h & 0x8000 != 0 { -mag } else { mag }, want, "{h:#06x}");
        }
    }
}
