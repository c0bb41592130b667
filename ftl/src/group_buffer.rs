//! Device-DRAM group buffers: the tokens of a stream not yet in a page, and
//! the page-image builders that turn them into positional page layouts.
//!
//! * token tails: K and V rows `[held][head_dim]` of the current group;
//! * dim tail ([`DimTail`]): the current run's not-yet-persisted tokens of
//!   every dim, dim-major, so dim block `b` is the `m` rows starting at row
//!   `b·m` (what `dim_run` hands out).
//!
//! Every held element costs 2 bytes of the DRAM budget (budget.rs).

use alloc::vec;
use alloc::vec::Vec;

/// The dim tail of a run: its K rows not yet in flash, transposed to
/// `[hd][cap]` with the first `held` entries of each dim row valid.
///
/// Each dim row has room for `cap` tokens, grown by doubling, so appending
/// a token writes `hd` entries and moves nothing already held (a packed
/// `[hd][held]` layout would move the whole tail on every append).
#[derive(Clone, Debug, Default)]
pub(crate) struct DimTail {
    data: Vec<u16>,
    cap: usize,
    held: usize,
}

impl DimTail {
    /// Tokens held.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Entries between consecutive dim rows of [`Self::data`].
    pub fn stride(&self) -> usize {
        self.cap
    }

    /// The whole buffer: dim `i`'s tokens at `[i·stride, i·stride + held)`.
    pub fn data(&self) -> &[u16] {
        &self.data
    }

    /// Dim `i`'s held tokens (empty past the last dim).
    pub fn row(&self, i: usize) -> &[u16] {
        self.data
            .get(i * self.cap..i * self.cap + self.held)
            .unwrap_or(&[])
    }

    /// Appends `chunk` (`[c][hd]` token rows).
    pub fn push(&mut self, hd: usize, chunk: &[u16]) {
        if hd == 0 {
            return;
        }
        let c = chunk.len() / hd;
        let need = self.held + c;
        if need > self.cap {
            let cap = need.max(2 * self.cap).max(8);
            let mut data = vec![0u16; hd * cap];
            for i in 0..hd {
                data[i * cap..i * cap + self.held].copy_from_slice(self.row(i));
            }
            self.data = data;
            self.cap = cap;
        }
        for (t, token) in chunk.chunks_exact(hd).enumerate() {
            let at = self.held + t;
            for (i, &x) in token.iter().enumerate() {
                self.data[i * self.cap + at] = x;
            }
        }
        self.held = need;
    }

    /// Empties the tail, keeping its room for the next run.
    pub fn clear(&mut self) {
        self.held = 0;
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

/// Writes dim block `block` of a dim tail into a dim page image `[m][n]`:
/// element (dim j, token `first + i`) at `(j·n + first + i)·2`.
pub(crate) fn put_dim_rows(
    page: &mut [u8],
    n: usize,
    m: usize,
    block: usize,
    first: usize,
    tail: &DimTail,
) {
    let held = tail.held();
    for j in 0..m {
        let src = tail.row(block * m + j);
        let dst = page.get_mut((j * n + first) * 2..(j * n + first + held) * 2);
        if let Some(dst) = dst {
            for (b, &x) in dst.chunks_exact_mut(2).zip(src) {
                b.copy_from_slice(&x.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim_tail_transposes_and_grows() {
        let hd = 4;
        let mut t = DimTail::default();
        // token 0: [0,1,2,3], token 1: [10,11,12,13]
        t.push(hd, &[0, 1, 2, 3, 10, 11, 12, 13]);
        let rows = |t: &DimTail| (0..hd).map(|i| t.row(i).to_vec()).collect::<Vec<_>>();
        assert_eq!(rows(&t), [[0, 10], [1, 11], [2, 12], [3, 13]]);
        t.push(hd, &[20, 21, 22, 23]);
        assert_eq!(
            rows(&t),
            [[0, 10, 20], [1, 11, 21], [2, 12, 22], [3, 13, 23]]
        );
        // Growing past the room moves the held tokens once.
        let cap = t.stride();
        for x in 0..cap as u16 {
            t.push(hd, &[x, x + 1, x + 2, x + 3]);
        }
        assert!(t.stride() > cap);
        assert_eq!(t.held(), 3 + cap);
        assert_eq!(t.row(3)[..3], [3, 13, 23]);
        assert_eq!(t.row(3)[3 + cap - 1], cap as u16 + 2);
        t.clear();
        assert_eq!(t.held(), 0);
        assert!(t.row(0).is_empty());
    }

    #[test]
    fn dim_rows_positional() {
        let mut page = vec![0u8; 32];
        // hd 4, m 2, block 1 → dims 2,3; n = 8 tokens per page row
        let mut tail = DimTail::default();
        tail.push(4, &[0, 1, 2, 3, 10, 11, 12, 13]);
        put_dim_rows(&mut page, 8, 2, 1, 3, &tail);
        let el = |i: usize| u16::from_le_bytes([page[2 * i], page[2 * i + 1]]);
        assert_eq!((el(3), el(4)), (2, 12));
        assert_eq!((el(8 + 3), el(8 + 4)), (3, 13));
    }
}
