//! Flash accounting: what a decode step costs a computational SSD, counted
//! the way the drive pays for it. The array reads whole pages (tR per page,
//! whatever the NAND-controller filter then keeps), and only the kept bytes
//! cross the NAND bus to the engine.
//!
//! [`FlashLayout`] is the drive's layout of one stream (one KV head of one
//! layer of one sequence), as the `ftl` crate lays it out:
//!
//! * token-indexed K pages and V pages of `T = page_bytes / (2·d)` tokens
//!   each, in time order; tokens beyond the last full page wait in a
//!   device-DRAM group buffer and cost no flash read;
//! * the dim-indexed copy of K: runs of `N = page_bytes / (2·m)` tokens
//!   (rounded down to a multiple of 8), one page per `m` dims of a run;
//!   the last partial run is in DRAM.
//!
//! (Under DRAM pressure the drive writes partial pages early; the model
//! leaves that out, so it is what the drive reads while its group buffers
//! fit.)
//!
//! [`ReadSet`] says what a method read of one KV head; [`FlashLayout::reads`]
//! turns it into pages and bus bytes, and [`FlashCount`] is a whole step
//! (every KV head of the layer) beside dense's at the same context.

use std::ops::{Add, AddAssign};

/// One decode step of one layer, every KV head: flash page reads and the
/// bytes the filter let through, and what dense reads at the same context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlashCount {
    /// Array page reads (token pages and dim pages).
    pub pages: u64,
    /// Dense's page reads at the same context.
    pub dense_pages: u64,
    /// Bytes over the NAND bus to the engine (after the filter).
    pub bus_bytes: u64,
    /// Dense's bus bytes at the same context.
    pub dense_bus_bytes: u64,
}

impl FlashCount {
    /// A step that read `reads` where dense reads `dense`.
    pub fn new(reads: Reads, dense: Reads) -> Self {
        Self {
            pages: reads.pages,
            dense_pages: dense.pages,
            bus_bytes: reads.bytes,
            dense_bus_bytes: dense.bytes,
        }
    }

    /// Page reads over dense's; `None` while dense reads no page (every
    /// token still in DRAM).
    pub fn page_fraction(&self) -> Option<f64> {
        (self.dense_pages > 0).then(|| self.pages as f64 / self.dense_pages as f64)
    }

    /// Bus bytes over dense's; `None` while dense moves none.
    pub fn bus_fraction(&self) -> Option<f64> {
        (self.dense_bus_bytes > 0).then(|| self.bus_bytes as f64 / self.dense_bus_bytes as f64)
    }
}

impl Add for FlashCount {
    type Output = FlashCount;
    fn add(self, o: FlashCount) -> FlashCount {
        FlashCount {
            pages: self.pages + o.pages,
            dense_pages: self.dense_pages + o.dense_pages,
            bus_bytes: self.bus_bytes + o.bus_bytes,
            dense_bus_bytes: self.dense_bus_bytes + o.dense_bus_bytes,
        }
    }
}

impl AddAssign for FlashCount {
    fn add_assign(&mut self, o: FlashCount) {
        *self = *self + o;
    }
}

/// Page reads and bus bytes of some reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    /// Array page reads.
    pub pages: u64,
    /// Bytes the filter let through.
    pub bytes: u64,
}

impl Add for Reads {
    type Output = Reads;
    fn add(self, o: Reads) -> Reads {
        Reads {
            pages: self.pages + o.pages,
            bytes: self.bytes + o.bytes,
        }
    }
}

impl AddAssign for Reads {
    fn add_assign(&mut self, o: Reads) {
        *self = *self + o;
    }
}

/// What a method read of one KV head, in the drive's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadSet {
    /// Every K and V token page (dense).
    All,
    /// The K and V rows of these tokens (ascending): local window, H2O's
    /// cache, block-sparse.
    Tokens(Vec<u32>),
    /// SparF, SparF+ and SparQ (the union of its query heads): these dims
    /// of every token from the dim-indexed K copy, then the K and V rows of
    /// these tokens.
    Sparse {
        /// Chosen dims, ascending.
        dims: Vec<u16>,
        /// Chosen tokens, ascending.
        tokens: Vec<u32>,
    },
    /// The oracle: every K page to score (a bound, not a budget), then the
    /// V rows of these tokens.
    AllKeys(Vec<u32>),
    /// The K and V pages chosen by the page selection, in its own slot
    /// order, read whole but for the first `pinned` slots (the attention
    /// sinks, held in device DRAM).
    Pages {
        /// Chosen full pages, ascending.
        pages: Vec<u32>,
        /// Tokens per page.
        page_tokens: usize,
        /// Slots pinned in DRAM.
        pinned: usize,
    },
}

/// The drive's layout of one stream (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashLayout {
    /// Flash page size, bytes.
    pub page_bytes: u32,
    /// `m`: dims per page of the dim-indexed K copy.
    pub dim_group: u8,
}

