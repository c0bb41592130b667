//! How the KV heads of a sequence are spread over the devices of an array:
//! contiguous ranges, as even as possible, the first devices taking one
//! extra head when the count does not divide. With more devices than heads
//! the last devices get empty ranges and take no part in that sequence.

use std::ops::Range;

/// The KV-head range of each of `devices` devices for `kv_heads` heads.
pub fn head_ranges(kv_heads: usize, devices: usize) -> Vec<Range<usize>> {
    if devices == 0 {
        return Vec::new();
    }
    let base = kv_heads / devices;
    let extra = kv_heads % devices;
    let mut start = 0;
    (0..devices)
        .map(|i| {
            let n = base + usize::from(i < extra);
            let r = start..start + n;
            start += n;
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_contiguous_cover() {
        for heads in 0..20 {
            for devs in 1..10 {
                let r = head_ranges(heads, devs);
                assert_eq!(r.len(), devs);
                assert_eq!(r[0].start, 0);
                assert_eq!(r[devs - 1].end, heads);
                for w in r.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                    assert!(w[0].len() >= w[1].len());
                    assert!(w[0].len() - w[1].len() <= 1);
                }
            }
        }
        assert_eq!(head_ranges(3, 2), vec![0..2, 2..3]);
        assert_eq!(head_ranges(2, 4), vec![0..1, 1..2, 2..2, 2..2]);
        assert!(head_ranges(4, 0).is_empty());
    }
}
