//! Append planning: the DRAM budget and flash capacity checks that make an
//! append all-or-nothing.
//!
//! After an append, group-buffer bytes over all streams must be within
//! `dram_budget`. If not, tails are flushed as partial pages, biggest
//! first, dim tails before token tails (a dim tail of one run is
//! `head_dim·N` elements, far bigger than a token tail), until the total
//! fits. The victims and every page the append will program are worked out
//! here, before anything changes, and checked against the free pages of
//! each die; an append that does not fit returns `NoSpace` untouched.
//!
//! Minimum: one token of a stream (K + V + dim copy, 6·head_dim bytes) must
//! fit in the budget, or appends to it fail with `DramBudget`.

use alloc::vec;
use alloc::vec::Vec;

use crate::error::FtlError;
use crate::ftl::Ftl;
use crate::placement::{dim_die, token_die};
use crate::stream::{Kind, StreamId};
use crate::stream_state::{dim_bytes, tok_bytes};

/// Which tail of a stream a budget flush writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tail {
    /// Ordered first: dim tails are flushed before token tails.
    Dim,
    Tokens,
}

/// Post-append view of the appending stream.
#[derive(Clone, Copy, Debug)]
struct After {
    len: u32,
    tok_persisted: u32,
    dim_persisted: u32,
}

impl Ftl {
    /// Appends `k` and `v` (`[n][head_dim]` fp16 each) to stream `id`.
    /// Complete pages, and partial pages forced by the DRAM budget, are
    /// queued as ops. All-or-nothing: on error nothing changed.
    pub fn append(&mut self, id: StreamId, k: &[u16], v: &[u16]) -> Result<(), FtlError> {
        self.append_with_dim_copy(id, k, v, k)
    }

    /// [`Self::append`] with the dim-indexed copy built from `k_dim`
    /// instead of `k` (same shape): keys the host expressed in another
    /// basis for SparF's approximate stage, while the token-indexed copy
    /// keeps the keys the exact pass needs.
    pub fn append_with_dim_copy(
        &mut self,
        id: StreamId,
        k: &[u16],
        v: &[u16],
        k_dim: &[u16],
    ) -> Result<(), FtlError> {
        let st = self.stream(id)?;
        let hd = st.hd();
        if k.len() != v.len() || k_dim.len() != k.len() || !k.len().is_multiple_of(hd) {
            return Err(FtlError::BadLength);
        }
        let n = u32::try_from(k.len() / hd).map_err(|_| FtlError::StreamTooLong)?;
        if n == 0 {
            return Ok(());
        }
        st.len.checked_add(n).ok_or(FtlError::StreamTooLong)?;
        if st.shape.bytes_per_token() > self.budget {
            return Err(FtlError::DramBudget);
        }
        let victims = self.plan_append(id, n)?;
        self.append_tokens(id, k, v, k_dim)?;
        for (sid, tail) in victims {
            let Ok(st) = self.stream(sid) else { continue };
            let (bytes, g, r) = match tail {
                Tail::Dim => (st.dim_bytes(), 0, st.len / st.tpd),
                Tail::Tokens => (st.tok_bytes(), st.len / st.tpp, 0),
            };
            match tail {
                Tail::Dim => self.persist_dim(sid, r, false)?,
                Tail::Tokens => self.persist_tokens(sid, g, false)?,
            }
            self.dram_used = self.dram_used.saturating_sub(bytes);
        }
        Ok(())
    }

