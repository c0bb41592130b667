//! `SketchRow`: the multiplexer in front of the GeMV lanes that decodes
//! PAGES's page sketches. A page's keys are kept as a packed low-bit
//! sketch: element i of row r has a `bits`-bit code c (bits = 1 or 2) and
//! the page has a level table of `2^bits · d` fp16 values (code-major,
//! `levels[c·d + i]`, from the page's `min ‖ max` summary). Decoding a row
//! is `out[i] = levels[c·d + i]`: a multiplexer per element, which this
//! block is, `N` elements per beat: `attention::engine::sketch_row`, bit
//! for bit. The decoded rows are ordinary key rows, so the GeMV lanes
//! behind it score them unchanged.
//!
//! # Design
//!
//! `N` lanes (the const generic; [`SYNTH_LANES`] = 8 is what `blocks()`
//! generates and synthesizes, matching the GeMV's lanes), each a 4-to-1
//! multiplexer of 16 bits steered by the element's 2-bit code (code bit 1
//! picks the pair, bit 0 the entry in it), registered once. A 1-bit
//! sketch drives codes 0 and 1 only, so `level2`/`level3` are never
//! picked and may hold anything. The fp16 values pass through untouched,
//! whatever they are (−0, NaN, ±Inf: the GeMV's decoder gives them their
//! meaning). No back-pressure, like the GeMV's key input it feeds.
//!
//! Whoever streams the sketch (a DMA from device DRAM) unpacks the codes
//! and presents each element's four table entries with it: the block
//! holds no table, so one instance serves pages of any d ≤ the GeMV's and
//! either width. A 4-bit sketch (which `SEQ_OPEN` also accepts) has 16
//! levels an element and is not decoded here: it would take a 16-to-1
//! multiplexer and a 4× wider level input.
//!
//! # Protocol
//!
//! * `in_valid`/`code[j]`/`level0[j]` … `level3[j]`: one beat, lane j =
//!   element `step·N + j` of row r: its code (`bits` wide, zero-extended
//!   to 2) and its four table entries `levels[c·d + i]`, c = 0..3.
//! * `out_valid`/`out_data[j]`: the beat's decoded elements, one clock
//!   after the beat came in (the inputs sampled at clock edge t are on the
//!   outputs after edge t); wired straight to the GeMV's
//!   `k_valid`/`k_data[j]`. Between beats the outputs hold the last one.
//!
//! # Cycles
//!
//! One beat per clock; [`LATENCY`] = 1: the GeMV takes a beat's decoded
//! elements the clock after the beat entered here, so a sketch row's
//! logit leaves one clock later than a key row's would. A row is ⌈d/N⌉
//! beats, so scoring a page of T sketched rows for one query head takes
//! T·⌈d/N⌉ clocks of GeMV input, as T key rows do (measured in the tests,
//! `sketch_row_into_gemv_gives_row_logits`).

use rust_hdl::prelude::*;

/// Lanes of the synthesized block (those of the GeMV it feeds).
pub const SYNTH_LANES: usize = crate::gemv::SYNTH_LANES;
/// Clocks the multiplexer adds in front of the GeMV.
pub const LATENCY: usize = 1;
/// Table entries per element: codes of up to 2 bits.
pub const LEVELS: usize = 4;

/// The sketch-row multiplexer with `N` lanes; see the module docs.
#[derive(LogicBlock, Debug)]
pub struct SketchRow<const N: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// A beat arrives.
    pub in_valid: Signal<In, Bit>,
    /// Lane j: the code of element `step·N + j` (a 1-bit code in bit 0).
    pub code: [Signal<In, Bits<2>>; N],
    /// Lane j: that element's level for code 0 (fp16 bits).
    pub level0: [Signal<In, Bits<16>>; N],
    /// Lane j: its level for code 1.
    pub level1: [Signal<In, Bits<16>>; N],
    /// Lane j: its level for code 2 (2-bit sketches only).
    pub level2: [Signal<In, Bits<16>>; N],
    /// Lane j: its level for code 3 (2-bit sketches only).
    pub level3: [Signal<In, Bits<16>>; N],
    /// The beat's decoded elements leave.
    pub out_valid: Signal<Out, Bit>,
    /// Lane j: the level its code picks.
    pub out_data: [Signal<Out, Bits<16>>; N],
    valid_r: DFF<Bit>,
    data_r: [DFF<Bits<16>>; N],
}

