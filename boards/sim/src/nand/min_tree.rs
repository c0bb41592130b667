//! The earliest of a fixed set of keyed slots, kept as a tournament tree:
//! setting a slot costs O(log n), reading the minimum costs nothing. The
//! NAND timer keeps every die's next event and every channel's next grant
//! here, so that finding the next event does not scan all the dies.

/// Slots `0..n`, each empty or holding a key; [`MinTree::min`] is the
/// smallest key and its slot (ties: the lower slot).
#[derive(Clone, Debug)]
pub(super) struct MinTree {
    /// Leaves at `leaves..2 * leaves`; node `i` holds the smaller of its
    /// children `2i` and `2i + 1`. `None` is an empty slot.
    nodes: Vec<Option<(u64, usize)>>,
    leaves: usize,
}

impl MinTree {
    /// `n` empty slots.
    pub(super) fn new(n: usize) -> Self {
        let leaves = n.max(1).next_power_of_two();
        Self {
            nodes: vec![None; 2 * leaves],
            leaves,
        }
    }

    /// Sets slot `i` to `key` (or empties it).
    pub(super) fn set(&mut self, i: usize, key: Option<u64>) {
        let mut n = self.leaves + i;
        self.nodes[n] = key.map(|k| (k, i));
        while n > 1 {
            n /= 2;
            self.nodes[n] = Self::smaller(self.nodes[2 * n], self.nodes[2 * n + 1]);
        }
    }

    /// The smallest key and its slot.
    pub(super) fn min(&self) -> Option<(u64, usize)> {
        self.nodes[1]
    }

    /// Empties every slot.
    pub(super) fn clear(&mut self) {
        self.nodes.iter_mut().for_each(|n| *n = None);
    }

    fn smaller(a: Option<(u64, usize)>, b: Option<(u64, usize)>) -> Option<(u64, usize)> {
        match (a, b) {
            // `a` covers the lower slots: it wins ties.
            (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
            (x, y) => x.or(y),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MinTree;

    /// The tree's minimum equals a scan for the first smallest key, through
    /// a pseudo-random sequence of sets and clears.
    #[test]
    fn min_equals_a_scan_with_ties_to_the_lower_slot() {
        for n in [1usize, 3, 8, 72] {
            let mut tree = MinTree::new(n);
            let mut slots = vec![None; n];
            let mut x = 0x9e37_79b9_7f4a_7c15_u64;
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % n as u64) as usize;
                // Few distinct keys, so ties are common.
                let key = if (x >> 20).is_multiple_of(7) {
                    None
                } else {
                    Some((x >> 40) % 6)
                };
                tree.set(i, key);
                slots[i] = key;
                let scan = slots
                    .iter()
                    .enumerate()
                    .filter_map(|(i, k)| k.map(|k| (k, i)))
                    .min_by_key(|&(k, _)| k);
                assert_eq!(tree.min(), scan);
            }
            tree.clear();
            assert_eq!(tree.min(), None);
        }
    }
}
