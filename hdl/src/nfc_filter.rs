//! `NfcFilter`: the filter in every NAND flash controller (InstInfer's
//! second loading step). A page streams in as 128-bit beats of [`LANES`] =
//! 8 fp16 elements, one beat per clock; the page is seen as
//! `rows × row_len` elements; a row is kept when its bit is set in the
//! 256-bit row mask, and of each kept row only the first `keep` elements go
//! on. Elements past `rows × row_len` are dropped.
//!
//! This is `firmware::hal::RowFilter::apply` in 16-bit elements
//! (`row_bytes = 2·row_len`, `keep_bytes = 2·keep`), including its
//! `keep.min(row_len)` clamp, for rows of a whole number of beats:
//! `row_len` must be a multiple of 8 elements (16 bytes; `RowFilter`
//! refuses other row sizes, and the firmware lays pages out so); a page
//! whose `row_len` is not keeps nothing.
//!
//! # Protocol
//!
//! * `mask_we` writes `mask_data` into word `mask_addr` of the *shadow*
//!   mask (bit `i` of word `w` is row `64·w + i`, as `RowFilter::mask`).
//!   The shadow can be loaded while the previous page still streams.
//! * `start` marks the first beat of a page (it may, and for back-to-back
//!   pages does, come with that beat's `in_valid`): it latches `rows`,
//!   `row_len`, `keep` and copies the shadow mask into the active one. A
//!   mask word written in the `start` cycle lands in the shadow for the next
//!   page.
//! * `in_valid`/`in_data`: one beat per clock (lane `j` = bits
//!   `16j..16j+15`, the element at byte offset `2j` of the beat), no
//!   back-pressure.
//! * `out_valid`/`out_count`/`out_data`: a beat with kept elements, one
//!   clock after it came in. The kept elements of a beat are always its
//!   first `out_count` lanes (1..=8: all of a kept row's beat, or the
//!   `keep` prefix's last part); lanes past `out_count` read 0.
//!
//! So a page of P elements takes P/8 clocks, back to back: 8 elements per
//! clock, 4.56 GB/s at 285 MHz (measured in the tests).
//!
//! # Geometry
//!
//! [`MAX_ROWS`] = 256 rows (`firmware`'s `MAX_FILTER_ROWS`), `row_len` and
//! `keep` up to 2^14 − 1 elements (a 16 KiB page is 8192 elements, 1024
//! beats).

use rust_hdl::prelude::*;

/// Rows a filter can address.
pub const MAX_ROWS: usize = 256;
/// Bits of `row_len` and `keep` (elements).
pub const LEN_BITS: usize = 14;
/// Bits of the beat column counter (`row_len / 8`).
pub const COL_BITS: usize = LEN_BITS - 3;
/// Bits of `rows` and the row counter (0..=256).
pub const ROW_BITS: usize = 9;
/// Elements per beat.
pub const LANES: usize = 8;

