//! Block-batched writing: turning group buffers into page programs.
//!
//! Every page goes to its placement die (placement.rs) and takes the next
//! page of that die's open block, whichever stream it belongs to: pages of
//! many heads share a block while one head's consecutive groups land on
//! different channels.
//!
//! Re-writing a group / run that already has a partial page:
//! * the old page's program is still queued → the image is updated in
//!   place (no new page; `pages_coalesced`);
//! * otherwise a new page is programmed with only the new tokens and a
//!   `Merge` naming the old page; the old page becomes invalid
//!   (`pages_superseded`).

use alloc::vec;
use alloc::vec::Vec;

use crate::address::Ppa;
use crate::error::FtlError;
use crate::ftl::Ftl;
use crate::group_buffer::{DimTail, put_dim_rows, put_token_rows};
use crate::op::{Merge, MergeLayout};
use crate::placement::{dim_die, token_die};
use crate::stream::{Kind, StreamId};

impl Ftl {
    /// Queues a program, taking a merge reference on its source block.
    pub(crate) fn queue_program(&mut self, ppa: Ppa, data: Vec<u8>, merge: Option<Merge>) {
        self.add_ref(merge);
        self.ops.push_program(ppa, data, merge);
        self.counters.pages_programmed += 1;
    }

    /// Persists token rows `rows` (`[n][hd]`) of group `g` at row `first`.
    /// Returns whether a new program was queued.
    fn write_token_page(
        &mut self,
        id: StreamId,
        kind: Kind,
        g: u32,
        first: u32,
        rows: &[u16],
    ) -> Result<bool, FtlError> {
        let st = self.stream(id)?;
        let hd = st.hd();
        let old = st.map(kind).get(g);
        if let Some(old) = old
            && let Some((data, _)) = self.ops.pending_mut(old)
        {
            put_token_rows(data, first as usize, hd, rows);
            self.counters.pages_coalesced += 1;
            return Ok(false);
        }
        let ppa = self.take_page(token_die(&self.geo, id, kind, g), id)?;
        let mut data = vec![0u8; self.geo.page_size as usize];
        put_token_rows(&mut data, first as usize, hd, rows);
        let merge = old.map(|from| Merge {
            from,
            layout: MergeLayout::TokenRows {
                tokens: first,
                row_bytes: hd as u32 * 2,
            },
        });
        self.queue_program(ppa, data, merge);
        self.stream_mut(id)?.map_mut(kind).set(g, ppa);
        if let Some(old) = old {
            self.counters.pages_superseded += 1;
            self.invalidate_page(old);
        }
        Ok(true)
    }

    /// Persists the dim tail of run `run` at token `first`, one page per
    /// dim block. Returns the number of new programs.
    fn write_dim_pages(
        &mut self,
        id: StreamId,
        run: u32,
        first: u32,
        tail: &DimTail,
    ) -> Result<u32, FtlError> {
        let st = self.stream(id)?;
        let (n, m) = (st.tpd, u32::from(st.shape.dim_group));
        let blocks = st.shape.dim_blocks();
        let mut new = 0;
        for b in 0..blocks {
            let old = self.stream(id)?.dim_map.get(b, run);
            let put = |page: &mut [u8]| {
                put_dim_rows(
                    page,
                    n as usize,
                    m as usize,
                    b as usize,
                    first as usize,
                    tail,
                )
            };
            if let Some(old) = old
                && let Some((data, _)) = self.ops.pending_mut(old)
            {
                put(data);
                self.counters.pages_coalesced += 1;
                continue;
            }
            let ppa = self.take_page(dim_die(&self.geo, id, blocks, b, run), id)?;
            let mut data = vec![0u8; self.geo.page_size as usize];
            put(&mut data);
            let merge = old.map(|from| Merge {
                from,
                layout: MergeLayout::DimRows {
                    rows: m,
                    stride: n,
                    tokens: first,
                },
            });
            self.queue_program(ppa, data, merge);
            self.stream_mut(id)?.dim_map.set(b, run, ppa);
            if let Some(old) = old {
                self.counters.pages_superseded += 1;
                self.invalidate_page(old);
            }
            new += 1;
        }
        Ok(new)
    }

