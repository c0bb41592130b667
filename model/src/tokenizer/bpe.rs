//! Byte-pair merging: the merge table (ranks from the order of
//! `tokenizer.ggml.merges`), keyed by token-id pairs, and the merge loop
//! over one pre-tokenized piece.

use std::collections::HashMap;

/// Merge ranks: `(left, right) → (rank, merged)`, all token ids.
#[derive(Debug, Default)]
pub(super) struct Merges {
    table: HashMap<(u32, u32), (u32, u32)>,
}

impl Merges {
    /// Builds the table from `"left right"` lines; a merge whose parts or
    /// result are not in the vocabulary can never apply and is skipped.
    pub(super) fn new(lines: &[String], id_of: &HashMap<String, u32>) -> Self {
        let mut table = HashMap::with_capacity(lines.len());
        for (rank, line) in lines.iter().enumerate() {
            let Some((l, r)) = line.split_once(' ') else {
                continue;
            };
            let merged = format!("{l}{r}");
            if let (Some(&a), Some(&b), Some(&m)) = (id_of.get(l), id_of.get(r), id_of.get(&merged))
            {
                table.entry((a, b)).or_insert((rank as u32, m));
            }
        }
        Self { table }
    }

    /// Number of usable merges.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Applies merges to `symbols` (single-byte token ids on entry), always
    /// the lowest-ranked pair first, leftmost on ties.
    pub(super) fn apply(&self, symbols: &mut Vec<u32>) {
        loop {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| self.table.get(&(w[0], w[1])).map(|&(rank, m)| (rank, i, m)))
                .min();
            let Some((_, i, merged)) = best else { return };
            symbols[i] = merged;
            symbols.remove(i + 1);
        }
    }
}
