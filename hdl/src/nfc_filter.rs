//! `NfcFilter`: the filter in every NAND flash controller (InstInfer's
//! second loading step). A page streams in as 16-bit elements, one per
//! clock; the page is seen as `rows × row_len` elements; a row is kept when
//! its bit is set in the 256-bit row mask, and of each kept row only the
//! first `keep` elements go on. Elements past `rows × row_len` are dropped.
//!
//! This is `firmware::hal::RowFilter::apply` in 16-bit elements
//! (`row_bytes = 2·row_len`, `keep_bytes = 2·keep`), including its
//! `keep.min(row_len)` clamp: `keep > row_len` keeps whole rows.
//!
//! # Protocol
//!
//! * `mask_we` writes `mask_data` into word `mask_addr` of the *shadow*
//!   mask (bit `i` of word `w` is row `64·w + i`, as `RowFilter::mask`).
//!   The shadow can be loaded while the previous page still streams.
//! * `start` marks the first element of a page (it may, and for back-to-back
//!   pages does, come with that element's `in_valid`): it latches `rows`,
//!   `row_len`, `keep` and copies the shadow mask into the active one. A
//!   mask word written in the `start` cycle lands in the shadow for the next
//!   page.
//! * `in_valid`/`in_data`: one element per clock, no back-pressure.
//! * `out_valid`/`out_data`: the kept elements, in order, one clock after
//!   they came in.
//!
//! So a page of P elements takes P clocks, back to back: 1 element/clock
//! (measured in the tests).
//!
//! # Geometry
//!
//! [`MAX_ROWS`] = 256 rows (`firmware`'s `MAX_FILTER_ROWS`), `row_len` and
//! `keep` up to 2^14 − 1 elements (a 16 KiB page is 8192 elements).
//! `row_len = 0` keeps nothing.

use rust_hdl::prelude::*;

/// Rows a filter can address.
pub const MAX_ROWS: usize = 256;
/// Bits of `row_len`, `keep` and the column counter.
pub const LEN_BITS: usize = 14;
/// Bits of `rows` and the row counter (0..=256).
pub const ROW_BITS: usize = 9;

/// The NFC row filter; see the module docs.
#[derive(LogicBlock, Default, Debug)]
pub struct NfcFilter {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Write a shadow mask word.
    pub mask_we: Signal<In, Bit>,
    /// Shadow mask word to write (rows 64·addr ..).
    pub mask_addr: Signal<In, Bits<2>>,
    /// Mask word (bit i keeps row 64·addr + i).
    pub mask_data: Signal<In, Bits<64>>,
    /// First element of a page: latch geometry and mask.
    pub start: Signal<In, Bit>,
    /// Rows in the page layout (≤ 256), latched at `start`.
    pub rows: Signal<In, Bits<ROW_BITS>>,
    /// Elements per row, latched at `start`.
    pub row_len: Signal<In, Bits<LEN_BITS>>,
    /// Elements kept at the start of each kept row, latched at `start`.
    pub keep: Signal<In, Bits<LEN_BITS>>,
    /// An element arrives.
    pub in_valid: Signal<In, Bit>,
    /// The element.
    pub in_data: Signal<In, Bits<16>>,
    /// A kept element leaves.
    pub out_valid: Signal<Out, Bit>,
    /// The kept element.
    pub out_data: Signal<Out, Bits<16>>,
    shadow: [DFF<Bits<64>>; 4],
    active: [DFF<Bits<64>>; 4],
    rows_r: DFF<Bits<ROW_BITS>>,
    len_r: DFF<Bits<LEN_BITS>>,
    keep_r: DFF<Bits<LEN_BITS>>,
    row: DFF<Bits<ROW_BITS>>,
    col: DFF<Bits<LEN_BITS>>,
    valid_r: DFF<Bit>,
    data_r: DFF<Bits<16>>,
    // The geometry, position and mask word in force for this element
    // (`start` switches to the new page in the same clock).
    cur_rows: Signal<Local, Bits<ROW_BITS>>,
    cur_len: Signal<Local, Bits<LEN_BITS>>,
    cur_keep: Signal<Local, Bits<LEN_BITS>>,
    cur_row: Signal<Local, Bits<ROW_BITS>>,
    cur_col: Signal<Local, Bits<LEN_BITS>>,
    cur_word: Signal<Local, Bits<64>>,
    col_next: Signal<Local, Bits<LEN_BITS>>,
    row_next: Signal<Local, Bits<ROW_BITS>>,
    kept: Signal<Local, Bit>,
}

