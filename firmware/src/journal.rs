//! The sequence journal: which sequences are open, kept in flash so that
//! after a power loss the drive knows which ones it lost.
//!
//! Two reserved blocks are written in turn, one page per change: each page
//! is a whole snapshot (magic, a rising sequence number, the open ids, a
//! CRC32C). A page torn by the power loss fails ECC or its CRC and is
//! skipped; the newest valid page is the state. When the active block is
//! full the other one is erased and takes over, so a valid snapshot always
//! survives a power loss in the middle of a switch.
//!
//! At boot ([`crate::Device::boot`]) the journal is read, every other block
//! is taken as holding unknown data and erased when first opened (the KV
//! cache does not survive a power loss by contract: its maps lived in
//! DRAM), and the sequences the journal names become *lost*:
//! every command naming one gets `SEQ_LOST` until a SEQ_CLOSE acknowledges
//! it.

use alloc::vec;
use alloc::vec::Vec;

use ftl::{BlockAddr, Geometry, Ppa};
use proto::Status;

use crate::hal::{Nand, NandCmd, NandStatus, RowFilter};

const MAGIC: [u8; 4] = *b"ICSJ";

/// Where the journal is and where it writes next.
#[derive(Debug)]
pub(crate) struct Journal {
    blocks: [BlockAddr; 2],
    active: usize,
    next_page: u32,
    seqno: u64,
    pages_per_block: u32,
    page_size: usize,
}

/// Runs one flash command to completion (nothing else is in flight).
fn run<B: Nand>(board: &mut B, cmd: NandCmd<'_>, out: &mut [u8]) -> Result<NandStatus, Status> {
    nb::block!(board.submit(u32::MAX, cmd)).map_err(|_| Status::INTERNAL_ERROR)?;
    let done = nb::block!(board.poll(out)).map_err(|_| Status::INTERNAL_ERROR)?;
    Ok(done.status)
}

fn whole_page(page_size: usize) -> Result<RowFilter, Status> {
    let size = u16::try_from(page_size).map_err(|_| Status::INTERNAL_ERROR)?;
    Ok(RowFilter::first_rows(1, size, 1))
}

/// Open sequences one snapshot page can name (header, ids, CRC).
pub(crate) const fn capacity(page_size: usize) -> usize {
    page_size.saturating_sub(20) / 4
}

