//! [`Tiger4Nsc`]: the Cosmos+ NAND storage controllers (one per channel)
//! as a [`board_openssd::flash::Nsc`]. Layout: [`crate::regs`].

use alloc::vec::Vec;

use board_openssd::flash::{Nsc, NscCmd};
use board_openssd::mmio::Regs;
use ftl::Ppa;

use crate::regs::{self, off};

/// The channels' controllers.
#[derive(Debug)]
pub struct Tiger4Nsc<R> {
    channels: Vec<R>,
}

impl<R: Regs> Tiger4Nsc<R> {
    /// Controllers `channels[c]` of channel c.
    pub fn new(channels: Vec<R>) -> Self {
        Self { channels }
    }

    /// Channel `c`'s registers (tests inspect the model behind them).
    pub fn channel_mut(&mut self, c: usize) -> &mut R {
        &mut self.channels[c]
    }

    /// Resets every way of every channel (the NAND's power-on state needs
    /// it before the first command), waiting up to `spins` polls for a
    /// channel to be idle before each; returns how many resets went out.
    pub fn reset_all(&mut self, ways: u8, spins: u32) -> usize {
        let mut n = 0;
        for way in 0..ways {
            for c in 0..self.channels.len() as u8 {
                if (0..spins.max(1)).any(|_| self.can_issue(c)) {
                    let r = &mut self.channels[usize::from(c)];
                    r.write32(off::WAY_SELECTION, u32::from(way));
                    r.write32(off::CMD_SELECT, regs::cmd::RESET);
                    n += 1;
                }
            }
        }
        n
    }

    /// Ready/busy of channel `c`'s ways (bit w = way w ready).
    pub fn ready_busy(&mut self, c: u8) -> u32 {
        self.channels[usize::from(c)].read32(off::READY_BUSY)
    }
}

impl<R: Regs> Nsc for Tiger4Nsc<R> {
    fn can_issue(&mut self, channel: u8) -> bool {
        self.channels[usize::from(channel)].read32(off::CHANNEL_BUSY) == 0
    }

    fn issue(&mut self, channel: u8, way: u8, cmd: NscCmd) {
        let (writes, n) = regs::writes(cmd, way);
        let r = &mut self.channels[usize::from(channel)];
        for &(o, v) in &writes[..n] {
            r.write32(o, v);
        }
    }

    fn row(&self, ppa: Ppa) -> u32 {
        regs::row(ppa.block, ppa.page)
    }
}

#[cfg(test)]
mod tests {
    use board_openssd::fake::{Plain, Recorder};

    use super::*;

    fn nsc() -> Tiger4Nsc<Recorder<Plain>> {
        Tiger4Nsc::new((0..8).map(|_| Recorder::new(Plain::default())).collect())
    }

    #[test]
    fn a_program_goes_to_its_channel_way_first_command_last() {
        let mut n = nsc();
        n.issue(
            6,
            7,
            NscCmd::Program {
                row: regs::row(2, 3),
                data: 0x1010_0000,
                spare: 0x1010_4000,
            },
        );
        assert_eq!(
            n.channel_mut(6).writes(),
            [
                (off::WAY_SELECTION, 7),
                (off::ROW_ADDRESS, 2 * 256 + 3),
                (off::DATA_ADDRESS, 0x1010_0000),
                (off::SPARE_ADDRESS, 0x1010_4000),
                (off::CMD_SELECT, regs::cmd::PROGRAM_PAGE)
            ]
        );
        assert!(n.channel_mut(5).log.is_empty());
    }

    #[test]
    fn a_busy_channel_takes_nothing() {
        let mut n = nsc();
        n.channel_mut(1).model.set(off::CHANNEL_BUSY, 1);
        assert!(!n.can_issue(1));
        assert!(n.can_issue(0));
        assert_eq!(
            n.reset_all(2, 10),
            14,
            "every channel but the busy one, both ways"
        );
        assert!(n.channel_mut(1).writes().is_empty());
        assert_eq!(
            n.channel_mut(0).writes(),
            [
                (off::WAY_SELECTION, 0),
                (off::CMD_SELECT, regs::cmd::RESET),
                (off::WAY_SELECTION, 1),
                (off::CMD_SELECT, regs::cmd::RESET)
            ]
        );
    }
}