impl<const N: usize> Default for SketchRow<N> {
    fn default() -> Self {
        assert!(N >= 1, "at least one lane");
        Self {
            clock: Default::default(),
            in_valid: Default::default(),
            code: std::array::from_fn(|_| Default::default()),
            level0: std::array::from_fn(|_| Default::default()),
            level1: std::array::from_fn(|_| Default::default()),
            level2: std::array::from_fn(|_| Default::default()),
            level3: std::array::from_fn(|_| Default::default()),
            out_valid: Default::default(),
            out_data: std::array::from_fn(|_| Default::default()),
            valid_r: Default::default(),
            data_r: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const N: usize> Logic for SketchRow<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, valid_r);
        for j in 0..N {
            self.data_r[j].clock.next = self.clock.val();
            self.data_r[j].d.next = self.data_r[j].q.val();
        }
        self.valid_r.d.next = self.in_valid.val();
        if self.in_valid.val() {
            for j in 0..N {
                if self.code[j].val().get_bit(1) {
                    if self.code[j].val().get_bit(0) {
                        self.data_r[j].d.next = self.level3[j].val();
                    } else {
                        self.data_r[j].d.next = self.level2[j].val();
                    }
                } else if self.code[j].val().get_bit(0) {
                    self.data_r[j].d.next = self.level1[j].val();
                } else {
                    self.data_r[j].d.next = self.level0[j].val();
                }
            }
        }
        self.out_valid.next = self.valid_r.q.val();
        for j in 0..N {
            self.out_data[j].next = self.data_r[j].q.val();
        }
    }
}

/// One page's sketch as device DRAM holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SketchPage {
    /// Elements per row.
    pub d: usize,
    /// Code width: 1 or 2.
    pub bits: u32,
    /// Rows in the page.
    pub rows: usize,
    /// The packed codes: element `e = r·d + i` at bit `e·bits`,
    /// little-endian within a byte.
    pub codes: Vec<u8>,
    /// The level table, code-major: `levels[c·d + i]` (fp16 bits).
    pub levels: Vec<u16>,
}

impl SketchPage {
    /// The code of element i of row r, as `attention::engine::sketch_row`
    /// reads it (0 past the end of `codes`).
    pub fn code(&self, r: usize, i: usize) -> u8 {
        let mask = (1u8 << self.bits) - 1;
        let at = (r * self.d + i) * self.bits as usize;
        self.codes
            .get(at / 8)
            .map_or(0, |&b| (b >> (at % 8)) & mask)
    }
}

/// The inputs of one clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SketchCycle {
    /// `in_valid`.
    pub in_valid: bool,
    /// `code[j]`; missing lanes are 0.
    pub code: Vec<u8>,
    /// `level0[j]` … `level3[j]` (`level[c][j]`); missing lanes are 0.
    pub level: [Vec<u16>; LEVELS],
}

