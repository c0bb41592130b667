//! SparF's first loading step: the chosen dims of every token, from the
//! dim-indexed copy of K. Dim pages without a chosen dim are skipped; the
//! NFC filter keeps only the chosen dim rows (and the valid tokens of a
//! partial page) of the others. All heads' reads go out as one batch.

use super::{Ctx, HeadJob, Scratch, ftl_err};
use crate::flash::{PageRead, read_pages};
use crate::hal::{Engine, Nand, RowFilter};
use alloc::vec;
use alloc::vec::Vec;
use proto::Status;

/// Where one read's bytes go.
#[derive(Clone, Copy)]
struct Dest {
    head: usize,
    /// Index in the head's dims of the first kept dim.
    dim: usize,
    /// Kept dims.
    count: usize,
    /// First token of the run.
    base: usize,
    /// Valid tokens in the page.
    tokens: usize,
}

/// Returns, per head, the `s × r` chosen-dim rows of K.
pub(super) fn read<B: Nand + Engine>(
    cx: &mut Ctx<'_, B>,
    jobs: &[HeadJob<'_>],
    dims: &[Vec<u16>],
) -> Result<Vec<Vec<u16>>, Status> {
    let mut out = Vec::with_capacity(jobs.len());
    let mut reads: Vec<PageRead> = Vec::new();
    let mut dests: Vec<Dest> = Vec::new();
    for (head, (job, dims)) in jobs.iter().zip(dims).enumerate() {
        let (s, d, r) = (job.s, job.d, dims.len());
        let shape = cx.ftl.shape(job.stream).map_err(ftl_err)?;
        let m = usize::from(shape.dim_group);
        let n_run = cx.ftl.tokens_per_dim_page(job.stream).map_err(ftl_err)? as usize;
        let row_bytes = u16::try_from(n_run * 2).map_err(|_| Status::INTERNAL_ERROR)?;
        let mut rows = vec![0u16; s * r];
        for b in 0..d / m {
            let lo = dims.partition_point(|&x| usize::from(x) < b * m);
            let hi = dims.partition_point(|&x| usize::from(x) < (b + 1) * m);
            for t in 0..s.div_ceil(n_run) {
                let spans = cx
                    .ftl
                    .dim_run(job.stream, b as u32, t as u32)
                    .map_err(ftl_err)?;
                if lo == hi {
                    if spans.flash.is_some() {
                        cx.cost.pages_skipped += 1;
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
                    cx.cost.elements_filtered += ((m - (hi - lo)) * p) as u64;
                    reads.push(PageRead { ppa, filter });
                    dests.push(Dest {
                        head,
                        dim: lo,
                        count: hi - lo,
                        base,
                        tokens: p,
                    });
                }
                if let Some((data, first, n)) = spans.dram {
                    let (first, n) = (first as usize, n as usize);
                    for (k, &dim) in dims[lo..hi].iter().enumerate() {
                        let local = usize::from(dim) - b * m;
                        let src = data
                            .get(local * n..(local + 1) * n)
                            .ok_or(Status::INTERNAL_ERROR)?;
                        for (i, &x) in src.iter().enumerate() {
                            rows[(base + first + i) * r + lo + k] = x;
                        }
                    }
                    cx.counters.dram_tail_bytes += ((hi - lo) * n * 2) as u64;
                }
            }
        }
        out.push(rows);
    }
    let Scratch { page, .. } = &mut *cx.scratch;
    let cost = &mut *cx.cost;
    read_pages(cx.board, &reads, page, cx.counters, |_, i, bytes| {
        let dst = dests[i];
        if bytes.len() != dst.count * dst.tokens * 2 {
            return Err(Status::INTERNAL_ERROR);
        }
        let r = dims[dst.head].len();
        let rows = &mut out[dst.head];
        for k in 0..dst.count {
            for j in 0..dst.tokens {
                let at = (k * dst.tokens + j) * 2;
                let x = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
                let slot = rows
                    .get_mut((dst.base + j) * r + dst.dim + k)
                    .ok_or(Status::INTERNAL_ERROR)?;
                *slot = x;
            }
        }
        cost.pages_read += 1;
        cost.engine_bytes += bytes.len() as u64;
        Ok(())
    })?;
    Ok(out)
}