    /// Chooses the budget victims of appending `n` tokens to `id` and checks
    /// that every page the append will program fits on its die.
    fn plan_append(&self, id: StreamId, n: u32) -> Result<Vec<(StreamId, Tail)>, FtlError> {
        let st = self.stream(id)?;
        let geo = &self.geo;
        let (tpp, tpd, nb) = (st.tpp, st.tpd, st.shape.dim_blocks());
        let mut need = vec![0u64; geo.dies() as usize];
        let mut add = |die: u32| {
            if let Some(x) = need.get_mut(die as usize) {
                *x += 1;
            }
        };
        let (l0, l1) = (st.len, st.len + n);

        // Full token groups completed by this append.
        for g in l0 / tpp..l1 / tpp {
            for kind in [Kind::K, Kind::V] {
                if !(g == l0 / tpp && st.tok_persisted > 0 && self.pending(st.map(kind).get(g))) {
                    add(token_die(geo, id, kind, g));
                }
            }
        }
        // Full dim runs completed by this append.
        for r in l0 / tpd..l1 / tpd {
            for b in 0..nb {
                if !(r == l0 / tpd && st.dim_persisted > 0 && self.pending(st.dim_map.get(b, r))) {
                    add(dim_die(geo, id, nb, b, r));
                }
            }
        }
        let after = After {
            len: l1,
            tok_persisted: if l1 / tpp > l0 / tpp {
                0
            } else {
                st.tok_persisted
            },
            dim_persisted: if l1 / tpd > l0 / tpd {
                0
            } else {
                st.dim_persisted
            },
        };

        // Budget victims, from the post-append state.
        let view = |sid: StreamId, s: &crate::stream_state::StreamState| -> After {
            if sid == id {
                after
            } else {
                After {
                    len: s.len,
                    tok_persisted: s.tok_persisted,
                    dim_persisted: s.dim_persisted,
                }
            }
        };
        let held_bytes = |s: &crate::stream_state::StreamState, a: After| -> (u64, u64) {
            (
                tok_bytes(s.shape, (a.len % s.tpp).saturating_sub(a.tok_persisted)),
                dim_bytes(s.shape, (a.len % s.tpd).saturating_sub(a.dim_persisted)),
            )
        };
        let (t0, d0) = (st.tok_bytes(), st.dim_bytes());
        let (t1, d1) = held_bytes(st, after);
        let mut total = self.dram_used.saturating_sub(t0 + d0) + t1 + d1;
        let mut victims = Vec::new();
        if total > self.budget {
            let mut cands: Vec<(Tail, u64, StreamId)> = Vec::new();
            for (i, s) in self.streams.iter().enumerate() {
                let Some(s) = s else { continue };
                let sid = StreamId(i as u32);
                let (t, d) = held_bytes(s, view(sid, s));
                if d > 0 {
                    cands.push((Tail::Dim, d, sid));
                }
                if t > 0 {
                    cands.push((Tail::Tokens, t, sid));
                }
            }
            // Dim tails first, then biggest first.
            cands.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
            for (tail, bytes, sid) in cands {
                if total <= self.budget {
                    break;
                }
                total -= bytes;
                victims.push((sid, tail));
            }
        }
        for &(sid, tail) in &victims {
            let s = self.stream(sid)?;
            let a = view(sid, s);
            match tail {
                Tail::Tokens => {
                    let g = a.len / s.tpp;
                    for kind in [Kind::K, Kind::V] {
                        if !(a.tok_persisted > 0 && self.pending(s.map(kind).get(g))) {
                            add(token_die(geo, sid, kind, g));
                        }
                    }
                }
                Tail::Dim => {
                    let r = a.len / s.tpd;
                    let nb = s.shape.dim_blocks();
                    for b in 0..nb {
                        if !(a.dim_persisted > 0 && self.pending(s.dim_map.get(b, r))) {
                            add(dim_die(geo, sid, nb, b, r));
                        }
                    }
                }
            }
        }
        for (die, &pages) in need.iter().enumerate() {
            if pages > self.host_pages(die as u32) {
                return Err(FtlError::NoSpace);
            }
        }
        Ok(victims)
    }

    /// Whether a page exists and its program is still queued (a flush of
    /// it then updates the image in place, needing no new page).
    fn pending(&self, ppa: Option<crate::address::Ppa>) -> bool {
        ppa.is_some_and(|p| self.ops.is_pending(p))
    }
}