    /// Writes the K and V tails of group `g`. `full`: the group is complete
    /// (tails are emptied, keeping their capacity for the next group);
    /// otherwise a budget-forced partial page (tails freed).
    pub(crate) fn persist_tokens(
        &mut self,
        id: StreamId,
        g: u32,
        full: bool,
    ) -> Result<(), FtlError> {
        let st = self.stream_mut(id)?;
        let first = st.tok_persisted;
        let mut k = core::mem::take(&mut st.k_tail);
        let mut v = core::mem::take(&mut st.v_tail);
        let held = (k.len() / st.hd().max(1)) as u32;
        let kn = self.write_token_page(id, Kind::K, g, first, &k)?;
        let vn = self.write_token_page(id, Kind::V, g, first, &v)?;
        if !full {
            self.counters.partial_pages_written += u64::from(kn) + u64::from(vn);
        }
        let st = self.stream_mut(id)?;
        if full {
            k.clear();
            v.clear();
            st.k_tail = k;
            st.v_tail = v;
            st.tok_persisted = 0;
        } else {
            st.tok_persisted += held;
        }
        Ok(())
    }

    /// Writes the dim tail of run `run` (see `persist_tokens` for `full`).
    pub(crate) fn persist_dim(
        &mut self,
        id: StreamId,
        run: u32,
        full: bool,
    ) -> Result<(), FtlError> {
        let st = self.stream_mut(id)?;
        let first = st.dim_persisted;
        let mut tail = core::mem::take(&mut st.dim_tail);
        let held = tail.held();
        let new = self.write_dim_pages(id, run, first, &tail)?;
        if !full {
            self.counters.partial_pages_written += u64::from(new);
        }
        let st = self.stream_mut(id)?;
        if full {
            tail.clear();
            st.dim_tail = tail;
            st.dim_persisted = 0;
        } else {
            st.dim_persisted += held as u32;
        }
        Ok(())
    }

    /// Appends `n` tokens (`k`, `v`, and `k_dim` for the dim-indexed copy:
    /// `[n][hd]`, already validated and planned) to the tails, writing every
    /// page that fills up.
    pub(crate) fn append_tokens(
        &mut self,
        id: StreamId,
        k: &[u16],
        v: &[u16],
        k_dim: &[u16],
    ) -> Result<(), FtlError> {
        let st = self.stream(id)?;
        let (hd, tpp, tpd, len0) = (st.hd(), st.tpp, st.tpd, st.len);
        let n = (k.len() / hd) as u32;
        let before = st.tok_bytes() + st.dim_bytes();

        // Token pages: fill the current group, write it when complete.
        let (mut pos, mut i) = (len0, 0u32);
        while i < n {
            let o = pos % tpp;
            let c = (n - i).min(tpp - o);
            let range = i as usize * hd..(i + c) as usize * hd;
            let st = self.stream_mut(id)?;
            st.k_tail
                .extend_from_slice(k.get(range.clone()).unwrap_or(&[]));
            st.v_tail.extend_from_slice(v.get(range).unwrap_or(&[]));
            pos += c;
            i += c;
            if o + c == tpp {
                self.persist_tokens(id, (pos - 1) / tpp, true)?;
            }
        }

        // Dim pages: transpose into the run's tail, write when complete.
        let (mut pos, mut i) = (len0, 0u32);
        while i < n {
            let o = pos % tpd;
            let c = (n - i).min(tpd - o);
            let st = self.stream_mut(id)?;
            let chunk = k_dim
                .get(i as usize * hd..(i + c) as usize * hd)
                .unwrap_or(&[]);
            st.dim_tail.push(hd, chunk);
            pos += c;
            i += c;
            if o + c == tpd {
                self.persist_dim(id, (pos - 1) / tpd, true)?;
            }
        }

        let st = self.stream_mut(id)?;
        st.len = len0 + n;
        let after = st.tok_bytes() + st.dim_bytes();
        self.dram_used = self.dram_used.saturating_sub(before) + after;
        Ok(())
    }
}
