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
    /// `(data, first, tokens)`: tokens `[first, first + tokens)` of the run,
    /// `data` is dim-major `[m][tokens]` fp16.
    pub dram: Option<(&'a [u16], u32, u32)>,
}
