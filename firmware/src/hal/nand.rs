//! The flash side: NAND flash controllers (NFCs) with their filters.
//!
//! Operations are split-phase: [`Nand::submit`] queues a command on the
//! die's controller and [`Nand::poll`] returns completions in the order they
//! finish. A read carries a [`RowFilter`]: the NFC streams the page past the
//! filter and hands only the kept bytes on to the engine (InstInfer's
//! second loading step).

use ftl::{BlockAddr, Ppa};

/// Rows a filter can address (a 16 KiB page of d = 32 tokens).
pub const MAX_FILTER_ROWS: usize = 256;

/// Bytes the NFC filter moves per clock (8 fp16 elements): rows are a whole
/// number of beats (`hdl::nfc_filter`).
pub const FILTER_BEAT_BYTES: usize = 16;

/// The NFC filter of one read: the page seen as `rows × row_bytes`; rows
/// whose bit is set in `mask` are kept, and of each kept row only the first
/// `keep_bytes` bytes (the valid tokens of a partial dim page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowFilter {
    /// Rows in the page layout.
    pub rows: u16,
    /// Bytes per row.
    pub row_bytes: u16,
    /// Bytes kept at the start of each kept row (`<= row_bytes`).
    pub keep_bytes: u16,
    /// Bit `i` keeps row `i`.
    pub mask: [u64; MAX_FILTER_ROWS / 64],
}

impl RowFilter {
    /// A filter with no row kept yet.
    pub const fn none(rows: u16, row_bytes: u16) -> Self {
        Self {
            rows,
            row_bytes,
            keep_bytes: row_bytes,
            mask: [0; MAX_FILTER_ROWS / 64],
        }
    }

    /// Keeps the first `n` rows whole.
    pub fn first_rows(rows: u16, row_bytes: u16, n: u16) -> Self {
        let mut f = Self::none(rows, row_bytes);
        for i in 0..n.min(rows) {
            f.keep(i);
        }
        f
    }

    /// Marks row `i` as kept (ignored beyond `rows`).
    pub fn keep(&mut self, i: u16) {
        if i < self.rows && usize::from(i) < MAX_FILTER_ROWS {
            self.mask[usize::from(i) / 64] |= 1 << (i % 64);
        }
    }

    /// Whether row `i` is kept.
    pub fn keeps(&self, i: u16) -> bool {
        usize::from(i) < MAX_FILTER_ROWS
            && i < self.rows
            && self.mask[usize::from(i) / 64] & (1 << (i % 64)) != 0
    }

    /// Number of kept rows.
    pub fn kept_rows(&self) -> u32 {
        (0..self.rows).filter(|&i| self.keeps(i)).count() as u32
    }

    /// Bytes the filter hands on.
    pub fn kept_bytes(&self) -> usize {
        self.kept_rows() as usize * usize::from(self.keep_bytes.min(self.row_bytes))
    }

    /// Whether the filter fits a page of `page_size` bytes: at most
    /// [`MAX_FILTER_ROWS`] rows of whole [`FILTER_BEAT_BYTES`] beats.
    pub fn fits(&self, page_size: usize) -> bool {
        usize::from(self.rows) <= MAX_FILTER_ROWS
            && self.keep_bytes <= self.row_bytes
            && usize::from(self.row_bytes) % FILTER_BEAT_BYTES == 0
            && usize::from(self.rows) * usize::from(self.row_bytes) <= page_size
    }

    /// The filter function itself: copies the kept bytes of `page` into
    /// `out` in row order and returns how many. `out` must hold
    /// [`Self::kept_bytes`]; returns `None` if the filter does not fit.
    pub fn apply(&self, page: &[u8], out: &mut [u8]) -> Option<usize> {
        if !self.fits(page.len()) || out.len() < self.kept_bytes() {
            return None;
        }
        let row = usize::from(self.row_bytes);
        let keep = usize::from(self.keep_bytes);
        let mut n = 0;
        for i in 0..self.rows {
            if self.keeps(i) {
                let start = usize::from(i) * row;
                out[n..n + keep].copy_from_slice(&page[start..start + keep]);
                n += keep;
            }
        }
        Some(n)
    }
}

/// One flash command.
#[derive(Clone, Copy, Debug)]
pub enum NandCmd<'a> {
    /// Read a page through the NFC filter.
    Read {
        /// Page to read.
        ppa: Ppa,
        /// What the NFC keeps.
        filter: RowFilter,
    },
    /// Program a whole page.
    Program {
        /// Page to program (the next free page of its block).
        ppa: Ppa,
        /// Exactly one page of data.
        data: &'a [u8],
    },
    /// Erase a block.
    Erase {
        /// Block to erase.
        block: BlockAddr,
    },
}

/// How a flash command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NandStatus {
    /// Done.
    Ok,
    /// The read failed ECC: its data must not be used.
    Uncorrectable,
    /// The program failed: the block must be retired.
    ProgramFailed,
    /// The erase failed: the block must be retired.
    EraseFailed,
}

/// Completion of a command submitted with `tag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandDone {
    /// The caller's tag.
    pub tag: u32,
    /// Outcome.
    pub status: NandStatus,
    /// Bytes placed in the poll buffer (reads only).
    pub bytes: usize,
}

/// The NAND flash controllers of a board.
pub trait Nand {
    /// Controller-level failure (bad address, misuse); media failures are
    /// reported as a [`NandStatus`] instead.
    type NandError: core::fmt::Debug;
    /// Queue a command; `WouldBlock` when the controller queue is full (poll
    /// first).
    fn submit(&mut self, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), Self::NandError>;
    /// Next completion; a read's kept bytes are copied into `out` (which
    /// must hold a page). `WouldBlock` when nothing is outstanding.
    fn poll(&mut self, out: &mut [u8]) -> nb::Result<NandDone, Self::NandError>;
    /// Commands submitted and not yet polled.
    fn in_flight(&self) -> usize;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_keeps_selected_rows_and_prefix() {
        let page: [u8; 64] = core::array::from_fn(|i| i as u8);
        let mut f = RowFilter::none(4, 16);
        f.keep(1);
        f.keep(3);
        f.keep_bytes = 2;
        let mut out = [0u8; 64];
        assert_eq!(f.kept_bytes(), 4);
        assert_eq!(f.apply(&page, &mut out), Some(4));
        assert_eq!(&out[..4], &[16, 17, 48, 49]);
    }

    #[test]
    fn filter_rejects_oversized_layout() {
        let f = RowFilter::first_rows(8, 16, 8);
        let mut out = [0u8; 256];
        assert_eq!(f.apply(&[0u8; 64], &mut out), None);
    }

    #[test]
    fn filter_rejects_rows_of_partial_beats() {
        let f = RowFilter::first_rows(2, 12, 2);
        assert!(!f.fits(4096));
        let mut out = [0u8; 64];
        assert_eq!(f.apply(&[0u8; 64], &mut out), None);
        assert!(RowFilter::first_rows(2, 32, 2).fits(64));
    }
}
