//! Carrying out flash work on the board's NAND controllers: the FTL's
//! programs and erases, and batches of filtered page reads for the engine.
//!
//! Reads are submitted as deep as the controllers take them so every
//! channel stays busy; completions are handed on in the order they finish.

use crate::counters::Counters;
use crate::hal::{Nand, NandCmd, NandDone, NandStatus, RowFilter};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use ftl::{FlashOp, Ftl, Ppa};
use proto::Status;

/// One filtered page read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageRead {
    pub ppa: Ppa,
    pub filter: RowFilter,
}

/// Submits `cmd`, polling completions into `on_done` while the controller
/// queue is full.
fn submit<B: Nand>(
    board: &mut B,
    tag: u32,
    cmd: NandCmd<'_>,
    buf: &mut [u8],
    on_done: &mut impl FnMut(&mut B, NandDone, &[u8]) -> Result<(), Status>,
) -> Result<(), Status> {
    loop {
        match board.submit(tag, cmd) {
            Ok(()) => return Ok(()),
            Err(nb::Error::WouldBlock) => {
                if board.in_flight() == 0 {
                    return Err(Status::INTERNAL_ERROR);
                }
                let done = poll_one(board, buf)?;
                on_done(board, done, &buf[..done.bytes.min(buf.len())])?;
            }
            Err(nb::Error::Other(_)) => return Err(Status::INTERNAL_ERROR),
        }
    }
}

fn poll_one<B: Nand>(board: &mut B, buf: &mut [u8]) -> Result<NandDone, Status> {
    nb::block!(board.poll(buf)).map_err(|_| Status::INTERNAL_ERROR)
}

/// Waits for every outstanding command.
fn drain<B: Nand>(
    board: &mut B,
    buf: &mut [u8],
    on_done: &mut impl FnMut(&mut B, NandDone, &[u8]) -> Result<(), Status>,
) -> Result<(), Status> {
    let mut first_err = Ok(());
    while board.in_flight() > 0 {
        let done = poll_one(board, buf)?;
        let r = on_done(board, done, &buf[..done.bytes.min(buf.len())]);
        if first_err.is_ok() {
            first_err = r;
        }
    }
    first_err
}

/// Reads `reads` through their filters, calling `sink(board, index, kept
/// bytes)` for each page as it completes. A page that fails ECC is read
/// again up to [`READ_RETRIES`] times; one that fails every time fails the
/// whole batch with a media error (after the rest has drained), and its
/// data never reaches the engine.
pub(crate) fn read_pages<B: Nand>(
    board: &mut B,
    reads: &[PageRead],
    buf: &mut [u8],
    counters: &mut Counters,
    mut sink: impl FnMut(&mut B, usize, &[u8]) -> Result<(), Status>,
) -> Result<(), Status> {
    // Read retry: a page that failed ECC is read again (a real controller
    // shifts its read voltages); only a page that fails every time fails
    // the batch, after the rest has drained: the engine never sees data
    // from a failed read. Once the sink refuses, it is not called again.
    let mut order: Vec<usize> = (0..reads.len()).collect();
    let mut aborted = false;
    for round in 0..=READ_RETRIES {
        if round > 0 {
            counters.read_retries += order.len() as u64;
        }
        let mut failed = Vec::new();
        let mut on_done = |b: &mut B, done: NandDone, data: &[u8]| -> Result<(), Status> {
            if done.status != NandStatus::Ok {
                failed.push(done.tag as usize);
                return Ok(());
            }
            counters.pages_read += 1;
            counters.bus_bytes += data.len() as u64;
            if aborted {
                return Ok(());
            }
            let r = sink(b, done.tag as usize, data);
            aborted = r.is_err();
            r
        };
        submit_reads(board, reads, &order, buf, &mut on_done)?;
        if failed.is_empty() {
            return Ok(());
        }
        order = failed;
    }
    Err(Status::MEDIA_ERROR)
}

/// Reads of a page that fails ECC before the batch fails.
pub(crate) const READ_RETRIES: usize = 2;