fn encode(page_size: usize, seqno: u64, ids: &[u32]) -> Result<Vec<u8>, Status> {
    let mut p = vec![0u8; page_size];
    let end = 16 + 4 * ids.len();
    if end + 4 > page_size {
        return Err(Status::SEQ_TABLE_FULL);
    }
    p[..4].copy_from_slice(&MAGIC);
    p[4..12].copy_from_slice(&seqno.to_le_bytes());
    p[12..16].copy_from_slice(&(ids.len() as u32).to_le_bytes());
    for (i, id) in ids.iter().enumerate() {
        p[16 + 4 * i..20 + 4 * i].copy_from_slice(&id.to_le_bytes());
    }
    let crc = proto::tcp::crc32c(&p[..end]);
    p[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    Ok(p)
}

fn decode(p: &[u8]) -> Option<(u64, Vec<u32>)> {
    if p.len() < 20 || p[..4] != MAGIC {
        return None;
    }
    let seqno = u64::from_le_bytes(p[4..12].try_into().ok()?);
    let n = u32::from_le_bytes(p[12..16].try_into().ok()?) as usize;
    let end = 16usize.checked_add(n.checked_mul(4)?)?;
    if end + 4 > p.len() {
        return None;
    }
    let crc = u32::from_le_bytes(p[end..end + 4].try_into().ok()?);
    if crc != proto::tcp::crc32c(&p[..end]) {
        return None;
    }
    let ids = p[16..end]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Some((seqno, ids))
}

impl Journal {
    /// The two reserved blocks: the last block of the first two dies (of
    /// the only die, its last two blocks).
    pub(crate) fn blocks(geo: &Geometry) -> [BlockAddr; 2] {
        let last = geo.blocks_per_die - 1;
        let a = BlockAddr {
            channel: 0,
            way: 0,
            block: last,
        };
        let b = if geo.channels > 1 {
            BlockAddr {
                channel: 1,
                way: 0,
                block: last,
            }
        } else if geo.ways > 1 {
            BlockAddr {
                channel: 0,
                way: 1,
                block: last,
            }
        } else {
            BlockAddr {
                channel: 0,
                way: 0,
                block: last.saturating_sub(1),
            }
        };
        [a, b]
    }

    /// Reads both blocks: the journal (positioned after its newest page)
    /// and the ids of its newest valid snapshot (empty when there is none:
    /// a fresh drive).
    pub(crate) fn load<B: Nand>(board: &mut B, geo: &Geometry) -> Result<(Self, Vec<u32>), Status> {
        let page_size = geo.page_size as usize;
        let filter = whole_page(page_size)?;
        let blocks = Self::blocks(geo);
        let mut buf = vec![0u8; page_size];
        let mut best: Option<(u64, Vec<u32>, usize, u32)> = None;
        for (bi, b) in blocks.iter().enumerate() {
            for page in 0..geo.pages_per_block {
                let ppa: Ppa = b.page(page);
                let st = run(board, NandCmd::Read { ppa, filter }, &mut buf)?;
                if st != NandStatus::Ok {
                    continue;
                }
                if buf.iter().all(|&x| x == 0xFF) {
                    break;
                }
                if let Some((seqno, ids)) = decode(&buf)
                    && best.as_ref().is_none_or(|(s, ..)| seqno > *s)
                {
                    best = Some((seqno, ids, bi, page));
                }
            }
        }
        let (seqno, ids, active) = match best {
            Some((s, ids, bi, _)) => (s + 1, ids, bi),
            None => (0, Vec::new(), 1),
        };
        let j = Self {
            blocks,
            active,
            // Full: the next write switches to the other block (erasing it)
            // and leaves this one, with the newest snapshot, intact.
            next_page: geo.pages_per_block,
            seqno,
            pages_per_block: geo.pages_per_block,
            page_size,
        };
        Ok((j, ids))
    }

    /// Records `ids` as the open (or lost) sequences.
    pub(crate) fn write<B: Nand>(&mut self, board: &mut B, ids: &[u32]) -> Result<(), Status> {
        let page = encode(self.page_size, self.seqno, ids)?;
        let mut out = vec![0u8; self.page_size];
        // At most one switch and a block's worth of failed pages.
        for _ in 0..2 * self.pages_per_block + 2 {
            if self.next_page >= self.pages_per_block {
                self.active ^= 1;
                let block = self.blocks[self.active];
                if run(board, NandCmd::Erase { block }, &mut out)? != NandStatus::Ok {
                    return Err(Status::INTERNAL_ERROR);
                }
                self.next_page = 0;
            }
            let ppa = self.blocks[self.active].page(self.next_page);
            self.next_page += 1;
            if run(board, NandCmd::Program { ppa, data: &page }, &mut out)? == NandStatus::Ok {
                self.seqno += 1;
                return Ok(());
            }
        }
        Err(Status::INTERNAL_ERROR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_round_trip_and_torn_ones_are_refused() {
        let p = encode(4096, 7, &[1, 5, 9]).unwrap();
        assert_eq!(decode(&p), Some((7, vec![1, 5, 9])));
        let mut torn = p.clone();
        torn[18] ^= 1;
        assert_eq!(decode(&torn), None);
        assert_eq!(decode(&[0xFF; 4096]), None);
        assert!(encode(64, 0, &[0; 20]).is_err());
        let g = Geometry {
            channels: 1,
            ways: 1,
            blocks_per_die: 8,
            pages_per_block: 4,
            page_size: 4096,
        };
        let [a, b] = Journal::blocks(&g);
        assert_ne!(a, b);
    }
}
