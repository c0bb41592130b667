//! The sequence journal: which sequences are open, kept in flash so that
//! after a power loss the drive knows which ones it lost.
//!
//! One page per change: each page is a whole snapshot (magic, a rising
//! sequence number, the open ids, a CRC32C). A page torn by the power
//! loss fails ECC or its CRC and is skipped; the newest valid page is the
//! state. The journal's blocks are lent by the FTL from its free pool
//! (the least erased), so a busy drive's many small journal writes wear
//! every block alike instead of two fixed ones; a full block stays lent
//! until the next block holds a snapshot, then goes back (or is retired,
//! if it failed), so a valid snapshot always survives a power loss in
//! the middle of a switch.
//!
//! At boot ([`crate::Device::boot`]) the first page of every block is
//! read (one read per die at a time): the block whose first page is a
//! snapshot with the highest sequence number is the newest journal block
//! (its first page was written after every page of the blocks before it),
//! and its newest valid page is the state. Every other block is taken as
//! holding unknown data and erased when first opened (the KV cache does
//! not survive a power loss by contract: its maps lived in DRAM), and the
//! sequences the journal names become *lost*: every command naming one
//! gets `SEQ_LOST` until a SEQ_CLOSE acknowledges it.

use alloc::vec;
use alloc::vec::Vec;

use ftl::{BlockAddr, Ftl, Geometry, Ppa};
use proto::Status;

use crate::hal::{Nand, NandCmd, NandStatus, RowFilter};

/// Blocks a write tries (an erase or program that fails retires one).
const WRITE_TRIES: usize = 8;
/// Bytes of a first page read by the boot's scan: magic and number.
const HEADER: u16 = 64;

const MAGIC: [u8; 4] = *b"ICSJ";

