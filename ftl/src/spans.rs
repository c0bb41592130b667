//! Read-side answers: where the tokens of one token group or one dim run
//! are, split into a flash part (first tokens, one page) and a DRAM part
//! (the rest, still in the group buffer).
//!
//! A flash page named here may still be a queued program (not yet
//! drained): the firmware always drains and executes ops before serving
//! reads, so by the time it reads the page, the page is there.

use crate::address::Ppa;

/// Token group `g` of K or V.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupSpans<'a> {
    /// Page holding the group's first `tokens` tokens as rows
    /// `[0, tokens)` of `[token][head_dim]` fp16.
    pub flash: Option<(Ppa, u32)>,
    /// `(data, first, tokens)`: rows `[first, first + tokens)` of the group,
    /// `data` is `[tokens][head_dim]` fp16.
    pub dram: Option<(&'a [u16], u32, u32)>,
}

/// Dim block `b`, run `t` of the dim-indexed K copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSpans<'a> {
    /// Page `[m][N]` fp16 whose first `tokens` entries of every dim row are
    /// valid.
    pub flash: Option<(Ppa, u32)>,
    /// Tokens `[first, first + tokens)` of the run, still in DRAM.
    pub dram: Option<DimSpan<'a>>,
}

/// The DRAM part of a dim run for the `m` dims of one block: dim-major
/// fp16 rows, `stride` entries apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimSpan<'a> {
    data: &'a [u16],
    stride: usize,
    /// The run's first token held here.
    pub first: u32,
    /// Tokens held.
    pub tokens: u32,
}

impl<'a> DimSpan<'a> {
    pub(crate) fn new(data: &'a [u16], stride: usize, first: u32, tokens: u32) -> DimSpan<'a> {
        DimSpan {
            data,
            stride,
            first,
            tokens,
        }
    }

    /// Dim `j` of the block (0..m): its `tokens` entries, or `None` past
    /// the block.
    pub fn row(&self, j: usize) -> Option<&'a [u16]> {
        let at = j.checked_mul(self.stride)?;
        self.data.get(at..at + self.tokens as usize)
    }
}
