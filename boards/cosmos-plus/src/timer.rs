//! [`GlobalTimer`]: the Cortex-A9 MPCore global timer (64-bit, counting at
//! PERIPHCLK) as the board's counter. Registers (Cortex-A9 MPCore TRM,
//! Xilinx UG585): counter low +0x00, high +0x04, control +0x08 (bit 0
//! enables).

use board_openssd::clock::Ticks;
use board_openssd::mmio::Regs;

/// Counter, low word.
pub const COUNTER_LO: usize = 0x00;
/// Counter, high word.
pub const COUNTER_HI: usize = 0x04;
/// Control.
pub const CONTROL: usize = 0x08;
/// Control: timer enable.
pub const ENABLE: u32 = 1;

/// The global timer behind `R`.
#[derive(Debug)]
pub struct GlobalTimer<R> {
    regs: R,
    hz: u64,
}

impl<R: Regs> GlobalTimer<R> {
    /// The timer at `hz`, enabled (the FSBL may have left it stopped).
    pub fn new(mut regs: R, hz: u64) -> Self {
        let c = regs.read32(CONTROL);
        if c & ENABLE == 0 {
            regs.write32(CONTROL, c | ENABLE);
        }
        Self { regs, hz }
    }
}

impl<R: Regs> Ticks for GlobalTimer<R> {
    /// Reads high, low, high until the high word held still, so a carry
    /// between the two reads cannot tear the value.
    fn ticks(&mut self) -> u64 {
        loop {
            let hi = self.regs.read32(COUNTER_HI);
            let lo = self.regs.read32(COUNTER_LO);
            if self.regs.read32(COUNTER_HI) == hi {
                return u64::from(hi) << 32 | u64::from(lo);
            }
        }
    }

    fn hz(&self) -> u64 {
        self.hz
    }
}

#[cfg(test)]
mod tests {
    use board_openssd::fake::{Recorder, RegisterModel};

    use super::*;

    /// A counter that carries from low to high between the first two
    /// reads, then stays put.
    struct Carrying {
        reads: u32,
        control: u32,
    }
    impl RegisterModel for Carrying {
        fn read(&mut self, offset: usize) -> u32 {
            self.reads += 1;
            match (offset, self.reads) {
                (CONTROL, _) => self.control,
                (COUNTER_HI, 2) => 7, // before the carry
                (COUNTER_LO, 3) => 0, // after it
                (COUNTER_HI, _) => 8,
                (COUNTER_LO, _) => 5,
                _ => 0,
            }
        }
        fn write(&mut self, offset: usize, value: u32) {
            assert_eq!(offset, CONTROL);
            self.control = value;
        }
    }

    #[test]
    fn the_timer_is_enabled_and_a_carry_never_tears_the_count() {
        let mut t = GlobalTimer::new(
            Recorder::new(Carrying {
                reads: 0,
                control: 0,
            }),
            333_333_343,
        );
        assert_eq!(t.regs.model.control, ENABLE);
        // First try: hi 7, lo 0, hi 8 (torn) — retried: hi 8, lo 5, hi 8.
        assert_eq!(t.ticks(), 8 << 32 | 5);
        assert_eq!(t.hz(), 333_333_343);
    }
}
