//! Physical Region Page (PRP) lists: walking them on the device, building
//! them on the host. No allocation on either side.
//!
//! Rules (NVMe, memory page size fixed at [`PAGE`] = 4096):
//! - PRP1 points at the first data byte and may carry an offset into its
//!   page, which must be dword-aligned.
//! - If the transfer ends in the second page, PRP2 is that page's address
//!   (page-aligned).
//! - Otherwise PRP2 points at a PRP list (qword-aligned; an offset into the
//!   list page is allowed). A list holds page-aligned data page addresses as
//!   little-endian u64 entries; when more entries remain than fit in the rest
//!   of the list page, its last entry instead points to the next list.
//!
//! Device side: [`PrpWalker`] (pull, one callback per call) or [`entries`]
//! (iterator) yields `(host_addr, chunk_len)` for each data page, reading PRP
//! list entries through a caller callback in small batches, and never reads
//! an entry beyond the ones the transfer needs.
//!
//! Host side: [`layout`] sizes a transfer, [`build`] produces PRP1/PRP2 and
//! hands each list page (always page-aligned) to a callback.

use crate::ProtoError;

/// Memory page size (CC.MPS = 0).
pub const PAGE: usize = 4096;
/// u64 entries in one PRP list page.
pub const ENTRIES_PER_LIST: usize = PAGE / 8;
/// Default upper bound on one transfer. The device additionally enforces its
/// own `mdts_bytes` before walking.
pub const MAX_LEN: usize = 256 << 20;

const BATCH: usize = 32;
const PAGE_U64: u64 = PAGE as u64;

/// Device-side PRP walker.
///
/// Each call of [`PrpWalker::next_segment`] yields one data page chunk
/// `(host_addr, chunk_len)`; chunks are in transfer order, sum to the
/// transfer length, and only the first may start inside a page.
#[derive(Debug, Clone)]
pub struct PrpWalker {
    prp1: u64,
    prp2: u64,
    len: usize,
    /// Bytes yielded so far.
    done: usize,
    /// Segments yielded so far.
    index: usize,
    /// Next list entry not yet fetched.
    list_addr: u64,
    /// Entries left to fetch in the current list page from `list_addr`.
    slots: usize,
    buf: [u64; BATCH],
    pos: usize,
    fill: usize,
    failed: bool,
}

impl PrpWalker {
    /// Walker for a transfer of `len` bytes, with length limit [`MAX_LEN`].
    pub fn new(prp1: u64, prp2: u64, len: usize) -> Result<Self, ProtoError> {
        Self::with_limit(prp1, prp2, len, MAX_LEN)
    }

    /// Walker for a transfer of `len` bytes, `len` in `1..=max_len`.
    ///
    /// Checks PRP1 (dword-aligned) and PRP2 (page-aligned data page, or
    /// qword-aligned list pointer, or ignored) up front.
    pub fn with_limit(
        prp1: u64,
        prp2: u64,
        len: usize,
        max_len: usize,
    ) -> Result<Self, ProtoError> {
        if len == 0 || len > max_len {
            return Err(ProtoError::PrpLength { len, max: max_len });
        }
        if prp1 & 3 != 0 {
            return Err(ProtoError::PrpOffset { addr: prp1 });
        }
        let first = first_chunk(prp1, len);
        let later_pages = (len - first).div_ceil(PAGE);
        match later_pages {
            0 => {}
            1 if !prp2.is_multiple_of(PAGE_U64) => {
                return Err(ProtoError::PrpOffset { addr: prp2 });
            }
            1 => {}
            _ if prp2 & 7 != 0 => return Err(ProtoError::PrpOffset { addr: prp2 }),
            _ => {}
        }
        Ok(PrpWalker {
            prp1,
            prp2,
            len,
            done: 0,
            index: 0,
            list_addr: prp2,
            slots: slots_from(prp2),
            buf: [0; BATCH],
            pos: 0,
            fill: 0,
            failed: false,
        })
    }

    /// Total transfer length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a walker never describes an empty transfer.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Bytes not yet yielded.
    pub fn remaining(&self) -> usize {
        self.len - self.done
    }