/// The NFC row filter; see the module docs.
#[derive(LogicBlock, Debug)]
pub struct NfcFilter {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Write a shadow mask word.
    pub mask_we: Signal<In, Bit>,
    /// Shadow mask word to write (rows 64·addr ..).
    pub mask_addr: Signal<In, Bits<2>>,
    /// Mask word (bit i keeps row 64·addr + i).
    pub mask_data: Signal<In, Bits<64>>,
    /// First beat of a page: latch geometry and mask.
    pub start: Signal<In, Bit>,
    /// Rows in the page layout (≤ 256), latched at `start`.
    pub rows: Signal<In, Bits<ROW_BITS>>,
    /// Elements per row (a multiple of 8), latched at `start`.
    pub row_len: Signal<In, Bits<LEN_BITS>>,
    /// Elements kept at the start of each kept row, latched at `start`.
    pub keep: Signal<In, Bits<LEN_BITS>>,
    /// A beat arrives.
    pub in_valid: Signal<In, Bit>,
    /// The beat: 8 elements, lane j in bits 16j..16j+15.
    pub in_data: Signal<In, Bits<128>>,
    /// A beat with kept elements leaves.
    pub out_valid: Signal<Out, Bit>,
    /// Kept elements in the beat (its first lanes), 1..=8.
    pub out_count: Signal<Out, Bits<4>>,
    /// The kept elements, lane j in bits 16j..; lanes past `out_count`
    /// are 0.
    pub out_data: Signal<Out, Bits<128>>,
    shadow: [DFF<Bits<64>>; 4],
    active: [DFF<Bits<64>>; 4],
    rows_r: DFF<Bits<ROW_BITS>>,
    len_r: DFF<Bits<COL_BITS>>,
    keep_r: DFF<Bits<LEN_BITS>>,
    row: DFF<Bits<ROW_BITS>>,
    col: DFF<Bits<COL_BITS>>,
    valid_r: DFF<Bit>,
    count_r: DFF<Bits<4>>,
    data_r: DFF<Bits<128>>,
    // `lanes[n]`: the first n lanes set.
    lanes: [Constant<Bits<128>>; LANES + 1],
    // The geometry, position and mask word in force for this beat
    // (`start` switches to the new page in the same clock).
    cur_rows: Signal<Local, Bits<ROW_BITS>>,
    cur_len: Signal<Local, Bits<COL_BITS>>,
    cur_keep: Signal<Local, Bits<15>>,
    cur_row: Signal<Local, Bits<ROW_BITS>>,
    cur_col: Signal<Local, Bits<COL_BITS>>,
    cur_word: Signal<Local, Bits<64>>,
    col_next: Signal<Local, Bits<COL_BITS>>,
    row_next: Signal<Local, Bits<ROW_BITS>>,
    // First element of this beat, and one past its last, in its row.
    first_el: Signal<Local, Bits<15>>,
    end_el: Signal<Local, Bits<15>>,
    // `keep − first_el` mod 16 (all `n_keep` needs when it is < 8).
    keep_left: Signal<Local, Bits<4>>,
    // `row_len` in beats; 0 (keep nothing) if it is not whole beats.
    len_beats: Signal<Local, Bits<COL_BITS>>,
    // Elements of this beat inside the keep prefix (0..=8).
    n_keep: Signal<Local, Bits<4>>,
    lane_mask: Signal<Local, Bits<128>>,
    row_kept: Signal<Local, Bit>,
}

impl Default for NfcFilter {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            mask_we: Default::default(),
            mask_addr: Default::default(),
            mask_data: Default::default(),
            start: Default::default(),
            rows: Default::default(),
            row_len: Default::default(),
            keep: Default::default(),
            in_valid: Default::default(),
            in_data: Default::default(),
            out_valid: Default::default(),
            out_count: Default::default(),
            out_data: Default::default(),
            shadow: Default::default(),
            active: Default::default(),
            rows_r: Default::default(),
            len_r: Default::default(),
            len_beats: Default::default(),
            keep_r: Default::default(),
            row: Default::default(),
            col: Default::default(),
            valid_r: Default::default(),
            count_r: Default::default(),
            data_r: Default::default(),
            lanes: std::array::from_fn(|n| {
                let ones: u128 = if n == LANES {
                    u128::MAX
                } else {
                    (1u128 << (16 * n)) - 1
                };
                Constant::new(ones.to_bits())
            }),
            cur_rows: Default::default(),
            cur_len: Default::default(),
            cur_keep: Default::default(),
            cur_row: Default::default(),
            cur_col: Default::default(),
            cur_word: Default::default(),
            col_next: Default::default(),
            row_next: Default::default(),
            first_el: Default::default(),
            end_el: Default::default(),
            keep_left: Default::default(),
            n_keep: Default::default(),
            lane_mask: Default::default(),
            row_kept: Default::default(),
        }
    }
}

