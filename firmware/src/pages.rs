//! The device-DRAM index of the PAGES method, per stream: a summary of
//! every full token page (element-wise min ‖ max of its keys, `2·d`
//! fp16 values, as `attention::engine::summarize` computes it) and the
//! pinned attention-sink rows. Both are kept up to date as tokens are
//! appended, in slot order (the order the FTL stores them), so a decode
//! scores pages without reading flash. Cost: `4·d` bytes per full page
//! (1/32 of the K and V bytes at 32 tokens a page) plus `4·d` per sink;
//! with a key sketch of `b` bits (`Placement::sketch_bits`), `b·d/8`
//! bytes per token more (1/16 of the K bytes at b = 1) and a level table
//! of `2^b · 2d` bytes per full page (1/16 of its K bytes at b = 1 and
//! T = 32), packed as `attention::engine::sketch_pack` and
//! `sketch_levels` make them once the page is full (the rows of the page
//! being filled wait in DRAM until then).

use alloc::vec;
use alloc::vec::Vec;
use attention::engine as model;

/// One stream's index.
#[derive(Clone, Debug)]
pub(crate) struct PageIndex {
    /// Tokens per page.
    t: usize,
    d: usize,
    /// Slots pinned in DRAM (the sequence's sink tokens).
    sink: usize,
    /// K rows of the pinned slots, then their V rows.
    pub sink_k: Vec<u16>,
    pub sink_v: Vec<u16>,
    /// `min ‖ max` per full page, in page order.
    pub summaries: Vec<u16>,
    /// Mean key and mean value per full page (`d` each), and how many
    /// rows each mean covers (pinned rows are left out): the unread pages'
    /// stand-ins when PAGES fills.
    pub mean_k: Vec<u16>,
    pub mean_v: Vec<u16>,
    pub mean_rows: Vec<u32>,
    sum_k: Vec<i64>,
    sum_v: Vec<i64>,
    rows: usize,
    /// The running summary of the current page and whether it holds a row.
    cur: Vec<u16>,
    /// `cur` in fixed point (`model::fx`), for the comparisons.
    cur_fx: Vec<i32>,
    cur_rows: bool,
    /// Sketch bits (0: no sketch), the packed codes of every full page
    /// (`code_stride` bytes each), their level tables (`2^bits · d` each,
    /// `attention::engine::sketch_levels`) and the current page's key rows.
    bits: u32,
    pub codes: Vec<u8>,
    pub levels: Vec<u16>,
    cur_k: Vec<u16>,
    /// Slots appended so far.
    slots: usize,
}

impl PageIndex {
    /// An empty index of pages of `t` tokens, `sink` pinned slots and a
    /// key sketch of `bits` per element (0: none).
    pub fn new(t: usize, d: usize, sink: usize, bits: u32) -> Self {
        Self {
            t: t.max(1),
            d,
            sink,
            sink_k: Vec::new(),
            sink_v: Vec::new(),
            summaries: Vec::new(),
            mean_k: Vec::new(),
            mean_v: Vec::new(),
            mean_rows: Vec::new(),
            sum_k: vec![0; d],
            sum_v: vec![0; d],
            rows: 0,
            cur: vec![0; 2 * d],
            cur_fx: vec![0; 2 * d],
            cur_rows: false,
            bits,
            codes: Vec::new(),
            levels: Vec::new(),
            cur_k: Vec::new(),
            slots: 0,
        }
    }

    /// Sketch bits per key element (0: no sketch).
    pub fn sketch_bits(&self) -> u32 {
        self.bits
    }

    /// Elements of one full page's level table.
    pub fn level_stride(&self) -> usize {
        self.d << self.bits
    }

    /// Bytes of one full page's packed sketch.
    pub fn code_stride(&self) -> usize {
        (self.t * self.d * self.bits as usize).div_ceil(8)
    }

    /// Tokens per page.
    pub fn page_tokens(&self) -> usize {
        self.t
    }

    /// Pinned slots held (the first `min(sink, len)`).
    pub fn pinned(&self) -> usize {
        self.sink_k.len() / self.d.max(1)
    }

    /// The sink setting.
    pub fn sink(&self) -> usize {
        self.sink
    }

    /// Elements per key row.
    pub fn head_dim(&self) -> usize {
        self.d
    }

    /// The key rows of the page being filled (unpinned slots; kept only
    /// with a sketch).
    pub fn current_keys(&self) -> &[u16] {
        &self.cur_k
    }

