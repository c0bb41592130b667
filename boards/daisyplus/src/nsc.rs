//! [`T4Nsc`]: the Daisyplus NAND storage controllers (one per channel) as
//! a [`board_openssd::flash::Nsc`]: a command is built in the scratchpad
//! and issued through CC while the queue has room. Layout: [`crate::regs`].

use alloc::vec::Vec;

use board_openssd::flash::{Nsc, NscCmd};
use board_openssd::mmio::Regs;
use ftl::Ppa;

use crate::regs::{self, group};

/// The channels' controllers.
#[derive(Debug)]
pub struct T4Nsc<R> {
    channels: Vec<R>,
}

impl<R: Regs> T4Nsc<R> {
    /// Controllers `channels[c]` of channel c.
    pub fn new(channels: Vec<R>) -> Self {
        Self { channels }
    }

    /// Channel `c`'s registers (tests inspect the model behind them).
    pub fn channel_mut(&mut self, c: usize) -> &mut R {
        &mut self.channels[c]
    }

    fn write_scratchpad(&mut self, channel: u8, words: &[u32]) {
        let r = &mut self.channels[usize::from(channel)];
        for (i, &w) in words.iter().enumerate() {
            r.write32(group::SP + 4 * i, w);
        }
        r.write32(group::CC, 1);
    }

    /// Queues a NAND reset of every way of every channel (the NAND's
    /// power-on state needs it before the first command); returns false
    /// if a queue was full.
    pub fn reset_all(&mut self, ways: u8) -> bool {
        for c in 0..self.channels.len() as u8 {
            for w in 0..ways {
                if !self.can_issue(c) {
                    return false;
                }
                self.write_scratchpad(c, &regs::reset(w));
            }
        }
        true
    }

    /// NAND ready/busy of channel `c`'s ways (bit w = way w ready).
    pub fn ready_busy(&mut self, c: u8) -> u32 {
        self.channels[usize::from(c)].read32(group::BP)
    }
}

impl<R: Regs> Nsc for T4Nsc<R> {
    fn can_issue(&mut self, channel: u8) -> bool {
        self.channels[usize::from(channel)].read32(group::ID) & regs::ID_QUEUE_NOT_FULL != 0
    }

    fn issue(&mut self, channel: u8, way: u8, cmd: NscCmd) {
        let (words, n) = regs::scratchpad(cmd, way);
        self.write_scratchpad(channel, &words[..n]);
    }

    fn row(&self, ppa: Ppa) -> u32 {
        regs::row(ppa.block, ppa.page)
    }
}

#[cfg(test)]
mod tests {
    use board_openssd::fake::{Access, Plain, Recorder};

    use super::*;

    fn nsc() -> T4Nsc<Recorder<Plain>> {
        T4Nsc::new((0..4).map(|_| Recorder::new(Plain::default())).collect())
    }

    #[test]
    fn a_command_is_built_in_the_scratchpad_then_issued() {
        let mut n = nsc();
        n.issue(
            2,
            1,
            NscCmd::Status {
                report: 0x4010_4880,
            },
        );
        assert_eq!(
            n.channel_mut(2).writes(),
            [
                (group::SP, regs::cmd::READ_STATUS),
                (group::SP + 4, 0b10),
                (group::SP + 8, 0x4010_4880),
                (group::CC, 1)
            ]
        );
        assert!(
            n.channel_mut(0).log.is_empty(),
            "only channel 2 was touched"
        );
    }

    #[test]
    fn commands_wait_for_room_in_the_queue() {
        let mut n = nsc();
        assert!(!n.can_issue(1));
        assert!(!n.reset_all(2), "a full queue stops the resets");
        n.channel_mut(1).model.set(group::ID, 0xABC0_0001);
        assert!(n.can_issue(1));
        assert_eq!(
            n.channel_mut(1).log.last(),
            Some(&Access::Read(group::ID, 0xABC0_0001))
        );
    }

    #[test]
    fn every_way_of_every_channel_is_reset() {
        let mut n = nsc();
        for c in 0..4 {
            n.channel_mut(c).model.set(group::ID, 1);
        }
        assert!(n.reset_all(2));
        for c in 0..4 {
            let resets: Vec<u32> = n
                .channel_mut(c)
                .writes()
                .into_iter()
                .filter(|&(o, _)| o == group::SP + 4)
                .map(|(_, v)| v)
                .collect();
            assert_eq!(resets, [1, 2]);
        }
    }

    #[test]
    fn rows_are_slc_block_pages() {
        let p = Ppa {
            channel: 3,
            way: 1,
            block: 2047,
            page: 255,
        };
        assert_eq!(nsc().row(p), 2047 * 256 + 255);
    }
}