    /// The next chunk, `None` when the transfer is complete (or after an
    /// error). `read_list(addr, buf)` must fill `buf` with the little-endian
    /// u64 entries stored in host memory at `addr`, `addr + 8`, ...; it is
    /// only called when a chunk beyond the second is needed.
    pub fn next_segment<E: From<ProtoError>>(
        &mut self,
        read_list: impl FnMut(u64, &mut [u64]) -> Result<(), E>,
    ) -> Result<Option<(u64, usize)>, E> {
        if self.failed || self.done == self.len {
            return Ok(None);
        }
        match self.step(read_list) {
            Ok(seg) => Ok(Some(seg)),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn step<E: From<ProtoError>>(
        &mut self,
        mut read_list: impl FnMut(u64, &mut [u64]) -> Result<(), E>,
    ) -> Result<(u64, usize), E> {
        let addr = if self.index == 0 {
            let chunk = first_chunk(self.prp1, self.len);
            return Ok(self.emit(self.prp1, chunk));
        } else if self.index == 1 && self.len - first_chunk(self.prp1, self.len) <= PAGE {
            self.prp2
        } else {
            loop {
                let entry = self.next_entry(&mut read_list)?;
                let pages_left = self.remaining().div_ceil(PAGE);
                let last_slot = self.pos == self.fill && self.slots == 0;
                if last_slot && pages_left > 1 {
                    // Chain pointer to the next list page: page aligned, so
                    // that every list page yields data entries. A pointer
                    // into the middle of a page could chain to its own last
                    // slot forever without yielding one.
                    if entry % PAGE_U64 != 0 {
                        return Err(ProtoError::PrpOffset { addr: entry }.into());
                    }
                    self.list_addr = entry;
                    self.slots = slots_from(entry);
                    continue;
                }
                break entry;
            }
        };
        if addr % PAGE_U64 != 0 {
            return Err(ProtoError::PrpOffset { addr }.into());
        }
        let chunk = self.remaining().min(PAGE);
        Ok(self.emit(addr, chunk))
    }

    fn emit(&mut self, addr: u64, chunk: usize) -> (u64, usize) {
        self.done += chunk;
        self.index += 1;
        (addr, chunk)
    }

    fn next_entry<E: From<ProtoError>>(
        &mut self,
        read_list: &mut impl FnMut(u64, &mut [u64]) -> Result<(), E>,
    ) -> Result<u64, E> {
        if self.pos == self.fill {
            let pages_left = self.remaining().div_ceil(PAGE);
            let n = self.slots.min(pages_left).min(BATCH);
            read_list(self.list_addr, &mut self.buf[..n])?;
            self.list_addr = self.list_addr.wrapping_add(8 * n as u64);
            self.slots -= n;
            self.pos = 0;
            self.fill = n;
        }
        let e = self.buf[self.pos];
        self.pos += 1;
        Ok(e)
    }
}

fn first_chunk(prp1: u64, len: usize) -> usize {
    let off = (prp1 % PAGE_U64) as usize;
    len.min(PAGE - off)
}

fn slots_from(list_addr: u64) -> usize {
    (PAGE - (list_addr % PAGE_U64) as usize) / 8
}

/// Iterator form of [`PrpWalker`]; see [`entries`].
#[derive(Debug)]
pub struct Entries<F> {
    walker: PrpWalker,
    read_list: F,
}

impl<F, E> Iterator for Entries<F>
where
    F: FnMut(u64, &mut [u64]) -> Result<(), E>,
    E: From<ProtoError>,
{
    type Item = Result<(u64, usize), E>;

    fn next(&mut self) -> Option<Self::Item> {
        self.walker.next_segment(&mut self.read_list).transpose()
    }
}

/// Iterates the `(host_addr, chunk_len)` chunks of a transfer (limit
/// [`MAX_LEN`]); stops after the first error.
pub fn entries<F, E>(
    prp1: u64,
    prp2: u64,
    len: usize,
    read_list: F,
) -> Result<Entries<F>, ProtoError>
where
    F: FnMut(u64, &mut [u64]) -> Result<(), E>,
    E: From<ProtoError>,
{
    Ok(Entries {
        walker: PrpWalker::new(prp1, prp2, len)?,
        read_list,
    })
}

/// Sizes of a transfer's PRP description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrpPlan {
    /// Data pages touched (PRP1's page included).
    pub pages: usize,
    /// PRP list pages needed (0 when PRP1/PRP2 suffice).
    pub list_pages: usize,
}

/// Plans a transfer of `len` bytes starting `first_offset % PAGE` bytes into
/// its first page.
pub const fn layout(len: usize, first_offset: usize) -> PrpPlan {
    if len == 0 {
        return PrpPlan {
            pages: 0,
            list_pages: 0,
        };
    }
    let pages = (first_offset % PAGE + len).div_ceil(PAGE);
    let list_pages = if pages <= 2 {
        0
    } else {
        // L pages hold 511 * (L - 1) + 512 entries.
        let entries = pages - 1;
        let l = (entries - 1).div_ceil(ENTRIES_PER_LIST - 1);
        if l == 0 { 1 } else { l }
    };
    PrpPlan { pages, list_pages }
}

/// PRP1 and PRP2 of a built transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrpPair {
    /// PRP entry 1 (first data page + offset).
    pub prp1: u64,
    /// PRP entry 2 (0, second data page, or first list page).
    pub prp2: u64,
}

