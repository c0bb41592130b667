//! The Cadence UART of both Zynq generations (Zynq-7000 UART0/1 at
//! 0xE000_0000/0xE000_1000, ZynqMP UART0/1 at 0xFF00_0000/0xFF01_0000;
//! Xilinx UG585 and UG1085): transmit only, polled. The first-stage boot
//! loader (or QEMU) has set the baud rate; this only enables the
//! transmitter. The console of the OpenSSD boards and of the QEMU boards.

use core::fmt;

use crate::mmio::Regs;

/// Bytes of a UART's register window.
pub const WINDOW: usize = 0x1000;
/// Control register.
pub const CR: usize = 0x00;
/// CR: transmitter enable | receiver enable.
pub const CR_TX_RX_EN: u32 = 1 << 4 | 1 << 2;
/// Channel status register.
pub const SR: usize = 0x2C;
/// SR: transmit FIFO full.
pub const SR_TXFULL: u32 = 1 << 4;
/// Transmit/receive FIFO.
pub const FIFO: usize = 0x30;

/// A console on a Cadence UART.
#[derive(Debug)]
pub struct CadenceUart<R> {
    regs: R,
}

impl<R: Regs> CadenceUart<R> {
    /// The UART behind `regs`, transmitter enabled.
    pub fn new(mut regs: R) -> Self {
        regs.write32(CR, CR_TX_RX_EN);
        Self { regs }
    }

    /// The UART behind `regs` as it is: no register written (it was
    /// enabled before, by [`CadenceUart::new`] on the same registers).
    pub fn attach(regs: R) -> Self {
        Self { regs }
    }

    /// Sends one byte, waiting while the FIFO is full.
    pub fn put(&mut self, b: u8) {
        while self.regs.read32(SR) & SR_TXFULL != 0 {}
        self.regs.write32(FIFO, u32::from(b));
    }

    /// The registers (tests inspect the model behind them).
    pub fn regs_mut(&mut self) -> &mut R {
        &mut self.regs
    }
}

impl<R: Regs> fmt::Write for CadenceUart<R> {
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

#[cfg(test)]
mod tests {
    use core::fmt::Write as _;

    use super::*;
    use crate::fake::{Recorder, RegisterModel};

    /// TX FIFO full on every other status read.
    #[derive(Default)]
    struct Uart {
        reads: u32,
    }
    impl RegisterModel for Uart {
        fn read(&mut self, offset: usize) -> u32 {
            assert_eq!(offset, SR);
            self.reads += 1;
            if self.reads % 2 == 1 { SR_TXFULL } else { 0 }
        }
        fn write(&mut self, _: usize, _: u32) {}
    }

    #[test]
    fn bytes_wait_for_room_and_newlines_get_a_carriage_return() {
        let mut u = CadenceUart::new(Recorder::new(Uart::default()));
        writeln!(u, "ok").expect("write");
        let w = u.regs_mut().writes();
        assert_eq!(w[0], (CR, CR_TX_RX_EN));
        let sent: std::vec::Vec<u32> = w[1..]
            .iter()
            .map(|&(o, v)| {
                assert_eq!(o, FIFO);
                v
            })
            .collect();
        assert_eq!(sent, [u32::from(b'o'), u32::from(b'k'), 13, 10]);
        assert_eq!(u.regs_mut().model.reads, 8, "each byte waited once");
    }

    #[test]
    fn attaching_writes_no_register() {
        let mut u = CadenceUart::attach(Recorder::new(Uart::default()));
        assert!(u.regs_mut().log.is_empty());
        u.put(b'x');
        assert_eq!(u.regs_mut().writes(), [(FIFO, u32::from(b'x'))]);
    }
}