impl Logic for NfcFilter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, rows_r, len_r, keep_r, row, col, valid_r, data_r
        );
        for w in 0..4 {
            self.shadow[w].clock.next = self.clock.val();
            self.shadow[w].d.next = self.shadow[w].q.val();
            self.active[w].clock.next = self.clock.val();
            self.active[w].d.next = self.active[w].q.val();
        }
        // Shadow mask writes.
        for w in 0..4 {
            if self.mask_we.val() & (self.mask_addr.val().index() == w) {
                self.shadow[w].d.next = self.mask_data.val();
            }
        }
        // Geometry and position in force for the element of this clock.
        self.cur_rows.next = self.rows_r.q.val();
        self.cur_len.next = self.len_r.q.val();
        self.cur_keep.next = self.keep_r.q.val();
        self.cur_row.next = self.row.q.val();
        self.cur_col.next = self.col.q.val();
        if self.start.val() {
            self.cur_rows.next = self.rows.val();
            self.cur_len.next = self.row_len.val();
            self.cur_keep.next = self.keep.val();
            self.cur_row.next = 0.into();
            self.cur_col.next = 0.into();
            self.rows_r.d.next = self.rows.val();
            self.len_r.d.next = self.row_len.val();
            self.keep_r.d.next = self.keep.val();
            self.row.d.next = 0.into();
            self.col.d.next = 0.into();
            for w in 0..4 {
                self.active[w].d.next = self.shadow[w].q.val();
            }
        }
        // The mask word of the current row (the new page's at `start`).
        self.cur_word.next = self.active[0].q.val();
        for w in 0..4 {
            if self.cur_row.val().get_bits::<2>(6).index() == w {
                if self.start.val() {
                    self.cur_word.next = self.shadow[w].q.val();
                } else {
                    self.cur_word.next = self.active[w].q.val();
                }
            }
        }
        self.kept.next = self
            .cur_word
            .val()
            .get_bit(self.cur_row.val().get_bits::<6>(0).index())
            & (self.cur_row.val() < self.cur_rows.val())
            & (self.cur_col.val() < self.cur_keep.val());
        // Advance the position.
        self.col_next.next = self.cur_col.val() + 1;
        self.row_next.next = self.cur_row.val() + 1;
        if self.in_valid.val() {
            if self.col_next.val() == self.cur_len.val() {
                self.col.d.next = 0.into();
                // Saturate past the last row: the page tail is dropped.
                if self.cur_row.val() < self.cur_rows.val() {
                    self.row.d.next = self.row_next.val();
                } else {
                    self.row.d.next = self.cur_row.val();
                }
            } else {
                self.col.d.next = self.col_next.val();
                self.row.d.next = self.cur_row.val();
            }
        }
        self.valid_r.d.next = self.in_valid.val() & self.kept.val();
        self.data_r.d.next = self.in_data.val();
        self.out_valid.next = self.valid_r.q.val();
        self.out_data.next = self.data_r.q.val();
    }
}

/// One page for the filter: geometry, row mask and the elements (at least
/// `rows · row_len` of them; the tail past that is dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfcPage {
    /// Rows in the page layout (≤ 256).
    pub rows: u16,
    /// Elements per row.
    pub row_len: u16,
    /// Elements kept at the start of each kept row.
    pub keep: u16,
    /// Bit `i` of word `w` keeps row `64·w + i`.
    pub mask: [u64; 4],
    /// The page's elements.
    pub data: Vec<u16>,
}

