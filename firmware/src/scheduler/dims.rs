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
                for (k, &dim) in dims[lo..hi].iter().enumerate() {
                    let local = usize::from(dim) - b * m;
                    let src = span.row(local).ok_or(Status::INTERNAL_ERROR)?;
                    for (row, &x) in dst.chunks_exact_mut(r).zip(src) {
                        row[lo + k] = x;
                    }
                }
                counters.dram_tail_bytes += ((hi - lo) * n * 2) as u64;
            }
        }
    }
    Ok((rows, reads))
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
