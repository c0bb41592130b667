//! The Cosmos+ NAND storage controller ("Tiger4 NSC", one per channel):
//! a register file that takes one command at a time per channel, in one
//! place, with where each fact comes from.
//!
//! ESTABLISHED from the Cosmos+ firmware's driver (`fmc_driver` /
//! `nsc_driver`, here as copied in `SKKJH/DaisyPlus_Trim:
//! fil/nsc_driver.h` and `fil/nsc_driver.c`; read, not copied):
//!
//! * ten consecutive 32-bit registers (`V2FMCRegisters`): command select,
//!   row address, user data, data address, spare address, error
//!   information address, completion address, way selection, channel
//!   busy, ready/busy (one bit per way);
//! * a command is issued by writing the way, then its arguments, then the
//!   command select register last; the channel takes the next one when
//!   channel busy reads 0;
//! * command codes and which arguments each takes, below;
//! * completions: as in `board_openssd::flash::report` (the same `V2F*`
//!   macros).
//!
//! ASSUMED (not established by what we could read):
//!
//! * row address = block · 256 + page, i.e. the pages are the rows of one
//!   MLC block of LUN 0. The ftl preset (4096 blocks × 256 pages) matches
//!   one LUN of the Cosmos+ array in MLC mode; the GreedyFTL instead runs
//!   the array as SLC on the LSB rows (page p → row 0, 1, 3, 5, …: 128
//!   pages a block) and puts LUN 1 at row 0x20_0000;
//! * the NAND has been brought up (reset, toggle mode) by the vendor
//!   flow; this driver only offers a reset command.

use board_openssd::flash::NscCmd;

/// Register byte offsets.
pub mod off {
    /// Command select: writing it issues the command.
    pub const CMD_SELECT: usize = 0x00;
    /// Row address.
    pub const ROW_ADDRESS: usize = 0x04;
    /// User data (features payload).
    pub const USER_DATA: usize = 0x08;
    /// Page data buffer address.
    pub const DATA_ADDRESS: usize = 0x0C;
    /// Spare buffer address.
    pub const SPARE_ADDRESS: usize = 0x10;
    /// Error information address.
    pub const ERROR_COUNT_ADDRESS: usize = 0x14;
    /// Completion (or status report) address.
    pub const COMPLETION_ADDRESS: usize = 0x18;
    /// Way (0-based).
    pub const WAY_SELECTION: usize = 0x1C;
    /// Nonzero while the channel runs a command.
    pub const CHANNEL_BUSY: usize = 0x20;
    /// Ready/busy per way (1 = ready).
    pub const READY_BUSY: usize = 0x24;
}

/// Command codes.
pub mod cmd {
    /// Reset the way's NAND.
    pub const RESET: u32 = 1;
    /// Set features.
    pub const SET_FEATURES: u32 = 6;
    /// Start a page read into the page register.
    pub const READ_PAGE_TRIGGER: u32 = 13;
    /// Move the page register to DRAM through the ECC decoder.
    pub const READ_PAGE_TRANSFER: u32 = 18;
    /// Program a page.
    pub const PROGRAM_PAGE: u32 = 28;
    /// Erase a block.
    pub const BLOCK_ERASE: u32 = 37;
    /// Read the status into a report word.
    pub const STATUS_CHECK: u32 = 41;
}

/// Rows (pages) per block (ASSUMED mapping; see the module docs).
pub const ROWS_PER_BLOCK: u32 = 256;

/// The row address of `page` of `block`.
pub const fn row(block: u32, page: u32) -> u32 {
    block * ROWS_PER_BLOCK + page
}

