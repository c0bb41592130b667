//! The Daisyplus NAND storage controller ("T4 NSC", IP `t4nfc_hlper`): a
//! microcoded controller with a 32-deep command queue per channel. In one
//! place, with where each fact comes from.
//!
//! ESTABLISHED from the Daisyplus firmware's driver,
//! `CRZ-Technology/OpenSSD-OpenChannelSSD:
//! DaisyPlus/2025.1/Micron_New_NAND/PS_LPDDR4_B/ws/run-gr3ftl/nsc_driver.c`
//! and `.../PS_LPDDR4_A/ws/run-gr3ftl/nsc_driver.h` (read, not copied):
//!
//! * register groups at fixed offsets from the controller's base: ID
//!   (+0x0000; word 0 bit 0 = queue not full, word 1 = queued commands),
//!   CFG (+0x1000), EXT (+0x2000, performance monitor), CC (+0x3000, write
//!   1 to issue the command in the scratchpad), BP (+0x3800, NAND
//!   ready/busy per way), SP (+0x4000, the scratchpad);
//! * a command is written into the scratchpad as words — command code,
//!   way (one-hot), then the command's arguments — and issued through CC;
//! * the command codes are microcode entry points; the pSLC read, program
//!   and erase codes and their argument order below;
//! * row addresses: 256 rows per SLC block (`ROWS_PER_SLC_BLOCK`), an
//!   erase row's low 8 bits zero, so row = block · 256 + page;
//! * completions: as in `board_openssd::flash::report`.
//!
//! ASSUMED (not established by what we could read):
//!
//! * the microcode is already in the controllers' BRAMs (0xA000_0000 +
//!   0x1000·c) when this firmware starts: the vendor firmware writes it at
//!   boot from a table (`t4nsc_ucode.h`, GPL) this project does not carry.
//!   Without it the controller executes nothing;
//! * the NAND has been brought up (reset, timing mode, toggle mode) by the
//!   vendor flow; this driver only offers a reset command;
//! * error information word 1 is the page-decode word that must read all
//!   ones (`V2FPageDecodeSuccess` is applied to a "secondary" word).

use board_openssd::flash::NscCmd;

/// Register group offsets.
pub mod group {
    /// Identification and queue status.
    pub const ID: usize = 0x0000;
    /// Configuration.
    pub const CFG: usize = 0x1000;
    /// Extension (performance monitor).
    pub const EXT: usize = 0x2000;
    /// Dispatcher control: write 1 to issue.
    pub const CC: usize = 0x3000;
    /// Signal bypass: NAND ready/busy per way.
    pub const BP: usize = 0x3800;
    /// Scratchpad: the command being built.
    pub const SP: usize = 0x4000;
}

/// ID word 0: the command queue has room.
pub const ID_QUEUE_NOT_FULL: u32 = 1;
/// Commands the queue holds.
pub const QUEUE_DEPTH: u32 = 32;

/// Microcode entry points (command codes).
pub mod cmd {
    /// Reset a way's NAND.
    pub const NAND_RESET: u32 = 4;
    /// Read the NAND status into a report word.
    pub const READ_STATUS: u32 = 304;
    /// Erase a block.
    pub const ERASE_BLOCK: u32 = 352;
    /// Start a pSLC page read into the page register.
    pub const READ_PAGE_TRIGGER_PSLC: u32 = 452;
    /// End of the common commands; the page commands follow it.
    pub const END_OF_COMMON: u32 = 824;
    /// Transfer a pSLC page read through the ECC decoder.
    pub const READ_TRANSFER_PSLC: u32 = END_OF_COMMON;
    /// Program a pSLC page.
    pub const PROGRAM_PAGE_PSLC: u32 = END_OF_COMMON + 112;
}

/// Rows (pages) per SLC block.
pub const ROWS_PER_BLOCK: u32 = 256;

/// The row address of `page` of `block`.
pub const fn row(block: u32, page: u32) -> u32 {
    block * ROWS_PER_BLOCK + page
}

/// The scratchpad words of `cmd` for way `way`, in write order: command
/// code, one-hot way, arguments.
pub fn scratchpad(cmd: NscCmd, way: u8) -> ([u32; 7], usize) {
    let w = 1u32 << way;
    match cmd {
        NscCmd::ReadTrigger { row } => ([cmd::READ_PAGE_TRIGGER_PSLC, w, row, 0, 0, 0, 0], 3),
        NscCmd::ReadTransfer {
            row,
            data,
            spare,
            error_info,
            completion,
        } => (
            [
                cmd::READ_TRANSFER_PSLC,
                w,
                row,
                data,
                spare,
                error_info,
                completion,
            ],
            7,
        ),
        NscCmd::Program { row, data, spare } => {
            ([cmd::PROGRAM_PAGE_PSLC, w, row, data, spare, 0, 0], 5)
        }
        NscCmd::Erase { row } => ([cmd::ERASE_BLOCK, w, row, 0, 0, 0, 0], 3),
        NscCmd::Status { report } => ([cmd::READ_STATUS, w, report, 0, 0, 0, 0], 3),
    }
}

/// The scratchpad words of a NAND reset of way `way`.
pub const fn reset(way: u8) -> [u32; 2] {
    [cmd::NAND_RESET, 1 << way]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_fit_the_64_kib_window_in_order() {
        let g = [
            group::ID,
            group::CFG,
            group::EXT,
            group::CC,
            group::BP,
            group::SP,
        ];
        assert!(g.windows(2).all(|p| p[0] < p[1]));
        // The scratchpad holds the command, the way and 30 argument words.
        assert!(group::SP + 32 * 4 <= crate::memory_map::NSC.size as usize);
    }

    #[test]
    fn page_commands_follow_the_common_ones() {
        assert_eq!(cmd::READ_TRANSFER_PSLC, 824);
        assert_eq!(cmd::PROGRAM_PAGE_PSLC, 936);
    }

    #[test]
    fn scratchpads_carry_code_one_hot_way_and_arguments() {
        let (w, n) = scratchpad(
            NscCmd::ReadTransfer {
                row: row(3, 7),
                data: 0x4010_0000,
                spare: 0x4010_4000,
                error_info: 0x4010_4800,
                completion: 0x4010_4840,
            },
            1,
        );
        assert_eq!(
            &w[..n],
            &[
                824,
                0b10,
                3 * 256 + 7,
                0x4010_0000,
                0x4010_4000,
                0x4010_4800,
                0x4010_4840
            ]
        );
        let (w, n) = scratchpad(NscCmd::Erase { row: row(9, 0) }, 0);
        assert_eq!(&w[..n], &[352, 1, 9 * 256]);
        assert_eq!(row(9, 0) & 0xFF, 0, "erase rows are block aligned");
        let (w, n) = scratchpad(
            NscCmd::Program {
                row: 5,
                data: 1,
                spare: 2,
            },
            1,
        );
        assert_eq!(&w[..n], &[936, 2, 5, 1, 2]);
        assert_eq!(reset(1), [4, 2]);
    }
}