impl Default for FlashLayout {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl FlashLayout {
    /// The simulated drive's default: 4 KiB pages, one dim per dim page.
    pub const DEFAULT: FlashLayout = FlashLayout {
        page_bytes: 4096,
        dim_group: 1,
    };

    /// `T`: tokens of one head per token page (0 if a row exceeds a page).
    pub fn tokens_per_page(&self, d: usize) -> usize {
        (self.page_bytes as usize).checked_div(2 * d).unwrap_or(0)
    }

    /// `N`: tokens per dim page, a multiple of 8 (as the FTL's
    /// `Geometry::tokens_per_dim_page`).
    pub fn tokens_per_dim_page(&self) -> usize {
        (self.page_bytes as usize)
            .checked_div(2 * usize::from(self.dim_group))
            .unwrap_or(0)
            & !7
    }

    /// Dense's reads of one KV head of `s` tokens: every full K and V page,
    /// whole.
    pub fn dense(&self, s: usize, d: usize) -> Reads {
        self.reads(&ReadSet::All, s, d)
    }

    /// The reads of `set` on one KV head of `s` tokens of dimension `d`.
    pub fn reads(&self, set: &ReadSet, s: usize, d: usize) -> Reads {
        match set {
            ReadSet::All => self.all_rows(s, d) + self.all_rows(s, d),
            ReadSet::Tokens(tokens) => {
                let one = self.token_rows(tokens, s, d);
                one + one
            }
            ReadSet::Sparse { dims, tokens } => {
                let one = self.token_rows(tokens, s, d);
                self.dim_rows(dims, s) + one + one
            }
            ReadSet::AllKeys(tokens) => self.all_rows(s, d) + self.token_rows(tokens, s, d),
            ReadSet::Pages {
                pages,
                page_tokens,
                pinned,
            } => {
                let t = *page_tokens;
                let full = s.checked_div(t).unwrap_or(0);
                let mut one = Reads::default();
                for &p in pages {
                    let p = p as usize;
                    let rows = ((p + 1) * t).saturating_sub((p * t).max(*pinned));
                    if p < full && rows > 0 {
                        one.pages += 1;
                        one.bytes += (rows * 2 * d) as u64;
                    }
                }
                one + one
            }
        }
    }

    /// Every full page of one of K or V.
    fn all_rows(&self, s: usize, d: usize) -> Reads {
        let t = self.tokens_per_page(d);
        let full = s.checked_div(t).unwrap_or(0);
        Reads {
            pages: full as u64,
            bytes: (full * t * 2 * d) as u64,
        }
    }

    /// The rows of `tokens` (ascending) of one of K or V: the full pages
    /// holding one, filtered to those rows.
    fn token_rows(&self, tokens: &[u32], s: usize, d: usize) -> Reads {
        let t = self.tokens_per_page(d);
        let on_flash = s.checked_div(t).unwrap_or(0) * t;
        let mut r = Reads::default();
        let mut last_page = None;
        for &j in tokens {
            let j = j as usize;
            if j >= on_flash {
                continue;
            }
            if last_page != Some(j / t) {
                last_page = Some(j / t);
                r.pages += 1;
            }
            r.bytes += (2 * d) as u64;
        }
        r
    }

