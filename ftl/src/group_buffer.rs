//! Device-DRAM group buffers: the tokens of a stream not yet in a page, and
//! the page-image builders that turn them into positional page layouts.
//!
//! * token tails: K and V rows `[held][head_dim]` of the current group;
//! * dim tail: the current run's not-yet-persisted tokens of every dim,
//!   dim-major `[head_dim][held]`, so dim block `b` is the contiguous
//!   `[m][held]` slice starting at row `b·m` (what `dim_run` hands out).
//!
//! Every held element costs 2 bytes of the DRAM budget (budget.rs).

use alloc::vec::Vec;

/// Appends `chunk` (`[c][hd]` token rows) to a dim tail laid out
/// `[hd][held]`, giving `[hd][held + c]`. Rows are moved last-first so
/// nothing is overwritten before it is copied.
pub(crate) fn push_dim_tokens(tail: &mut Vec<u16>, hd: usize, held: usize, chunk: &[u16]) {
    if hd == 0 {
        return;
    }
    let c = chunk.len() / hd;
    let new_held = held + c;
    tail.resize(hd * new_held, 0);
    for d in (0..hd).rev() {
        tail.copy_within(d * held..d * held + held, d * new_held);
        let row = &mut tail[d * new_held + held..(d + 1) * new_held];
        for (i, x) in row.iter_mut().enumerate() {
            *x = chunk.get(i * hd + d).copied().unwrap_or(0);
        }
    }
}

/// Writes token rows (`[n][hd]` fp16) into a token page image starting at
/// row `first`, little-endian; rows that do not fit are dropped.
pub(crate) fn put_token_rows(page: &mut [u8], first: usize, hd: usize, rows: &[u16]) {
    let start = first * hd * 2;
    let Some(dst) = page.get_mut(start..) else {
        return;
    };
    for (b, &x) in dst.chunks_exact_mut(2).zip(rows) {
        b.copy_from_slice(&x.to_le_bytes());
    }
}

/// Writes dim block `block` of a dim tail (`[hd][held]`) into a dim page
/// image `[m][n]`: element (dim j, token `first + i`) at `(j·n + first + i)·2`.
pub(crate) fn put_dim_rows(
    page: &mut [u8],
    n: usize,
    m: usize,
    block: usize,
    first: usize,
    tail: &[u16],
    held: usize,
) {
    for j in 0..m {
        let src = tail.get((block * m + j) * held..(block * m + j + 1) * held);
        let dst = page.get_mut((j * n + first) * 2..(j * n + first + held) * 2);
        if let (Some(src), Some(dst)) = (src, dst) {
            for (b, &x) in dst.chunks_exact_mut(2).zip(src) {
                b.copy_from_slice(&x.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn dim_tail_transposes_and_grows() {
        let hd = 4;
        let mut t = Vec::new();
        // token 0: [0,1,2,3], token 1: [10,11,12,13]
        push_dim_tokens(&mut t, hd, 0, &[0, 1, 2, 3, 10, 11, 12, 13]);
        assert_eq!(t, vec![0, 10, 1, 11, 2, 12, 3, 13]);
        push_dim_tokens(&mut t, hd, 2, &[20, 21, 22, 23]);
        assert_eq!(t, vec![0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23]);
    }

    #[test]
    fn dim_rows_positional() {
        let mut page = vec![0u8; 32];
        // hd 4, m 2, block 1 → dims 2,3; n = 8 tokens per page row
        let tail = [0, 10, 1, 11, 2, 12, 3, 13];
        put_dim_rows(&mut page, 8, 2, 1, 3, &tail, 2);
        let el = |i: usize| u16::from_le_bytes([page[2 * i], page[2 * i + 1]]);
        assert_eq!((el(3), el(4)), (2, 12));
        assert_eq!((el(8 + 3), el(8 + 4)), (3, 13));
    }
}
