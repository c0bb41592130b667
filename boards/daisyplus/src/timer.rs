//! [`GenericTimer`]: the Cortex-A53 generic timer as the board's counter;
//! this crate's only `unsafe`. Built for the board only
//! (`aarch64-unknown-none`).
// The generic timer's counter is read with an `mrs` instruction.
#![allow(unsafe_code)]

use board_openssd::clock::Ticks;

use crate::memory_map as map;

/// The generic timer's physical count (CNTPCT_EL0).
#[derive(Debug)]
pub struct GenericTimer {
    hz: u64,
}

impl GenericTimer {
    /// The timer at the frequency CNTFRQ_EL0 reports (the FSBL sets it;
    /// [`map::TIMESTAMP_HZ`] if it reads 0).
    pub fn new() -> Self {
        let hz: u64;
        // SAFETY: reading CNTFRQ_EL0 has no side effects at EL3.
        unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) hz, options(nomem, nostack)) };
        Self {
            hz: if hz == 0 { map::TIMESTAMP_HZ } else { hz },
        }
    }
}

impl Default for GenericTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl Ticks for GenericTimer {
    fn ticks(&mut self) -> u64 {
        let t: u64;
        // SAFETY: reading CNTPCT_EL0 has no side effects at EL3.
        unsafe {
            core::arch::asm!("isb", "mrs {}, cntpct_el0", out(reg) t, options(nomem, nostack))
        };
        t
    }

    fn hz(&self) -> u64 {
        self.hz
    }
}