/// Where the journal is and where it writes next.
#[derive(Debug)]
pub(crate) struct Journal {
    /// The block written now (`None`: the next write lends one).
    active: Option<BlockAddr>,
    /// The block before it, lent until a snapshot is in `active`; true
    /// if it failed and is to be retired rather than given back.
    previous: Option<(BlockAddr, bool)>,
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

/// A page of `magic`, `seqno`, the `head` words, the count of `words`,
/// the words and a CRC32C of everything before it; `None` if it does not
/// fit `page_size`.
fn seal(
    page_size: usize,
    magic: [u8; 4],
    seqno: u64,
    head: &[u32],
    words: &[u32],
) -> Option<Vec<u8>> {
    let start = 16 + 4 * head.len();
    let end = start + 4 * words.len();
    if end + 4 > page_size {
        return None;
    }
    let mut p = vec![0u8; page_size];
    p[..4].copy_from_slice(&magic);
    p[4..12].copy_from_slice(&seqno.to_le_bytes());
    let count = words.len() as u32;
    let fields = head.iter().chain([&count]).chain(words);
    for (i, w) in fields.enumerate() {
        p[12 + 4 * i..16 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
    let crc = proto::tcp::crc32c(&p[..end]);
    p[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    Some(p)
}

/// The number, the `heads` head words and the words of a page sealed
/// with `magic`; `None` for another kind of page or a torn one.
fn unseal(p: &[u8], magic: [u8; 4], heads: usize) -> Option<(u64, Vec<u32>, Vec<u32>)> {
    let start = 16 + 4 * heads;
    if p.len() < start + 4 || p[..4] != magic {
        return None;
    }
    let word = |i: usize| Some(u32::from_le_bytes(p.get(i..i + 4)?.try_into().ok()?));
    let seqno = u64::from_le_bytes(p[4..12].try_into().ok()?);
    let n = word(start - 4)? as usize;
    let end = start.checked_add(n.checked_mul(4)?)?;
    if end.checked_add(4)? > p.len() || word(end)? != proto::tcp::crc32c(&p[..end]) {
        return None;
    }
    let head = (0..heads)
        .map(|i| word(12 + 4 * i))
        .collect::<Option<Vec<u32>>>()?;
    let words = (start..end)
        .step_by(4)
        .map(word)
        .collect::<Option<Vec<u32>>>()?;
    Some((seqno, head, words))
}

fn encode(page_size: usize, seqno: u64, ids: &[u32]) -> Result<Vec<u8>, Status> {
    seal(page_size, MAGIC, seqno, &[], ids).ok_or(Status::SEQ_TABLE_FULL)
}

fn decode(p: &[u8]) -> Option<(u64, Vec<u32>)> {
    unseal(p, MAGIC, 0).map(|(seqno, _, ids)| (seqno, ids))
}

const WEAR_MAGIC: [u8; 4] = *b"ICSW";

/// Erase counts one wear-table page holds (header of 20 bytes, CRC).
const fn wear_per_page(page_size: usize) -> usize {
    page_size.saturating_sub(24) / 4
}

/// Pages of the wear table for `blocks` blocks.
fn wear_pages(page_size: usize, blocks: usize) -> usize {
    blocks.div_ceil(wear_per_page(page_size).max(1))
}

/// Part `part` of the wear table `table`, stamped with the snapshot
/// number it follows.
fn encode_wear(page_size: usize, seqno: u64, table: &[u32], part: usize) -> Vec<u8> {
    let per = wear_per_page(page_size);
    let first = (part * per).min(table.len());
    let chunk = &table[first..(first + per).min(table.len())];
    // `wear_per_page` leaves room for the header, the first index and
    // the CRC, so the page always fits.
    seal(page_size, WEAR_MAGIC, seqno, &[first as u32], chunk).unwrap_or_default()
}

/// A wear-table page: its snapshot number, first index and counts.
fn decode_wear(p: &[u8]) -> Option<(u64, usize, Vec<u32>)> {
    let (seqno, head, counts) = unseal(p, WEAR_MAGIC, 1)?;
    Some((seqno, *head.first()? as usize, counts))
}

/// The block a first page's header names and its sequence number, for
/// every block whose first page starts like a snapshot.
fn scan_headers<B: Nand>(
    board: &mut B,
    geo: &Geometry,
    bad: &[BlockAddr],
) -> Result<Vec<(u64, BlockAddr)>, Status> {
    let rows =
        u16::try_from(geo.page_size / u32::from(HEADER)).map_err(|_| Status::INTERNAL_ERROR)?;
    let filter = RowFilter::first_rows(rows, HEADER, 1);
    let dies = u64::from(geo.dies());
    let total = geo.total_blocks();
    // Block-major order over the dies, so the reads in flight are on
    // different dies; the tag is the position in that order.
    let at = |n: u64| {
        let (channel, way) = geo.die_at(n % dies);
        BlockAddr {
            channel,
            way,
            block: (n / dies) as u32,
        }
    };
    let mut out = vec![0u8; geo.page_size as usize];
    let (mut next, mut in_flight, mut found) = (0u64, 0u64, Vec::new());
    loop {
        while next < total && in_flight < dies {
            let b = at(next);
            if bad.contains(&b) {
                next += 1;
                continue;
            }
            let tag = u32::try_from(next).map_err(|_| Status::INTERNAL_ERROR)?;
            match board.submit(
                tag,
                NandCmd::Read {
                    ppa: b.page(0),
                    filter,
                },
            ) {
                Ok(()) => {
                    next += 1;
                    in_flight += 1;
                }
                Err(nb::Error::WouldBlock) => break,
                Err(nb::Error::Other(_)) => return Err(Status::INTERNAL_ERROR),
            }
        }
        if in_flight == 0 {
            return Ok(found);
        }
        let done = nb::block!(board.poll(&mut out)).map_err(|_| Status::INTERNAL_ERROR)?;
        in_flight -= 1;
        if done.status == NandStatus::Ok && out[..4] == MAGIC {
            let seqno =
                u64::from_le_bytes(out[4..12].try_into().map_err(|_| Status::INTERNAL_ERROR)?);
            found.push((seqno, at(u64::from(done.tag))));
        }
    }
}

/// What one journal block holds: its newest valid snapshot (number and
/// ids) and its wear table, if every part of it is there.
type BlockContent = (Option<(u64, Vec<u32>)>, Option<Vec<u32>>);

/// Reads `block` page by page up to its first erased page.
fn read_block<B: Nand>(
    board: &mut B,
    geo: &Geometry,
    block: BlockAddr,
) -> Result<BlockContent, Status> {
    let page_size = geo.page_size as usize;
    let filter = whole_page(page_size)?;
    let blocks = geo.total_blocks() as usize;
    let mut buf = vec![0u8; page_size];
    let mut best: Option<(u64, Vec<u32>)> = None;
    let mut table = vec![0u32; blocks];
    let mut parts = 0usize;
    for page in 0..geo.pages_per_block {
        let ppa: Ppa = block.page(page);
        if run(board, NandCmd::Read { ppa, filter }, &mut buf)? != NandStatus::Ok {
            continue;
        }
        if buf.iter().all(|&x| x == 0xFF) {
            break;
        }
        if let Some((seqno, ids)) = decode(&buf) {
            if best.as_ref().is_none_or(|(s, _)| seqno > *s) {
                best = Some((seqno, ids));
            }
        } else if let Some((_, first, counts)) = decode_wear(&buf)
            && let Some(dst) = table.get_mut(first..first + counts.len())
        {
            dst.copy_from_slice(&counts);
            parts += 1;
        }
    }
    let complete = parts == wear_pages(page_size, blocks);
    Ok((best, complete.then_some(table)))
}

/// What boot reads: the journal, the lost ids, the newest wear table.
pub(crate) type Loaded = (Journal, Vec<u32>, Option<Vec<u32>>);

impl Journal {
    /// Finds the newest journal block (skipping the factory `bad` blocks)
    /// and reads it: the journal, which will write its next snapshot into
    /// a fresh block, the ids of the newest valid snapshot (empty when
    /// there is none: a fresh drive) and the newest wear table (the FTL's
    /// erase counts and retired blocks when the journal last moved).
    pub(crate) fn load<B: Nand>(
        board: &mut B,
        geo: &Geometry,
        bad: &[BlockAddr],
    ) -> Result<Loaded, Status> {
        let mut candidates = scan_headers(board, geo, bad)?;
        candidates.sort_unstable_by_key(|c| core::cmp::Reverse(c.0));
        let (mut state, mut wear) = (None, None);
        // The newest snapshot, and the newest complete wear table (an
        // older block's when a cut tore the newest one's).
        for (_, block) in candidates {
            let (snapshot, table) = read_block(board, geo, block)?;
            if state.is_none()
                && let Some((seqno, ids)) = snapshot
            {
                state = Some((seqno, ids, block));
            }
            if state.is_some() && wear.is_none() {
                wear = table;
            }
            if state.is_some() && wear.is_some() {
                break;
            }
        }
        let (seqno, ids, previous) = match state {
            Some((s, ids, b)) => (s + 1, ids, Some((b, false))),
            None => (0, Vec::new(), None),
        };
        let j = Self {
            active: None,
            previous,
            next_page: 0,
            seqno,
            pages_per_block: geo.pages_per_block,
            page_size: geo.page_size as usize,
        };
        Ok((j, ids, wear))
    }

    /// The block holding the newest snapshot found at boot: to be kept
    /// out of the FTL's hands until the first write.
    pub(crate) fn found_block(&self) -> Option<BlockAddr> {
        self.previous.map(|(b, _)| b)
    }

    /// Records `ids` as the open (or lost) sequences.
    pub(crate) fn write<B: Nand>(
        &mut self,
        board: &mut B,
        ftl: &mut Ftl,
        ids: &[u32],
    ) -> Result<(), Status> {
        let page = encode(self.page_size, self.seqno, ids)?;
        let mut out = vec![0u8; self.page_size];
        for _ in 0..WRITE_TRIES {
            let block = match self.active {
                Some(b) if self.next_page < self.pages_per_block => b,
                _ => {
                    if let Some(full) = self.active.take() {
                        self.previous = Some((full, false));
                    }
                    let b = ftl.lend_block().map_err(|_| Status::CAPACITY_EXCEEDED)?;
                    if run(board, NandCmd::Erase { block: b }, &mut out)? != NandStatus::Ok {
                        ftl.retire_lent_block(b)
                            .map_err(|_| Status::INTERNAL_ERROR)?;
                        continue;
                    }
                    self.active = Some(b);
                    self.next_page = 0;
                    b
                }
            };
            let first = self.next_page == 0;
            let ppa = block.page(self.next_page);
            self.next_page += 1;
            if run(board, NandCmd::Program { ppa, data: &page }, &mut out)? == NandStatus::Ok {
                if first {
                    if let Some((p, failed)) = self.previous.take() {
                        let r = if failed {
                            ftl.retire_lent_block(p)
                        } else {
                            ftl.return_block(p)
                        };
                        r.map_err(|_| Status::INTERNAL_ERROR)?;
                    }
                    self.write_wear(board, ftl, block, &mut out)?;
                }
                self.seqno += 1;
                return Ok(());
            }
            // The block failed: nothing of it is needed if this was its
            // first page; otherwise its earlier pages hold the newest
            // snapshot until the next block has one.
            self.active = None;
            if first {
                ftl.retire_lent_block(block)
                    .map_err(|_| Status::INTERNAL_ERROR)?;
            } else {
                self.previous = Some((block, true));
            }
        }
        Err(Status::INTERNAL_ERROR)
    }

    /// The FTL's wear table into the pages after a new block's first
    /// snapshot (when it fits the block with room for snapshots). A failed
    /// program leaves the block to be retired once the next one holds a
    /// snapshot; the snapshot already written stands.
    fn write_wear<B: Nand>(
        &mut self,
        board: &mut B,
        ftl: &Ftl,
        block: BlockAddr,
        out: &mut [u8],
    ) -> Result<(), Status> {
        let table = ftl.wear_table();
        let parts = wear_pages(self.page_size, table.len());
        if parts + 1 >= self.pages_per_block as usize {
            return Ok(());
        }
        for part in 0..parts {
            let page = encode_wear(self.page_size, self.seqno, &table, part);
            let ppa = block.page(self.next_page);
            self.next_page += 1;
            if run(board, NandCmd::Program { ppa, data: &page }, out)? != NandStatus::Ok {
                self.active = None;
                self.previous = Some((block, true));
                return Ok(());
            }
        }
        Ok(())
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
    }

    #[test]
    fn wear_tables_split_over_pages_and_torn_parts_are_refused() {
        let table: Vec<u32> = (0..2500).map(|i| i * 3).collect();
        let parts = wear_pages(4096, table.len());
        assert_eq!(parts, 3);
        let mut back = vec![0u32; table.len()];
        for part in 0..parts {
            let p = encode_wear(4096, 9, &table, part);
            assert_eq!(decode(&p), None, "not a snapshot");
            let (seqno, first, counts) = decode_wear(&p).unwrap();
            assert_eq!(seqno, 9);
            back[first..first + counts.len()].copy_from_slice(&counts);
        }
        assert_eq!(back, table);
        let mut torn = encode_wear(4096, 9, &table, 1);
        torn[100] ^= 4;
        assert_eq!(decode_wear(&torn), None);
        assert_eq!(decode_wear(&encode(4096, 1, &[2]).unwrap()), None);
    }
}
