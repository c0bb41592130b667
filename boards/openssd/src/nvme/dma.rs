//! Cutting a host transfer into direct DMAs the controller accepts.
//!
//! The device core walks a command's PRPs itself (`proto::prp`) and asks
//! the board to move one contiguous host range at a time. A direct DMA of
//! the OpenSSD controller moves at most 4 KiB and needs a host address
//! aligned to the controller's granule (16 bytes on Cosmos+, 4 on
//! Daisyplus). We also never let one DMA cross a 4 KiB host page: a PRP
//! range is contiguous only within its pages as the host sees them, and
//! the controller's own PRP engine works page by page.
//!
//! So each [`Chunk`] is the granule-aligned window around the part of the
//! transfer that falls in one host page; `skip` and `take` say where the
//! caller's bytes sit in it. A read copies `take` bytes from `skip` out of
//! the bounce buffer; a write of a chunk that is not all caller bytes
//! first reads the window (so the bytes around the caller's range go back
//! unchanged), then overlays and writes it.

/// Host page size the chunks respect.
pub const HOST_PAGE: u64 = 4096;

/// One direct DMA of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Aligned host bus address of the window.
    pub host: u64,
    /// Window length (a multiple of the granule, at most a page).
    pub len: usize,
    /// Bytes of the window before the caller's first byte.
    pub skip: usize,
    /// Caller bytes in this window.
    pub take: usize,
    /// Offset of those bytes in the caller's buffer.
    pub at: usize,
}

impl Chunk {
    /// Whether the window is exactly caller bytes (a write needs no
    /// read-back first).
    pub const fn is_whole(&self) -> bool {
        self.skip == 0 && self.take == self.len
    }
}

/// A transfer that runs off the end of the address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressOverflow {
    /// First byte.
    pub addr: u64,
    /// Length.
    pub len: usize,
}

/// The chunks of `len` bytes at host address `addr` for a controller of
/// granule `align` (a power of two ≤ [`HOST_PAGE`]).
pub fn plan(addr: u64, len: usize, align: u64) -> Result<Chunks, AddressOverflow> {
    debug_assert!(align.is_power_of_two() && align <= HOST_PAGE);
    let end = addr
        .checked_add(len as u64)
        .ok_or(AddressOverflow { addr, len })?;
    // The window of the last byte is rounded up to the granule; that must
    // not wrap either.
    end.checked_add(align - 1)
        .ok_or(AddressOverflow { addr, len })?;
    Ok(Chunks {
        start: addr,
        pos: addr,
        end,
        align,
    })
}

/// Iterator over the [`Chunk`]s of a transfer; see [`plan`].
#[derive(Clone, Debug)]
pub struct Chunks {
    start: u64,
    pos: u64,
    end: u64,
    align: u64,
}

impl Iterator for Chunks {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if self.pos >= self.end {
            return None;
        }
        let page_end = (self.pos | (HOST_PAGE - 1)).saturating_add(1);
        let seg_end = self.end.min(page_end);
        let host = self.pos & !(self.align - 1);
        let win_end = (seg_end + self.align - 1) & !(self.align - 1);
        let chunk = Chunk {
            host,
            len: (win_end - host) as usize,
            skip: (self.pos - host) as usize,
            take: (seg_end - self.pos) as usize,
            at: (self.pos - self.start) as usize,
        };
        self.pos = seg_end;
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn chunks(addr: u64, len: usize, align: u64) -> Vec<Chunk> {
        plan(addr, len, align).expect("plan").collect()
    }

    #[test]
    fn an_aligned_page_is_one_whole_chunk() {
        let c = chunks(0x1_0000, 4096, 16);
        assert_eq!(
            c,
            [Chunk {
                host: 0x1_0000,
                len: 4096,
                skip: 0,
                take: 4096,
                at: 0
            }]
        );
        assert!(c[0].is_whole());
    }

    #[test]
    fn unaligned_ends_widen_the_window() {
        // 8 bytes at ...0x1004 on a 16-byte controller.
        let c = chunks(0x2004, 8, 16);
        assert_eq!(
            c,
            [Chunk {
                host: 0x2000,
                len: 16,
                skip: 4,
                take: 8,
                at: 0
            }]
        );
        assert!(!c[0].is_whole());
        // The same on Daisyplus (4-byte granule) needs no widening.
        assert!(chunks(0x2004, 8, 4)[0].is_whole());
    }

    #[test]
    fn page_crossings_split_and_never_exceed_a_page() {
        let c = chunks(0x0FF0, 4096 + 64, 16);
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].host, c[0].take, c[0].at), (0x0FF0, 16, 0));
        assert_eq!((c[1].host, c[1].take, c[1].at), (0x1000, 4096, 16));
        assert_eq!((c[2].host, c[2].take, c[2].at), (0x2000, 48, 4112));
        assert!(c.iter().all(|c| c.len <= 4096 && c.host % 16 == 0));
    }

    #[test]
    fn every_caller_byte_is_covered_once_in_order() {
        for (addr, len, align) in [
            (3u64, 10_000usize, 16u64),
            (0xFFC, 9, 4),
            (0x7FF8, 1, 16),
            (0, 0, 4),
        ] {
            let mut covered = vec![0u8; len];
            let mut next = 0;
            for c in chunks(addr, len, align) {
                assert_eq!(c.at, next, "in order");
                assert!(c.skip + c.take <= c.len);
                assert_eq!(
                    c.host + c.skip as u64,
                    addr + c.at as u64,
                    "window holds the bytes"
                );
                assert_eq!(
                    c.host / HOST_PAGE,
                    (c.host + c.len as u64 - 1) / HOST_PAGE,
                    "one page"
                );
                for b in &mut covered[c.at..c.at + c.take] {
                    *b += 1;
                }
                next += c.take;
            }
            assert!(covered.iter().all(|&n| n == 1), "{addr:#x}+{len}");
        }
    }

    #[test]
    fn transfers_past_the_address_space_are_refused() {
        assert_eq!(
            plan(u64::MAX - 3, 8, 4).map(|_| ()),
            Err(AddressOverflow {
                addr: u64::MAX - 3,
                len: 8
            })
        );
    }
}
