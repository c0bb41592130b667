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
        self.valid_mask().iter().map(|w| w.count_ones()).sum()
    }

    /// `mask` with the bits of rows at or past `rows` cleared (`keep`
    /// never sets them, but `mask` is a public field).
    fn valid_mask(&self) -> [u64; MAX_FILTER_ROWS / 64] {
        let rows = usize::from(self.rows).min(MAX_FILTER_ROWS);
        let mut m = self.mask;
        for (w, word) in m.iter_mut().enumerate() {
            let below = rows.saturating_sub(w * 64);
            if below < 64 {
                *word &= (1u64 << below) - 1;
            }
        }
        m
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
        let mut n = 0;
        self.spans(|start, len| {
            out[n..n + len].copy_from_slice(&page[start..start + len]);
            n += len;
        });
        Some(n)
    }

    /// Calls `f(start, len)` for each span of bytes the filter keeps, in
    /// page order: a run of whole kept rows is one span (the token pages of
    /// SparF's exact pass keep whole rows, often side by side), a row cut
    /// short by `keep_bytes` is one span each. The caller checks
    /// [`Self::fits`].
    pub fn spans(&self, mut f: impl FnMut(usize, usize)) {
        let row = usize::from(self.row_bytes);
        let keep = usize::from(self.keep_bytes);
        // Runs of kept rows, found a mask word at a time.
        let mask = self.valid_mask();
        let mut first = seek(&mask, 0, true);
        while first < MAX_FILTER_ROWS {
            let end = seek(&mask, first, false);
            let start = first * row;
            if keep == row {
                f(start, (end - first) * row);
            } else {
                for at in (start..end * row).step_by(row) {
                    f(at, keep);
                }
            }
            first = seek(&mask, end, true);
        }
    }
}

/// The first row at or after `from` whose bit in `mask` is `set`
/// ([`MAX_FILTER_ROWS`] when there is none).
fn seek(mask: &[u64; MAX_FILTER_ROWS / 64], from: usize, set: bool) -> usize {
    let word = |w: usize| if set { mask[w] } else { !mask[w] };
    let mut w = from / 64;
    if w >= mask.len() {
        return MAX_FILTER_ROWS;
    }
    let mut bits = word(w) & (u64::MAX << (from % 64));
    while bits == 0 {
        w += 1;
        if w == mask.len() {
            return MAX_FILTER_ROWS;
        }
        bits = word(w);
    }
    w * 64 + bits.trailing_zeros() as usize
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
    /// A completion that has already happened, without waiting for one:
    /// `WouldBlock` when none has (the firmware has other work to do
    /// first). Boards whose `poll` never waits use it as it is; a board
    /// in virtual time, whose `poll` moves its clock to the next
    /// completion, hands back only those due by its clock.
    fn poll_done(&mut self, out: &mut [u8]) -> nb::Result<NandDone, Self::NandError> {
        self.poll(out)
    }
    /// Commands submitted and not yet polled.
    fn in_flight(&self) -> usize;
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

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

    /// Runs copied at once give a row-by-row copy's bytes, for masks with
    /// runs across word boundaries, whole words, row counts that end
    /// inside a word and stray bits past `rows`.
    #[test]
    fn filter_runs_equal_a_row_by_row_copy() {
        let mut rng = attention::testdata::SplitMix64::new(0x2545_F491_4F6C_DD1D);
        let mut next = move || rng.next_u64();
        for case in 0..400 {
            let rows = [1u16, 63, 64, 65, 127, 128, 200, 256][case % 8];
            let row_bytes = 16u16;
            let mut f = RowFilter::none(rows, row_bytes);
            f.mask = match case % 5 {
                0 => [u64::MAX; 4],
                1 => [next(), next(), next(), next()],
                2 => [next() | next(), next() | next(), 0, u64::MAX],
                3 => [u64::MAX << 60, 0xF, u64::MAX, 1],
                _ => [next() & next(), u64::MAX, next() & next(), next()],
            };
            f.keep_bytes = if case % 3 == 0 { 2 } else { row_bytes };
            let page: Vec<u8> = (0..usize::from(rows) * 16)
                .map(|i| (i * 7 + i / 256) as u8)
                .collect();
            let mut want = Vec::new();
            for r in 0..rows {
                if f.keeps(r) {
                    let at = usize::from(r) * 16;
                    want.extend_from_slice(&page[at..at + usize::from(f.keep_bytes)]);
                }
            }
            let mut got = vec![0u8; f.kept_bytes()];
            assert_eq!(f.apply(&page, &mut got), Some(want.len()), "case {case}");
            assert_eq!(got, want, "case {case}");
            assert_eq!(
                f.kept_rows() as usize,
                (0..rows).filter(|&r| f.keeps(r)).count()
            );
        }
    }
}