/// Host side: describes a transfer of `len` bytes whose first byte is
/// `first_offset` (dword-aligned, `< PAGE`) into `data_pages[0]`.
///
/// `data_pages` must hold exactly `layout(len, first_offset).pages`
/// page-aligned addresses, `list_pages` at least `.list_pages` page-aligned
/// addresses (the first ones are used, in order). Each list page's content is
/// handed to `write_list(list_page_addr, entries)` (unused entries zero),
/// which stores it little-endian in host memory.
pub fn build<E: From<ProtoError>>(
    len: usize,
    first_offset: usize,
    data_pages: &[u64],
    list_pages: &[u64],
    mut write_list: impl FnMut(u64, &[u64; ENTRIES_PER_LIST]) -> Result<(), E>,
) -> Result<PrpPair, E> {
    if len == 0 {
        return Err(ProtoError::PrpLength {
            len,
            max: usize::MAX,
        }
        .into());
    }
    if first_offset >= PAGE || !first_offset.is_multiple_of(4) {
        return Err(ProtoError::PrpOffset {
            addr: first_offset as u64,
        }
        .into());
    }
    let plan = layout(len, first_offset);
    if data_pages.len() != plan.pages {
        return Err(ProtoError::Length {
            expected: plan.pages,
            actual: data_pages.len(),
        }
        .into());
    }
    if list_pages.len() < plan.list_pages {
        return Err(ProtoError::Length {
            expected: plan.list_pages,
            actual: list_pages.len(),
        }
        .into());
    }
    let lists = &list_pages[..plan.list_pages];
    if let Some(&bad) = data_pages.iter().chain(lists).find(|&&a| a % PAGE_U64 != 0) {
        return Err(ProtoError::PrpOffset { addr: bad }.into());
    }
    let prp1 = data_pages[0] + first_offset as u64;
    let prp2 = match plan.pages {
        1 => 0,
        2 => data_pages[1],
        _ => lists[0],
    };
    if lists.is_empty() {
        return Ok(PrpPair { prp1, prp2 });
    }
    let mut rest = &data_pages[1..];
    for (i, &list) in lists.iter().enumerate() {
        let mut page = [0u64; ENTRIES_PER_LIST];
        if i + 1 == lists.len() {
            page[..rest.len()].copy_from_slice(rest);
            rest = &[];
        } else {
            let n = ENTRIES_PER_LIST - 1;
            page[..n].copy_from_slice(&rest[..n]);
            page[n] = lists[i + 1];
            rest = &rest[n..];
        }
        write_list(list, &page)?;
    }
    debug_assert!(rest.is_empty());
    Ok(PrpPair { prp1, prp2 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::vec::Vec;

    /// Fake host memory holding u64 entries by byte address.
    #[derive(Default)]
    struct Mem {
        words: HashMap<u64, u64>,
        reads: usize,
    }

    impl Mem {
        fn write_page(
            &mut self,
            addr: u64,
            page: &[u64; ENTRIES_PER_LIST],
        ) -> Result<(), ProtoError> {
            for (i, &e) in page.iter().enumerate() {
                self.words.insert(addr + 8 * i as u64, e);
            }
            Ok(())
        }
        fn read(&mut self, addr: u64, buf: &mut [u64]) -> Result<(), ProtoError> {
            self.reads += 1;
            for (i, e) in buf.iter_mut().enumerate() {
                *e = *self
                    .words
                    .get(&(addr + 8 * i as u64))
                    .ok_or(ProtoError::InvalidField {
                        field: "unmapped",
                        value: addr,
                    })?;
            }
            Ok(())
        }
    }

    fn walk(
        m: &mut Mem,
        prp1: u64,
        prp2: u64,
        len: usize,
    ) -> Result<Vec<(u64, usize)>, ProtoError> {
        let mut w = PrpWalker::new(prp1, prp2, len)?;
        let mut v = Vec::new();
        while let Some(s) = w.next_segment(|a, b| m.read(a, b))? {
            v.push(s);
        }
        Ok(v)
    }

    fn expected(pages: &[u64], off: usize, len: usize) -> Vec<(u64, usize)> {
        let mut left = len;
        pages
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let o = if i == 0 { off } else { 0 };
                let c = left.min(PAGE - o);
                left -= c;
                (p + o as u64, c)
            })
            .collect()
    }

    type Segs = Vec<(u64, usize)>;

    fn round_trip(len: usize, off: usize, seed: u64) -> (Segs, Segs, usize) {
        let plan = layout(len, off);
        // Scattered, distinct, page-aligned addresses.
        let data: Vec<u64> = (0..plan.pages as u64)
            .map(|i| {
                (0x1_0000_0000 + ((i * 7919 + seed) % 1_000_003) * 2 + i * 3_000_000) * PAGE_U64
            })
            .collect();
        let lists: Vec<u64> = (0..plan.list_pages as u64)
            .map(|i| (0x10 + i * 3 + seed % 5) * PAGE_U64)
            .collect();
        let mut m = Mem::default();
        let pair = build(len, off, &data, &lists, |a, p| m.write_page(a, p)).unwrap();
        let got = walk(&mut m, pair.prp1, pair.prp2, len).unwrap();
        (got, expected(&data, off, len), m.reads)
    }

    #[test]
    fn layout_counts() {
        assert_eq!(
            layout(0, 0),
            PrpPlan {
                pages: 0,
                list_pages: 0
            }
        );
        assert_eq!(
            layout(1, 0),
            PrpPlan {
                pages: 1,
                list_pages: 0
            }
        );
        assert_eq!(
            layout(4096, 0),
            PrpPlan {
                pages: 1,
                list_pages: 0
            }
        );
        assert_eq!(
            layout(4096, 4),
            PrpPlan {
                pages: 2,
                list_pages: 0
            }
        );
        assert_eq!(
            layout(8192, 0),
            PrpPlan {
                pages: 2,
                list_pages: 0
            }
        );
        assert_eq!(
            layout(8193, 0),
            PrpPlan {
                pages: 3,
                list_pages: 1
            }
        );
        // 513 pages = 512 list entries: exactly one full list.
        assert_eq!(
            layout(513 * PAGE, 0),
            PrpPlan {
                pages: 513,
                list_pages: 1
            }
        );
        assert_eq!(
            layout(514 * PAGE, 0),
            PrpPlan {
                pages: 514,
                list_pages: 2
            }
        );
        assert_eq!(layout(1 + 511 * 2 + 1, 0).list_pages, 0);
        // 1 + 511 + 512 pages: two lists, the first chained.
        assert_eq!(layout(1024 * PAGE, 0).list_pages, 2);
        assert_eq!(layout(1025 * PAGE, 0).list_pages, 3);
    }

    #[test]
    fn single_and_double_page() {
        let mut m = Mem::default();
        assert_eq!(
            walk(&mut m, 0x1000 + 0x10, 0xdead, 100).unwrap(),
            [(0x1010, 100)]
        );
        assert_eq!(
            walk(&mut m, 0x1000 + 0xF00, 0x9000, 0x200).unwrap(),
            [(0x1F00, 0x100), (0x9000, 0x100)]
        );
        assert_eq!(m.reads, 0);
    }

    #[test]
    fn chained_lists_round_trip() {
        for pages in [3usize, 512, 513, 514, 1024, 1025, 1536, 2000] {
            for off in [0usize, 4, 4092] {
                let len = pages * PAGE - off;
                let (got, want, _) = round_trip(len, off, 3);
                assert_eq!(got, want, "pages {pages} off {off}");
            }
        }
    }

    #[test]
    fn list_pointer_with_offset() {
        // PRP2 points 16 bytes before the end of a list page: two entries
        // fit, the second chains to the next list page.
        let mut m = Mem::default();
        let l0 = 0x5000 + PAGE_U64 - 16;
        m.words.insert(l0, 0xA000);
        m.words.insert(l0 + 8, 0x7000);
        m.words.insert(0x7000, 0xB000);
        m.words.insert(0x7008, 0xC000);
        let segs = walk(&mut m, 0x1000, l0, 4 * PAGE).unwrap();
        assert_eq!(
            segs,
            [
                (0x1000, PAGE),
                (0xA000, PAGE),
                (0xB000, PAGE),
                (0xC000, PAGE)
            ]
        );
    }

    /// Regression (found by the `nvme_wire` fuzz target): a chain pointer
    /// to the last slot of a page, pointing at itself, made the walker loop
    /// forever without yielding a segment. Chain pointers must be page
    /// aligned now; this one is refused.
    #[test]
    fn a_chain_to_its_own_last_slot_is_refused_not_followed_forever() {
        let mut m = Mem::default();
        let last = 0x5000 + PAGE_U64 - 8;
        m.words.insert(last, last);
        let r = walk(&mut m, 0x1000, last, 8 * PAGE);
        assert!(
            matches!(r, Err(ProtoError::PrpOffset { addr }) if addr == last),
            "{r:?}"
        );
        assert!(m.reads < 4, "{} list reads", m.reads);
    }

    #[test]
    fn reads_only_needed_entries() {
        // 3 pages: list has 2 entries; unmapped memory after them must not be read.
        let mut m = Mem::default();
        m.words.insert(0x8000, 0x2000);
        m.words.insert(0x8008, 0x3000);
        assert_eq!(walk(&mut m, 0x1000, 0x8000, 3 * PAGE).unwrap().len(), 3);
        assert_eq!(m.reads, 1);
    }

    #[test]
    fn rejects_bad_entries() {
        let mut m = Mem::default();
        assert_eq!(
            PrpWalker::new(0x1000, 0, 0).unwrap_err(),
            ProtoError::PrpLength {
                len: 0,
                max: MAX_LEN
            }
        );
        assert!(matches!(
            PrpWalker::new(0x1000, 0, MAX_LEN + 1),
            Err(ProtoError::PrpLength { .. })
        ));
        assert!(matches!(
            PrpWalker::with_limit(0x1000, 0, 9, 8),
            Err(ProtoError::PrpLength { .. })
        ));
        assert_eq!(
            PrpWalker::new(0x1002, 0, 8).unwrap_err(),
            ProtoError::PrpOffset { addr: 0x1002 }
        );
        // Second data page not page-aligned.
        assert_eq!(
            PrpWalker::new(0x1000, 0x2010, 8192).unwrap_err(),
            ProtoError::PrpOffset { addr: 0x2010 }
        );
        // List pointer not qword-aligned.
        assert_eq!(
            PrpWalker::new(0x1000, 0x2004, 3 * PAGE).unwrap_err(),
            ProtoError::PrpOffset { addr: 0x2004 }
        );
        // List entry not page-aligned.
        m.words.insert(0x8000, 0x2000);
        m.words.insert(0x8008, 0x3008);
        assert_eq!(
            walk(&mut m, 0x1000, 0x8000, 3 * PAGE).unwrap_err(),
            ProtoError::PrpOffset { addr: 0x3008 }
        );
        // Misaligned chain pointer.
        let l0 = 0x5000 + PAGE_U64 - 8;
        m.words.insert(l0, 0x7001);
        assert_eq!(
            walk(&mut m, 0x1000, l0, 4 * PAGE).unwrap_err(),
            ProtoError::PrpOffset { addr: 0x7001 }
        );
    }

    #[test]
    fn callback_error_stops_iteration() {
        let mut it = entries(0x1000, 0x8000, 3 * PAGE, |_, _| {
            Err::<(), _>(ProtoError::InvalidField {
                field: "dma",
                value: 0,
            })
        })
        .unwrap();
        assert_eq!(it.next(), Some(Ok((0x1000, PAGE))));
        assert!(matches!(
            it.next(),
            Some(Err(ProtoError::InvalidField { .. }))
        ));
        assert_eq!(it.next(), None);
    }

    #[test]
    fn build_rejects_bad_input() {
        let nop = |_: u64, _: &[u64; ENTRIES_PER_LIST]| Ok::<(), ProtoError>(());
        assert!(matches!(
            build(0, 0, &[], &[], nop),
            Err(ProtoError::PrpLength { .. })
        ));
        assert!(matches!(
            build(8, 2, &[0x1000], &[], nop),
            Err(ProtoError::PrpOffset { .. })
        ));
        assert!(matches!(
            build(8, 4096, &[0x1000], &[], nop),
            Err(ProtoError::PrpOffset { .. })
        ));
        assert!(matches!(
            build(8, 0, &[0x1000, 0x2000], &[], nop),
            Err(ProtoError::Length { .. })
        ));
        assert!(matches!(
            build(8, 0, &[0x1001], &[], nop),
            Err(ProtoError::PrpOffset { .. })
        ));
        assert!(matches!(
            build(3 * PAGE, 0, &[0x1000, 0x2000, 0x3000], &[], nop),
            Err(ProtoError::Length { .. })
        ));
        assert!(matches!(
            build(3 * PAGE, 0, &[0x1000, 0x2000, 0x3000], &[0x8008], nop),
            Err(ProtoError::PrpOffset { addr: 0x8008 })
        ));
    }

    proptest! {
        #[test]
        fn build_walk_round_trip(len in 1usize..=4 << 20, off_dw in 0usize..1024, seed in 0u64..1000) {
            let off = off_dw * 4;
            let (got, want, _) = round_trip(len, off, seed);
            prop_assert_eq!(got.iter().map(|s| s.1).sum::<usize>(), len);
            prop_assert_eq!(got, want);
        }
    }
}