/// The register writes that issue `cmd` to way `way`, in order: the way,
/// the arguments, the command select last.
pub fn writes(cmd: NscCmd, way: u8) -> ([(usize, u32); 7], usize) {
    let w = (off::WAY_SELECTION, u32::from(way));
    let pad = (0, 0);
    match cmd {
        NscCmd::ReadTrigger { row } => (
            [
                w,
                (off::ROW_ADDRESS, row),
                (off::CMD_SELECT, cmd::READ_PAGE_TRIGGER),
                pad,
                pad,
                pad,
                pad,
            ],
            3,
        ),
        NscCmd::ReadTransfer {
            row,
            data,
            spare,
            error_info,
            completion,
        } => (
            [
                w,
                (off::DATA_ADDRESS, data),
                (off::SPARE_ADDRESS, spare),
                (off::ERROR_COUNT_ADDRESS, error_info),
                (off::COMPLETION_ADDRESS, completion),
                (off::ROW_ADDRESS, row),
                (off::CMD_SELECT, cmd::READ_PAGE_TRANSFER),
            ],
            7,
        ),
        NscCmd::Program { row, data, spare } => (
            [
                w,
                (off::ROW_ADDRESS, row),
                (off::DATA_ADDRESS, data),
                (off::SPARE_ADDRESS, spare),
                (off::CMD_SELECT, cmd::PROGRAM_PAGE),
                pad,
                pad,
            ],
            5,
        ),
        NscCmd::Erase { row } => (
            [
                w,
                (off::ROW_ADDRESS, row),
                (off::CMD_SELECT, cmd::BLOCK_ERASE),
                pad,
                pad,
                pad,
                pad,
            ],
            3,
        ),
        NscCmd::Status { report } => (
            [
                w,
                (off::COMPLETION_ADDRESS, report),
                (off::CMD_SELECT, cmd::STATUS_CHECK),
                pad,
                pad,
                pad,
                pad,
            ],
            3,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_are_ten_consecutive_words() {
        let all = [
            off::CMD_SELECT,
            off::ROW_ADDRESS,
            off::USER_DATA,
            off::DATA_ADDRESS,
            off::SPARE_ADDRESS,
            off::ERROR_COUNT_ADDRESS,
            off::COMPLETION_ADDRESS,
            off::WAY_SELECTION,
            off::CHANNEL_BUSY,
            off::READY_BUSY,
        ];
        assert!(all.iter().enumerate().all(|(i, &o)| o == 4 * i));
    }

    #[test]
    fn every_command_selects_the_way_first_and_commits_last() {
        let cmds = [
            NscCmd::ReadTrigger { row: 1 },
            NscCmd::ReadTransfer {
                row: 1,
                data: 2,
                spare: 3,
                error_info: 4,
                completion: 5,
            },
            NscCmd::Program {
                row: 1,
                data: 2,
                spare: 3,
            },
            NscCmd::Erase { row: 256 },
            NscCmd::Status { report: 9 },
        ];
        for c in cmds {
            let (w, n) = writes(c, 5);
            assert_eq!(w[0], (off::WAY_SELECTION, 5), "{c:?}");
            assert_eq!(w[n - 1].0, off::CMD_SELECT, "{c:?}");
            assert!(w[1..n - 1].iter().all(|&(o, _)| o != off::CMD_SELECT));
        }
        let (w, n) = writes(cmds[1], 0);
        assert_eq!(w[n - 1].1, cmd::READ_PAGE_TRANSFER);
        assert!(w[..n].contains(&(off::ERROR_COUNT_ADDRESS, 4)));
        assert!(w[..n].contains(&(off::COMPLETION_ADDRESS, 5)));
        let (w, _) = writes(
            NscCmd::Status {
                report: 0x1010_4880,
            },
            3,
        );
        assert_eq!(w[1], (off::COMPLETION_ADDRESS, 0x1010_4880));
        assert_eq!(w[2], (off::CMD_SELECT, cmd::STATUS_CHECK));
    }

    #[test]
    fn rows_are_block_pages() {
        assert_eq!(row(4095, 255), 4095 * 256 + 255);
        assert_eq!(row(3, 0) % ROWS_PER_BLOCK, 0);
    }
}
