//! [`Region`]: an address range of a board's memory map, with the checks
//! the boards' map tests use.

/// `[base, base + size)` of the physical address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
}

impl Region {
    /// `[base, base + size)`.
    pub const fn new(base: u64, size: u64) -> Self {
        Self { base, size }
    }

    /// One past the last address.
    pub const fn end(&self) -> u64 {
        self.base + self.size
    }

    /// Whether `other` lies inside this region.
    pub const fn contains(&self, other: &Region) -> bool {
        other.base >= self.base && other.end() <= self.end()
    }

    /// Whether the two regions share an address.
    pub const fn overlaps(&self, other: &Region) -> bool {
        self.base < other.end() && other.base < self.end()
    }

    /// The `i`-th of a row of equal regions spaced `stride` apart.
    pub const fn nth(&self, i: u64, stride: u64) -> Region {
        Region::new(self.base + i * stride, self.size)
    }

    /// The base as a CPU address (the boards identity-map).
    pub const fn addr(&self) -> usize {
        self.base as usize
    }
}

/// Whether no two of `regions` overlap.
pub fn disjoint(regions: &[Region]) -> bool {
    regions
        .iter()
        .enumerate()
        .all(|(i, a)| regions[i + 1..].iter().all(|b| !a.overlaps(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_and_overlap() {
        let a = Region::new(0x1000, 0x1000);
        assert!(a.contains(&Region::new(0x1800, 0x800)));
        assert!(!a.contains(&Region::new(0x1800, 0x801)));
        assert!(a.overlaps(&Region::new(0x1FFF, 1)));
        assert!(!a.overlaps(&Region::new(0x2000, 1)));
        assert_eq!(a.nth(3, 0x1_0000).base, 0x3_1000);
        assert!(disjoint(&[
            a,
            Region::new(0x2000, 1),
            Region::new(0, 0x1000)
        ]));
        assert!(!disjoint(&[a, Region::new(0, 0x1001)]));
    }
}
