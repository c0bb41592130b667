//! SparF's first loading step for one head: the chosen dims of every
//! token, from the dim-indexed copy of K. Dim pages without a chosen dim
//! are skipped; the NFC filter keeps only the chosen dim rows (and the
//! valid tokens of a partial page) of the others.

use super::{HeadCost, HeadJob, ftl_err};
use crate::counters::Counters;
use crate::flash::PageRead;
use crate::hal::RowFilter;
use alloc::vec;
use alloc::vec::Vec;
use ftl::Ftl;
use proto::Status;

/// Where one read's bytes go in the head's `s × r` rows.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dest {
    /// Index in the head's dims of the first kept dim.
    dim: usize,
    /// Kept dims.
    count: usize,
    /// First token of the run.
    base: usize,
    /// Valid tokens in the page.
    tokens: usize,
}

/// The head's `s × r` chosen-dim rows of K, with the parts still in DRAM
/// filled in, and the page reads that bring the rest.
pub(super) type DimPlan = (Vec<u16>, Vec<(PageRead, Dest)>);

/// Plans the dim-page reads of one head for its chosen `dims` (ascending).
pub(super) fn plan(
    ftl: &Ftl,
    job: &HeadJob<'_>,
    dims: &[u16],
    cost: &mut HeadCost,
    counters: &mut Counters,
) -> Result<DimPlan, Status> {
    let (s, d, r) = (job.s, job.d, dims.len());
    let shape = ftl.shape(job.stream).map_err(ftl_err)?;
    let m = usize::from(shape.dim_group);
    let n_run = ftl.tokens_per_dim_page(job.stream).map_err(ftl_err)? as usize;
    let row_bytes = u16::try_from(n_run * 2).map_err(|_| Status::INTERNAL_ERROR)?;
    let mut rows = vec![0u16; s * r];
    let mut reads = Vec::new();
    let mut srcs: Vec<&[u16]> = Vec::new();
    for b in 0..d / m {
        let lo = dims.partition_point(|&x| usize::from(x) < b * m);
        let hi = dims.partition_point(|&x| usize::from(x) < (b + 1) * m);
        for t in 0..s.div_ceil(n_run) {
            let spans = ftl
                .dim_run(job.stream, b as u32, t as u32)
                .map_err(ftl_err)?;
            if lo == hi {
                if spans.flash.is_some() {
                    cost.pages_skipped += 1;
                }
                continue;
            }
            let base = t * n_run;
            if let Some((ppa, p)) = spans.flash {
                let p = p as usize;
                let mut filter = RowFilter::none(m as u16, row_bytes);
                filter.keep_bytes = (p * 2) as u16;
                for &dim in &dims[lo..hi] {
                    filter.keep((usize::from(dim) - b * m) as u16);
                }
                cost.elements_filtered += ((m - (hi - lo)) * p) as u64;
                let dest = Dest {
                    dim: lo,
                    count: hi - lo,
                    base,
                    tokens: p,
                };
                reads.push((PageRead { ppa, filter }, dest));
            }
            if let Some(span) = spans.dram {
                let (first, n) = (span.first as usize, span.tokens as usize);
                let dst = rows
                    .get_mut((base + first) * r..(base + first + n) * r)
                    .ok_or(Status::INTERNAL_ERROR)?;
                srcs.clear();
                for &dim in &dims[lo..hi] {
                    let local = usize::from(dim) - b * m;
                    srcs.push(span.row(local).ok_or(Status::INTERNAL_ERROR)?);
                }
                gather(dst, r, lo, &srcs);
                counters.dram_tail_bytes += ((hi - lo) * n * 2) as u64;
            }
        }
    }
    Ok((rows, reads))
}

/// Tokens per step of [`gather`]: one 64-byte line of each dim row.
const GATHER_CHUNK: usize = 32;

/// Copies DRAM dim rows `srcs` (one per kept dim, from the `lo`-th of the
/// head's dims on) into `dst` (rows of width `r`). It goes a chunk of
/// tokens at a time across every row, so that the loads of several rows
/// are in flight together (a row at a time, the tail's rows came from
/// memory one line after another).
fn gather(dst: &mut [u16], r: usize, lo: usize, srcs: &[&[u16]]) {
    for (c, out) in dst.chunks_mut(GATHER_CHUNK * r).enumerate() {
        let at = c * GATHER_CHUNK;
        for (k, src) in srcs.iter().enumerate() {
            let Some(src) = src.get(at..) else {
                continue;
            };
            for (row, &x) in out.chunks_exact_mut(r).zip(src) {
                row[lo + k] = x;
            }
        }
    }
}

/// Puts one dim page's kept bytes (`count` dims × `tokens`) into `rows`
/// (`s × r`).
pub(super) fn fill(rows: &mut [u16], r: usize, dst: Dest, bytes: &[u8]) -> Result<(), Status> {
    if bytes.len() != dst.count * dst.tokens * 2 {
        return Err(Status::INTERNAL_ERROR);
    }
    let out = rows
        .get_mut(dst.base * r..(dst.base + dst.tokens) * r)
        .ok_or(Status::INTERNAL_ERROR)?;
    if dst.dim + dst.count > r {
        return Err(Status::INTERNAL_ERROR);
    }
    for (k, dim) in bytes.chunks_exact(dst.tokens.max(1) * 2).enumerate() {
        for (row, x) in out.chunks_exact_mut(r).zip(dim.chunks_exact(2)) {
            row[dst.dim + k] = u16::from_le_bytes([x[0], x[1]]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{GATHER_CHUNK, gather};
    use alloc::vec;
    use alloc::vec::Vec;

    /// The chunked gather puts every element where a row-at-a-time copy
    /// puts it, for runs shorter than, equal to and past a chunk, and
    /// leaves the other columns alone.
    #[test]
    fn gather_equals_a_row_at_a_time_copy() {
        let (r, lo) = (7, 2);
        for n in [0, 1, GATHER_CHUNK - 1, GATHER_CHUNK, 3 * GATHER_CHUNK + 5] {
            let rows: Vec<Vec<u16>> = (0..4)
                .map(|k| (0..n).map(|j| (k * 1000 + j) as u16).collect())
                .collect();
            let srcs: Vec<&[u16]> = rows.iter().map(Vec::as_slice).collect();
            let mut got = vec![u16::MAX; n * r];
            gather(&mut got, r, lo, &srcs);
            let mut want = vec![u16::MAX; n * r];
            for (k, src) in srcs.iter().enumerate() {
                for (row, &x) in want.chunks_exact_mut(r).zip(src.iter()) {
                    row[lo + k] = x;
                }
            }
            assert_eq!(got, want, "n {n}");
        }
    }
}