impl SketchCycle {
    /// The beat of elements `b·lanes ..` of row `r` of `page`: each
    /// element's code and, for c < 2^bits, its table entry
    /// `levels[c·d + i]` (0 past the table's end, as the model reads it);
    /// the entries a `bits`-wide code cannot pick, and every field of the
    /// lanes past d (code 0), take `pad`.
    ///
    /// # Panics
    ///
    /// If `page.bits` is not 1 or 2 (the block has 4 levels a lane).
    pub fn beat(page: &SketchPage, r: usize, b: usize, lanes: usize, pad: u16) -> Self {
        assert!(
            matches!(page.bits, 1 | 2),
            "SketchRow decodes 1- and 2-bit sketches, not {}",
            page.bits
        );
        let d = page.d;
        let idx = |j: usize| b * lanes + j;
        let at = |i: usize, c: usize| {
            if i < d && c < 1 << page.bits {
                page.levels.get(c * d + i).copied().unwrap_or(0)
            } else {
                pad
            }
        };
        Self {
            in_valid: true,
            code: (0..lanes)
                .map(|j| if idx(j) < d { page.code(r, idx(j)) } else { 0 })
                .collect(),
            level: std::array::from_fn(|c| (0..lanes).map(|j| at(idx(j), c)).collect()),
        }
    }

    /// The fields in the order of `tb/sketch_row_tb.v`'s vector lines, hex:
    /// `in_valid code level0[0] … level0[lanes−1] … level3[lanes−1]`,
    /// with `code` packed (lane j in bits 2j, 2j + 1).
    pub fn vector_line(&self, lanes: usize) -> String {
        let code = (0..lanes).fold(0u64, |acc, j| {
            acc | u64::from(self.code.get(j).copied().unwrap_or(0) & 3) << (2 * j)
        });
        let mut s = format!("{:x} {code:x}", u8::from(self.in_valid));
        for v in &self.level {
            for j in 0..lanes {
                s.push_str(&format!(" {:x}", v.get(j).copied().unwrap_or(0)));
            }
        }
        s
    }
}

/// The clocks that stream every row of `pages`, page after page, back to
/// back, ⌈d/lanes⌉ beats a row (one for d = 0), padded as
/// [`SketchCycle::beat`] says; an idle clock after every `gap`-th beat
/// when `gap > 0`; then [`LATENCY`] + 1 idle clocks.
pub fn stimulus(pages: &[SketchPage], lanes: usize, pad: u16, gap: usize) -> Vec<SketchCycle> {
    let mut out = Vec::new();
    let mut n = 0;
    for page in pages {
        for r in 0..page.rows {
            for b in 0..crate::gemv::beats(page.d, lanes) {
                out.push(SketchCycle::beat(page, r, b, lanes, pad));
                n += 1;
                if gap > 0 && n % gap == 0 {
                    out.push(SketchCycle::default());
                }
            }
        }
    }
    out.extend(std::iter::repeat_n(SketchCycle::default(), LATENCY + 1));
    out
}

/// Each streamed row's d, in the order [`stimulus`] streams them: the
/// `dims` of [`SketchRun::rows`].
pub fn row_dims(pages: &[SketchPage]) -> Vec<usize> {
    pages
        .iter()
        .flat_map(|p| std::iter::repeat_n(p.d, p.rows))
        .collect()
}

impl<const N: usize> SketchRow<N> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &SketchCycle) {
        self.in_valid.next = c.in_valid;
        let level = |k: usize, j: usize| u64::from(c.level[k].get(j).copied().unwrap_or(0)).into();
        for j in 0..N {
            self.code[j].next = u64::from(c.code.get(j).copied().unwrap_or(0) & 3).into();
            self.level0[j].next = level(0, j);
            self.level1[j].next = level(1, j);
            self.level2[j].next = level(2, j);
            self.level3[j].next = level(3, j);
        }
    }
}

/// What one run produced: every output beat and its clock (the rows of
/// a run of pages: [`row_dims`]).
pub type SketchRun = crate::sim::RowRun;

/// Runs `stim` through a fresh `SketchRow<N>` in rust-hdl.
pub fn run<const N: usize>(stim: &[SketchCycle]) -> SketchRun {
    let mut uut = SketchRow::<N>::default();
    crate::sim::prepare(&mut uut);
    let mut run = SketchRun::default();
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            run.beats
                .push((0..N).map(|j| uut.out_data[j].val().to_u16()).collect());
            run.out_clock.push(t);
        }
    }
    run
}

#[cfg(test)]
mod tests;
