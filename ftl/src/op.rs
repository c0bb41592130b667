//! Flash operations the FTL emits and the firmware executes, and the merge
//! descriptor that lets a new page image absorb a superseded page.
//!
//! The FTL never holds flash data: when a partially persisted group/run
//! grows, the new page image carries only the new tokens and a `Merge`
//! telling the firmware which bytes of the old page to copy in.

use alloc::vec::Vec;

use crate::address::{BlockAddr, Ppa};

/// One operation for the firmware, to be executed in queue order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlashOp {
    /// Program `ppa` with `data` (a full page image). If `merge_from` is
    /// set, first read `merge_from.from` and call `Merge::apply` to copy the
    /// old page's valid bytes into the image.
    Program {
        /// Destination page, freshly allocated in a die's open block.
        ppa: Ppa,
        /// The page image, `page_size` bytes; bytes a merge is to fill are
        /// zero here.
        data: Vec<u8>,
        /// The older page to merge in before programming; `None` when
        /// `data` is already complete.
        merge_from: Option<Merge>,
    },
    /// Erase a block whose pages are all invalid.
    Erase {
        /// The block to erase; no queued merge still reads from it.
        block: BlockAddr,
    },
}

/// Which bytes of an old page survive into a new page image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MergeLayout {
    /// The whole page.
    Whole,
    /// Token page: rows `[0, tokens)` of `row_bytes` each.
    TokenRows {
        /// Tokens already on the old page: rows to keep.
        tokens: u32,
        /// Bytes per token row (`2·head_dim`, fp16).
        row_bytes: u32,
    },
    /// Dim page `[rows][stride]` fp16: the first `tokens` entries of each
    /// of the `rows` dim rows (row `j` starts at element `j·stride`).
    DimRows {
        /// Dim rows in the page (`m`, the stream's dim group).
        rows: u32,
        /// fp16 elements from one row's start to the next (`N`, tokens per
        /// dim page).
        stride: u32,
        /// Tokens already on the old page: entries to keep in each row.
        tokens: u32,
    },
}

/// A merge source: read `from`, copy `layout`'s bytes into the new image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Merge {
    /// The superseded page to read; its block is not erased while a merge
    /// still refers to it.
    pub from: Ppa,
    /// Which of its bytes carry over into the new image.
    pub layout: MergeLayout,
}

impl Merge {
    /// Copies the old page's valid bytes into `new_page` at the same
    /// offsets. Ranges are clipped to both buffers, so this never panics.
    pub fn apply(&self, old_page: &[u8], new_page: &mut [u8]) {
        match self.layout {
            MergeLayout::Whole => copy_range(old_page, new_page, 0, usize::MAX),
            MergeLayout::TokenRows { tokens, row_bytes } => {
                let len = (tokens as usize).saturating_mul(row_bytes as usize);
                copy_range(old_page, new_page, 0, len);
            }
            MergeLayout::DimRows {
                rows,
                stride,
                tokens,
            } => {
                for j in 0..rows as usize {
                    let start = j.saturating_mul(stride as usize).saturating_mul(2);
                    copy_range(
                        old_page,
                        new_page,
                        start,
                        (tokens as usize).saturating_mul(2),
                    );
                }
            }
        }
    }
}

/// Copies `len` bytes at `start` from `src` to `dst`, clipped to both.
fn copy_range(src: &[u8], dst: &mut [u8], start: usize, len: usize) {
    let end = start.saturating_add(len).min(src.len()).min(dst.len());
    if let (Some(s), Some(d)) = (src.get(start..end), dst.get_mut(start..end)) {
        d.copy_from_slice(s);
    }
}
