//! The Cadence UART (Zynq-7000 UART0 at 0xE000_0000, ZynqMP UART0 at
//! 0xFF00_0000): transmit only, polled, for the console.
#![allow(unsafe_code)] // MMIO: the UART registers

use core::fmt;

/// Control register: TXEN (bit 4) | RXEN (bit 2).
const CR: usize = 0x00;
const CR_ENABLE: u32 = 1 << 4 | 1 << 2;
/// Channel status register; bit 4 = TX FIFO full.
const SR: usize = 0x2C;
const SR_TXFULL: u32 = 1 << 4;
/// TX/RX FIFO.
const FIFO: usize = 0x30;

/// A Cadence UART at a fixed MMIO base.
#[derive(Debug)]
pub struct CadenceUart {
    base: usize,
}

impl CadenceUart {
    /// The UART at `base`, with its transmitter and receiver enabled.
    ///
    /// # Safety
    ///
    /// `base` must be the MMIO base of a Cadence UART, mapped as device
    /// memory, and no one else may drive that UART.
    pub unsafe fn new(base: usize) -> Self {
        let mut u = Self { base };
        u.write_reg(CR, CR_ENABLE);
        u
    }

    /// The UART at `base` as it is (no reset, no enable).
    ///
    /// # Safety
    ///
    /// As [`Self::new`], and the UART was enabled before.
    pub unsafe fn attach(base: usize) -> Self {
        Self { base }
    }

    fn write_reg(&mut self, off: usize, v: u32) {
        // SAFETY: `new`'s contract: `base + off` is a register of this UART,
        // which this value owns.
        unsafe { core::ptr::write_volatile((self.base + off) as *mut u32, v) }
    }

    fn read_reg(&self, off: usize) -> u32 {
        // SAFETY: as in `write_reg`; reading SR has no side effects.
        unsafe { core::ptr::read_volatile((self.base + off) as *const u32) }
    }

    /// Sends one byte, waiting while the TX FIFO is full.
    pub fn put(&mut self, b: u8) {
        while self.read_reg(SR) & SR_TXFULL != 0 {}
        self.write_reg(FIFO, u32::from(b));
    }
}

impl fmt::Write for CadenceUart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}