/// Submits `reads[i]` for every `i` in `order` (one queue per die, so a
/// full die does not hold back the others), then drains.
fn submit_reads<B: Nand>(
    board: &mut B,
    reads: &[PageRead],
    order: &[usize],
    buf: &mut [u8],
    on_done: &mut impl FnMut(&mut B, NandDone, &[u8]) -> Result<(), Status>,
) -> Result<(), Status> {
    // One queue of reads per die, in list order: a die whose controller
    // queue is full does not hold back reads for the others (no
    // head-of-line blocking); each completion lets its die's next read in.
    let mut per_die: BTreeMap<(u8, u8), VecDeque<usize>> = BTreeMap::new();
    for &i in order {
        let r = &reads[i];
        per_die
            .entry((r.ppa.channel, r.ppa.way))
            .or_default()
            .push_back(i);
    }
    let mut left = order.len();
    while left > 0 {
        let mut submitted = false;
        for queue in per_die.values_mut() {
            while let Some(&i) = queue.front() {
                let cmd = NandCmd::Read {
                    ppa: reads[i].ppa,
                    filter: reads[i].filter,
                };
                match board.submit(i as u32, cmd) {
                    Ok(()) => {
                        queue.pop_front();
                        left -= 1;
                        submitted = true;
                    }
                    Err(nb::Error::WouldBlock) => break,
                    Err(nb::Error::Other(_)) => {
                        let _ = drain(board, buf, on_done);
                        return Err(Status::INTERNAL_ERROR);
                    }
                }
            }
        }
        if left > 0 && !submitted {
            if board.in_flight() == 0 {
                return Err(Status::INTERNAL_ERROR);
            }
            let done = match poll_one(board, buf) {
                Ok(d) => d,
                Err(e) => {
                    let _ = drain(board, buf, on_done);
                    return Err(e);
                }
            };
            if let Err(e) = on_done(board, done, &buf[..done.bytes.min(buf.len())]) {
                let _ = drain(board, buf, on_done);
                return Err(e);
            }
        }
    }
    drain(board, buf, on_done)
}

/// Reads one whole page (for merges), waiting for it.
fn read_whole<B: Nand>(
    board: &mut B,
    ppa: Ppa,
    page: &mut [u8],
    counters: &mut Counters,
) -> Result<(), Status> {
    let size = page.len();
    let filter = RowFilter::first_rows(
        1,
        u16::try_from(size).map_err(|_| Status::INTERNAL_ERROR)?,
        1,
    );
    let mut out = vec![0u8; size];
    let reads = [PageRead { ppa, filter }];
    read_pages(board, &reads, &mut out, counters, |_, _, data| {
        page[..data.len()].copy_from_slice(data);
        Ok(())
    })
}

/// Executes everything the FTL has queued: merge reads, programs, erases;
/// feeds failures back so the FTL retires blocks and re-places data.
pub(crate) fn run_ftl_ops<B: Nand>(
    board: &mut B,
    ftl: &mut Ftl,
    buf: &mut [u8],
    counters: &mut Counters,
) -> Result<(), Status> {
    let page_size = ftl.geometry().page_size as usize;
    loop {
        let ops = ftl.drain_ops();
        if ops.is_empty() {
            return Ok(());
        }
        let mut failed_programs: Vec<Ppa> = Vec::new();
        let mut failed_erases = Vec::new();
        {
            let mut on_done = |_: &mut B, done: NandDone, _: &[u8]| -> Result<(), Status> {
                match (done.status, ops.get(done.tag as usize)) {
                    (NandStatus::ProgramFailed, Some(FlashOp::Program { ppa, .. })) => {
                        failed_programs.push(*ppa)
                    }
                    (NandStatus::EraseFailed, Some(FlashOp::Erase { block })) => {
                        failed_erases.push(*block)
                    }
                    _ => {}
                }
                Ok(())
            };
            let mut merged = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    FlashOp::Program {
                        ppa,
                        data,
                        merge_from,
                    } => {
                        let page: &[u8] = match merge_from {
                            Some(m) => {
                                // The source may be a page queued earlier in
                                // this batch: let everything land first.
                                drain(board, buf, &mut on_done)?;
                                let mut old = vec![0u8; page_size];
                                match read_whole(board, m.from, &mut old, counters) {
                                    Ok(()) => {}
                                    Err(Status::MEDIA_ERROR) => {
                                        // The source failed every retry: the
                                        // page cannot be written right. Its
                                        // stream is marked lost (loud on its
                                        // next read); the rest of the batch
                                        // goes on, or other streams' pages
                                        // would be left unwritten too.
                                        ftl.page_lost(*ppa).map_err(crate::error::ftl_status)?;
                                        continue;
                                    }
                                    Err(e) => return Err(e),
                                }
                                merged.clear();
                                merged.extend_from_slice(data);
                                m.apply(&old, &mut merged);
                                &merged
                            }
                            None => data,
                        };
                        submit(
                            board,
                            i as u32,
                            NandCmd::Program {
                                ppa: *ppa,
                                data: page,
                            },
                            buf,
                            &mut on_done,
                        )?;
                        counters.pages_programmed += 1;
                        counters.bus_bytes += page.len() as u64;
                    }
                    FlashOp::Erase { block } => {
                        submit(
                            board,
                            i as u32,
                            NandCmd::Erase { block: *block },
                            buf,
                            &mut on_done,
                        )?;
                    }
                }
            }
            drain(board, buf, &mut on_done)?;
        }
        for ppa in failed_programs {
            ftl.program_failed(ppa).map_err(crate::error::ftl_status)?;
        }
        for block in failed_erases {
            ftl.erase_failed(block).map_err(crate::error::ftl_status)?;
        }
    }
}
