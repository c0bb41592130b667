//! What the die scheduler needs from a NAND storage controller: issue one
//! command to one way of one channel, and say whether a channel takes
//! another. The boards implement it over their controllers' registers
//! (Cosmos+ Tiger4 NSC, Daisyplus T4 NSC); both report completions by
//! writing words into DRAM, which [`super::report`] decodes.

use ftl::Ppa;

/// One controller command. Addresses are bus addresses (as the
/// controller's AXI data master sees DRAM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NscCmd {
    /// Start the array read of `row` into the die's page register.
    ReadTrigger {
        /// Row address.
        row: u32,
    },
    /// Move the page register to DRAM through the ECC decoder, then write
    /// the error information and set the completion word.
    ReadTransfer {
        /// Row address.
        row: u32,
        /// Page data destination.
        data: u32,
        /// Spare (user metadata) destination.
        spare: u32,
        /// Error information destination.
        error_info: u32,
        /// Completion word.
        completion: u32,
    },
    /// Program `row` from DRAM.
    Program {
        /// Row address.
        row: u32,
        /// Page data source.
        data: u32,
        /// Spare source.
        spare: u32,
    },
    /// Erase the block whose first row is `row`.
    Erase {
        /// Row address of the block's first page.
        row: u32,
    },
    /// Read the die's status into the report word.
    Status {
        /// Report word.
        report: u32,
    },
}

/// A NAND storage controller with one command port per channel.
pub trait Nsc {
    /// Whether channel `channel` takes another command now.
    fn can_issue(&mut self, channel: u8) -> bool;
    /// Issues `cmd` to way `way` of channel `channel` (only after
    /// [`Nsc::can_issue`] said yes).
    fn issue(&mut self, channel: u8, way: u8, cmd: NscCmd);
    /// The row address of page `ppa` (the board's NAND addressing).
    fn row(&self, ppa: Ppa) -> u32;
}
