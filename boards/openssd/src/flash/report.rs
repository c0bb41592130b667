//! The words a NAND storage controller writes back into DRAM, as both
//! OpenSSD controllers define them (the `V2F*` macros of `nsc_driver.h` in
//! the Cosmos+ firmware, e.g. `SKKJH/DaisyPlus_Trim: fil/nsc_driver.h`, and
//! in the Daisyplus firmware, `CRZ-Technology/OpenSSD-OpenChannelSSD:
//! DaisyPlus/2025.1/Micron_New_NAND/PS_LPDDR4_A/ws/run-gr3ftl/nsc_driver.h`):
//!
//! * completion word: bit 0 set when a read transfer is done;
//! * status report: bit 0 set when the report is written; the NAND status
//!   is the rest (`report >> 1`): the die is ready when bits 5 and 6 are
//!   both set, and an operation failed when bit 0 or 1 is;
//! * error information: word 0 bit 28 = the CRC of the page checked out;
//!   word 1 all ones = every ECC chunk of the page decoded.

/// The completion word says the transfer is done.
pub const fn transfer_done(completion: u32) -> bool {
    completion & 1 != 0
}

/// A decoded status report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DieStatus {
    /// Not written yet.
    Pending,
    /// Written; the die is still busy.
    Busy,
    /// Ready; `failed` if the last program or erase failed.
    Ready {
        /// The operation failed.
        failed: bool,
    },
}

/// Decodes a status report word.
pub const fn die_status(report: u32) -> DieStatus {
    if report & 1 == 0 {
        return DieStatus::Pending;
    }
    let s = report >> 1;
    if s & 0x60 != 0x60 {
        DieStatus::Busy
    } else {
        DieStatus::Ready { failed: s & 3 != 0 }
    }
}

/// Whether the error information says the page decoded.
pub const fn page_ok(word0: u32, word1: u32) -> bool {
    word0 & 1 << 28 != 0 && word1 == u32::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reports_decode() {
        assert_eq!(die_status(0), DieStatus::Pending);
        assert_eq!(die_status(0x40 << 1 | 1), DieStatus::Busy);
        assert_eq!(
            die_status(0x60 << 1 | 1),
            DieStatus::Ready { failed: false }
        );
        assert_eq!(die_status(0x61 << 1 | 1), DieStatus::Ready { failed: true });
        assert_eq!(die_status(0xE2 << 1 | 1), DieStatus::Ready { failed: true });
    }

    #[test]
    fn pages_decode_only_with_crc_and_every_chunk() {
        assert!(page_ok(1 << 28 | 0x0003_0000, u32::MAX));
        assert!(!page_ok(0, u32::MAX));
        assert!(!page_ok(1 << 28, 0xFFFF_FFFE));
        assert!(transfer_done(1) && !transfer_done(2));
    }
}