/// The inputs of one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NfcCycle {
    /// `mask_we`.
    pub mask_we: bool,
    /// `mask_addr`.
    pub mask_addr: u8,
    /// `mask_data`.
    pub mask_data: u64,
    /// `start`.
    pub start: bool,
    /// `rows`.
    pub rows: u16,
    /// `row_len`.
    pub row_len: u16,
    /// `keep`.
    pub keep: u16,
    /// `in_valid`.
    pub in_valid: bool,
    /// `in_data`.
    pub in_data: u16,
}

impl NfcCycle {
    /// The cycle's fields in the order of the Verilog testbench's vector
    /// lines (`tb/nfc_filter_tb.v`), hex.
    pub fn vector_line(&self) -> String {
        format!(
            "{:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x}",
            u8::from(self.mask_we),
            self.mask_addr,
            self.mask_data,
            u8::from(self.start),
            self.rows,
            self.row_len,
            self.keep,
            u8::from(self.in_valid),
            self.in_data
        )
    }
}

/// The clocks that stream `pages` back to back: page 0's mask is written
/// in four clocks before it, every later page's mask while the page before
/// it streams (idle clocks pad a page shorter than four elements), and each
/// page's `start` comes with its first element. A page with no elements
/// still gets one `start` clock. Ends with two idle clocks so the last
/// element drains out.
pub fn stimulus(pages: &[NfcPage]) -> Vec<NfcCycle> {
    let mask_writes = |mask: &[u64; 4]| -> Vec<NfcCycle> {
        (0..4u8)
            .map(|w| NfcCycle {
                mask_we: true,
                mask_addr: w,
                mask_data: mask[usize::from(w)],
                ..NfcCycle::default()
            })
            .collect()
    };
    let mut out = Vec::new();
    if let Some(first) = pages.first() {
        out.extend(mask_writes(&first.mask));
    }
    for (p, page) in pages.iter().enumerate() {
        let mut cycles: Vec<NfcCycle> = page
            .data
            .iter()
            .map(|&x| NfcCycle {
                in_valid: true,
                in_data: x,
                ..NfcCycle::default()
            })
            .collect();
        if cycles.is_empty() {
            cycles.push(NfcCycle::default());
        }
        cycles[0].start = true;
        cycles[0].rows = page.rows;
        cycles[0].row_len = page.row_len;
        cycles[0].keep = page.keep;
        if let Some(next) = pages.get(p + 1) {
            while cycles.len() < 4 {
                cycles.push(NfcCycle::default());
            }
            for (c, w) in cycles.iter_mut().zip(mask_writes(&next.mask)) {
                c.mask_we = w.mask_we;
                c.mask_addr = w.mask_addr;
                c.mask_data = w.mask_data;
            }
        }
        out.extend(cycles);
    }
    out.extend([NfcCycle::default(); 2]);
    out
}

impl NfcFilter {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &NfcCycle) {
        self.mask_we.next = c.mask_we;
        self.mask_addr.next = u64::from(c.mask_addr).into();
        self.mask_data.next = c.mask_data.into();
        self.start.next = c.start;
        self.rows.next = u64::from(c.rows).into();
        self.row_len.next = u64::from(c.row_len).into();
        self.keep.next = u64::from(c.keep).into();
        self.in_valid.next = c.in_valid;
        self.in_data.next = u64::from(c.in_data).into();
    }
}

/// What a run of the filter produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NfcRun {
    /// Every kept element, in order.
    pub out: Vec<u16>,
    /// The clock (0-based index into the stimulus) of each kept element.
    pub out_clock: Vec<usize>,
}

/// Runs `stim` through a fresh [`NfcFilter`] in rust-hdl (one [`tick`] per
/// clock, outputs sampled after the edge).
///
/// [`tick`]: crate::sim::tick
pub fn run(stim: &[NfcCycle]) -> NfcRun {
    let mut uut = NfcFilter::default();
    crate::sim::prepare(&mut uut);
    let mut run = NfcRun::default();
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            run.out.push(uut.out_data.val().to_u16());
            run.out_clock.push(t);
        }
    }
    run
}

#[cfg(test)]
mod tests;