    /// Appends rows in slot order (`n × d` each).
    pub fn push(&mut self, k: &[u16], v: &[u16]) {
        let d = self.d.max(1);
        for (kr, vr) in k.chunks_exact(d).zip(v.chunks_exact(d)) {
            if self.slots < self.sink {
                self.sink_k.extend_from_slice(kr);
                self.sink_v.extend_from_slice(vr);
            } else {
                self.add(kr, vr);
                if self.bits > 0 {
                    self.cur_k.extend_from_slice(kr);
                }
                self.rows += 1;
            }
            self.slots += 1;
            if self.slots.is_multiple_of(self.t) {
                // A page with no summarised row (all pinned) sums to zeros,
                // as `summarize` of no rows does.
                if !self.cur_rows {
                    self.cur.fill(0);
                }
                self.summaries.extend_from_slice(&self.cur);
                self.cur_rows = false;
                if self.bits > 0 {
                    let (mut page, mut page16) = (Vec::new(), Vec::new());
                    model::sketch_pack(&self.cur_k, &self.cur, self.d, self.bits, &mut page);
                    page.resize(self.code_stride(), 0);
                    self.codes.extend_from_slice(&page);
                    model::sketch_levels(&self.cur, self.d, self.bits, &mut page16);
                    self.levels.extend_from_slice(&page16);
                    self.cur_k.clear();
                }
                let mut mean = Vec::new();
                model::mean_from_sums(&self.sum_k, self.rows, &mut mean);
                self.mean_k.extend_from_slice(&mean);
                model::mean_from_sums(&self.sum_v, self.rows, &mut mean);
                self.mean_v.extend_from_slice(&mean);
                self.mean_rows.push(self.rows as u32);
                self.sum_k.fill(0);
                self.sum_v.fill(0);
                self.rows = 0;
            }
        }
    }

    /// One summarised row: `summarize`'s rule for the page's min ‖ max
    /// (the first row sets both, later rows replace an element only when
    /// strictly smaller / larger) and the running sums of the means. Each
    /// element is taken to fixed point once; the current min and max are
    /// kept in fixed point beside their bits.
    fn add(&mut self, k: &[u16], v: &[u16]) {
        let d = self.d;
        let first = !self.cur_rows;
        let (lo, hi) = self.cur.split_at_mut(d);
        let (lo_fx, hi_fx) = self.cur_fx.split_at_mut(d);
        if first {
            for (i, (&b, sk)) in k.iter().zip(self.sum_k.iter_mut()).enumerate() {
                let x = model::fx(b);
                (lo[i], lo_fx[i], hi[i], hi_fx[i]) = (b, x, b, x);
                *sk += i64::from(x);
            }
        } else {
            // Selects, not branches: the keys' order is random.
            for (i, (&b, sk)) in k.iter().zip(self.sum_k.iter_mut()).enumerate() {
                let x = model::fx(b);
                let below = x < lo_fx[i];
                lo[i] = if below { b } else { lo[i] };
                lo_fx[i] = if below { x } else { lo_fx[i] };
                let above = x > hi_fx[i];
                hi[i] = if above { b } else { hi[i] };
                hi_fx[i] = if above { x } else { hi_fx[i] };
                *sk += i64::from(x);
            }
        }
        for (sv, &b) in self.sum_v.iter_mut().zip(v) {
            *sv += i64::from(model::fx(b));
        }
        self.cur_rows = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attention::engine::f32_to_f16_bits;
    use attention::testdata::SplitMix64;

    #[test]
    fn summaries_match_the_engine_model_in_any_append_split() {
        let mut rng = SplitMix64::new(8);
        let (t, d, n, sink) = (8, 16, 53, 3);
        let k: Vec<u16> = (0..n * d).map(|_| f32_to_f16_bits(rng.normal())).collect();
        let v: Vec<u16> = (0..n * d).map(|_| f32_to_f16_bits(rng.normal())).collect();
        let mut want = Vec::new();
        let (mut want_codes, mut want_levels) = (Vec::new(), Vec::new());
        let mut one = Vec::new();
        for p in 0..n / t {
            let lo = (p * t).max(sink);
            let rows = &k[lo * d..(p + 1) * t * d];
            model::summarize(rows, d, &mut one);
            want.extend_from_slice(&one);
            let mut codes = Vec::new();
            model::sketch_pack(rows, &one, d, 2, &mut codes);
            codes.resize(t * d * 2 / 8, 0);
            want_codes.extend_from_slice(&codes);
            let mut levels = Vec::new();
            model::sketch_levels(&one, d, 2, &mut levels);
            want_levels.extend_from_slice(&levels);
        }
        for split in [1, 5, 53] {
            let mut ix = PageIndex::new(t, d, sink, 2);
            let mut at = 0;
            while at < n {
                let hi = (at + split).min(n);
                ix.push(&k[at * d..hi * d], &v[at * d..hi * d]);
                at = hi;
            }
            assert_eq!(ix.summaries, want, "split {split}");
            assert_eq!(ix.codes, want_codes, "split {split}");
            assert_eq!(ix.levels, want_levels, "split {split}");
            assert_eq!(ix.pinned(), sink);
            assert_eq!(ix.sink_k, k[..sink * d]);
            assert_eq!(ix.sink_v, v[..sink * d]);
        }
    }
}