    /// The rows of `dims` (ascending) in the dim-indexed K copy: per full
    /// run, one page per dim group holding a chosen dim, filtered to the
    /// chosen dims' rows.
    fn dim_rows(&self, dims: &[u16], s: usize) -> Reads {
        let n = self.tokens_per_dim_page();
        let m = usize::from(self.dim_group).max(1);
        let runs = s.checked_div(n).unwrap_or(0);
        let mut groups = 0u64;
        let mut last = None;
        for &i in dims {
            let b = usize::from(i) / m;
            if last != Some(b) {
                last = Some(b);
                groups += 1;
            }
        }
        Reads {
            pages: groups * runs as u64,
            bytes: (dims.len() * runs * n * 2) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: usize = 64;

    #[test]
    fn page_sizes_follow_the_ftl() {
        let l = FlashLayout::DEFAULT;
        assert_eq!(l.tokens_per_page(64), 32);
        assert_eq!(l.tokens_per_page(128), 16);
        assert_eq!(l.tokens_per_dim_page(), 2048);
        let m4 = FlashLayout {
            page_bytes: 4096,
            dim_group: 4,
        };
        assert_eq!(m4.tokens_per_dim_page(), 512);
        let odd = FlashLayout {
            page_bytes: 4096,
            dim_group: 3,
        };
        // 682 rounded down to a multiple of 8.
        assert_eq!(odd.tokens_per_dim_page(), 680);
        assert_eq!(l.tokens_per_page(4096), 0);
        assert_eq!(l.dense(100, 4096), Reads::default());
    }

    #[test]
    fn dense_reads_every_full_k_and_v_page() {
        let l = FlashLayout::DEFAULT;
        let r = l.dense(1024, D);
        assert_eq!(r.pages, 64);
        assert_eq!(r.bytes, 64 * 4096);
        // The tail beyond the last full page is in DRAM.
        assert_eq!(l.dense(1024 + 31, D), r);
        assert_eq!(l.dense(31, D), Reads::default());
    }

    #[test]
    fn a_local_window_reads_its_pages() {
        let l = FlashLayout::DEFAULT;
        // The last 64 of 1024 tokens: 2 K pages and 2 V pages, whole.
        let r = l.reads(&ReadSet::Tokens((960..1024).collect()), 1024, D);
        assert_eq!(r.pages, 2 * 2);
        assert_eq!(r.bytes, 2 * 64 * 2 * D as u64);
        // Not aligned: 70 tokens straddle 3 pages each of K and V.
        let r = l.reads(&ReadSet::Tokens((954..1024).collect()), 1024, D);
        assert_eq!(r.pages, 2 * 3);
        // The same window over a DRAM tail of 10 tokens reads one page
        // fewer: its newest tokens are not on flash.
        let r = l.reads(&ReadSet::Tokens((970..1034).collect()), 1034, D);
        assert_eq!(r.pages, 2 * 2);
        assert_eq!(r.bytes, 2 * 54 * 2 * D as u64);
    }

    #[test]
    fn sparf_reads_token_pages_and_dim_pages() {
        let l = FlashLayout::DEFAULT;
        // Chosen tokens in 3 distinct pages (0, 5, 20), 4 tokens in all.
        let tokens = vec![1, 3, 170, 650];
        let set = ReadSet::Sparse {
            dims: vec![2, 9, 40],
            tokens: tokens.clone(),
        };
        // 1024 tokens: no full dim run yet (N = 2048), the dim copy is in DRAM.
        let r = l.reads(&set, 1024, D);
        assert_eq!(r.pages, 6);
        assert_eq!(r.bytes, 2 * 4 * 2 * D as u64);
        // 4096 tokens: 2 full runs × 3 dim pages on top.
        let r = l.reads(&set, 4096, D);
        assert_eq!(r.pages, 6 + 2 * 3);
        assert_eq!(r.bytes, 2 * 4 * 2 * D as u64 + 3 * 2 * 2048 * 2);
        // m = 4: dims 8 and 9 share a dim page; 2, 9 and 40 are in
        // three.
        let m4 = FlashLayout {
            page_bytes: 4096,
            dim_group: 4,
        };
        let shared = ReadSet::Sparse {
            dims: vec![8, 9],
            tokens,
        };
        // N = 512: 2 full runs of 1024 tokens, one group each.
        assert_eq!(m4.reads(&shared, 1024, D).pages, 6 + 2);
        assert_eq!(m4.reads(&set, 1024, D).pages, 6 + 2 * 3);
    }

    #[test]
    fn the_oracle_reads_all_keys_and_chosen_values() {
        let l = FlashLayout::DEFAULT;
        let r = l.reads(&ReadSet::AllKeys(vec![0, 1, 100]), 1024, D);
        assert_eq!(r.pages, 32 + 2);
        assert_eq!(r.bytes, 32 * 4096 + 3 * 2 * D as u64);
    }

    #[test]
    fn pages_reads_whole_chosen_pages() {
        let l = FlashLayout::DEFAULT;
        let set = |pages: Vec<u32>, pinned| ReadSet::Pages {
            pages,
            page_tokens: 32,
            pinned,
        };
        let r = l.reads(&set(vec![0, 3, 9, 31], 0), 1024, D);
        assert_eq!(r.pages, 8);
        assert_eq!(r.bytes, 8 * 4096);
        // 4 sinks pinned in DRAM: page 0 loses 4 rows; a page beyond the
        // full ones (the DRAM tail) is not read.
        let r = l.reads(&set(vec![0, 3, 9, 32], 4), 1030, D);
        assert_eq!(r.pages, 6);
        assert_eq!(r.bytes, 2 * (28 + 32 + 32) * 2 * D as u64);
        // Page 0 all pinned: no read.
        let r = l.reads(&set(vec![0, 3, 9, 31], 32), 1024, D);
        assert_eq!(r.pages, 6);
        let r = l.reads(&set(vec![0, 3, 9, 31], 0), 1024, D);
        let c = FlashCount::new(r, l.dense(1024, D));
        assert_eq!(c.page_fraction(), Some(8.0 / 64.0));
        assert_eq!(c.bus_fraction(), Some(8.0 / 64.0));
    }

    #[test]
    fn fractions_need_a_dense_page() {
        let c = FlashCount::new(Reads::default(), Reads::default());
        assert_eq!(c.page_fraction(), None);
        assert_eq!(c.bus_fraction(), None);
        let a = FlashCount {
            pages: 1,
            dense_pages: 4,
            bus_bytes: 10,
            dense_bus_bytes: 40,
        };
        let mut b = a;
        b += a;
        assert_eq!(b, a + a);
        assert_eq!(b.page_fraction(), Some(0.25));
        assert_eq!(b.bus_fraction(), Some(0.25));
    }
}