impl Logic for NfcFilter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, rows_r, len_r, keep_r, row, col, valid_r, count_r, data_r
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
        // Geometry and position in force for the beat of this clock.
        self.cur_rows.next = self.rows_r.q.val();
        self.cur_len.next = self.len_r.q.val();
        self.cur_keep.next = bit_cast::<15, LEN_BITS>(self.keep_r.q.val());
        self.cur_row.next = self.row.q.val();
        self.cur_col.next = self.col.q.val();
        self.len_beats.next = 0.into();
        if self.row_len.val().get_bits::<3>(0).index() == 0 {
            self.len_beats.next = self.row_len.val().get_bits::<COL_BITS>(3);
        }
        if self.start.val() {
            self.cur_rows.next = self.rows.val();
            self.cur_len.next = self.len_beats.val();
            self.cur_keep.next = bit_cast::<15, LEN_BITS>(self.keep.val());
            self.cur_row.next = 0.into();
            self.cur_col.next = 0.into();
            self.rows_r.d.next = self.rows.val();
            self.len_r.d.next = self.len_beats.val();
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
        self.row_kept.next = self
            .cur_word
            .val()
            .get_bit(self.cur_row.val().get_bits::<6>(0).index())
            & (self.cur_row.val() < self.cur_rows.val())
            & (self.cur_col.val() < self.cur_len.val());
        // Elements of the beat inside the keep prefix.
        self.first_el.next = bit_cast::<15, COL_BITS>(self.cur_col.val()) << 3;
        self.end_el.next = self.first_el.val() + 8;
        self.keep_left.next =
            self.cur_keep.val().get_bits::<4>(0) - self.first_el.val().get_bits::<4>(0);
        if self.cur_keep.val() >= self.end_el.val() {
            self.n_keep.next = 8.into();
        } else if self.cur_keep.val() > self.first_el.val() {
            self.n_keep.next = self.keep_left.val().get_bits::<4>(0);
        } else {
            self.n_keep.next = 0.into();
        }
        // Advance the position.
        self.col_next.next = self.cur_col.val() + 1;
        self.row_next.next = self.cur_row.val() + 1;
        if self.in_valid.val() {
            if self.col_next.val() >= self.cur_len.val() {
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
        self.valid_r.d.next = self.in_valid.val() & self.row_kept.val() & (self.n_keep.val() != 0);
        self.count_r.d.next = self.n_keep.val();
        self.lane_mask.next = self.lanes[0].val();
        for n in 1..9 {
            if self.n_keep.val().index() == n {
                self.lane_mask.next = self.lanes[n].val();
            }
        }
        self.data_r.d.next = self.in_data.val() & self.lane_mask.val();
        self.out_valid.next = self.valid_r.q.val();
        self.out_count.next = self.count_r.q.val();
        self.out_data.next = self.data_r.q.val();
    }
}

/// One page for the filter: geometry, row mask and the elements (at least
/// `rows · row_len` of them, a whole number of beats; the tail past
/// `rows · row_len` is dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfcPage {
    /// Rows in the page layout (≤ 256).
    pub rows: u16,
    /// Elements per row (a multiple of 8).
    pub row_len: u16,
    /// Elements kept at the start of each kept row.
    pub keep: u16,
    /// Bit `i` of word `w` keeps row `64·w + i`.
    pub mask: [u64; 4],
    /// The page's elements; `len() % 8 == 0`.
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
    /// `in_data`, lane by lane.
    pub in_data: [u16; LANES],
}

/// Eight elements as one 128-bit beat (lane j in bits 16j..).
pub fn beat_bits(lanes: &[u16; LANES]) -> u128 {
    lanes
        .iter()
        .rev()
        .fold(0u128, |acc, &x| (acc << 16) | u128::from(x))
}

impl NfcCycle {
    /// The cycle's fields in the order of the Verilog testbench's vector
    /// lines (`tb/nfc_filter_tb.v`), hex.
    pub fn vector_line(&self) -> String {
        format!(
            "{:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:032x}",
            u8::from(self.mask_we),
            self.mask_addr,
            self.mask_data,
            u8::from(self.start),
            self.rows,
            self.row_len,
            self.keep,
            u8::from(self.in_valid),
            beat_bits(&self.in_data)
        )
    }
}

/// The clocks that stream `pages` back to back: page 0's mask is written
/// in four clocks before it, every later page's mask while the page before
/// it streams (idle clocks pad a page shorter than four beats), and each
/// page's `start` comes with its first beat. A page with no elements
/// still gets one `start` clock. Ends with two idle clocks so the last
/// beat drains out.
///
/// # Panics
///
/// If a page's element count is not a multiple of 8.
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
        assert!(page.data.len() % LANES == 0, "page of whole beats");
        let mut cycles: Vec<NfcCycle> = page
            .data
            .chunks_exact(LANES)
            .map(|beat| NfcCycle {
                in_valid: true,
                in_data: beat.try_into().expect("8 lanes"),
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
        self.in_data.next = beat_bits(&c.in_data).to_bits();
    }
}

/// What a run of the filter produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NfcRun {
    /// Every kept element, in order.
    pub out: Vec<u16>,
    /// The clock (0-based index into the stimulus) of each output beat.
    pub out_clock: Vec<usize>,
    /// The kept-element count of each output beat.
    pub out_count: Vec<u8>,
    /// Output beats whose lanes past `out_count` were not 0.
    pub dirty_lanes: usize,
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
            let n = uut.out_count.val().index();
            let beat = uut.out_data.val();
            for j in 0..LANES {
                let x = beat.get_bits::<16>(16 * j).to_u16();
                if j < n {
                    run.out.push(x);
                } else if x != 0 {
                    run.dirty_lanes += 1;
                }
            }
            run.out_clock.push(t);
            run.out_count.push(n as u8);
        }
    }
    run
}

#[cfg(test)]
mod tests;
