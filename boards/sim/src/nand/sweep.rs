//! Driving the flash model alone, as the firmware drives it (one queue of
//! commands per die in list order; submit while the dies take commands,
//! else wait for the earliest completion; the clock follows the
//! completions): for queue-depth sweeps (`instinfer bench nand`) and tests.

use std::collections::VecDeque;

use firmware::hal::{NandCmd, RowFilter};
use ftl::{Geometry, Ppa};

use super::{NandSim, NandTiming};
use crate::error::NandError;

/// Virtual ns until `pages_per_die` full-page reads on every die of
/// `geometry` (pages 0, 1, … of each die) have all completed.
pub fn full_page_reads(
    geometry: Geometry,
    timing: NandTiming,
    pages_per_die: u32,
) -> Result<u64, NandError> {
    let page = geometry.page_size as usize;
    let rows = u16::try_from(page / 64).map_err(|_| NandError::BadFilter(page))?;
    let filter = RowFilter::first_rows(rows, 64, rows);
    let queues = (0..geometry.dies())
        .map(|die| {
            let (channel, way) = geometry.die_at(u64::from(die));
            (0..pages_per_die)
                .map(|p| Ppa {
                    channel,
                    way,
                    block: p / geometry.pages_per_block,
                    page: p % geometry.pages_per_block,
                })
                .map(|ppa| Command::Read { ppa, filter })
                .collect()
        })
        .collect();
    run(NandSim::new(geometry, timing, &[]), queues)
}

/// One command of a sweep.
#[derive(Clone, Copy, Debug)]
pub enum Command {
    /// A filtered page read.
    Read {
        /// The page.
        ppa: Ppa,
        /// What crosses the bus.
        filter: RowFilter,
    },
    /// A page program (of 0xA5 bytes).
    Program {
        /// The page.
        ppa: Ppa,
    },
}

/// Runs every die's queue of `commands` on `nand` from time zero; returns
/// the virtual ns of the last completion.
pub fn run(mut nand: NandSim, mut queues: Vec<VecDeque<Command>>) -> Result<u64, NandError> {
    let page = vec![0xA5u8; nand.array().geometry().page_size as usize];
    let (mut now, mut out) = (0, vec![0u8; page.len()]);
    loop {
        for q in &mut queues {
            while let Some(&c) = q.front() {
                let cmd = match c {
                    Command::Read { ppa, filter } => NandCmd::Read { ppa, filter },
                    Command::Program { ppa } => NandCmd::Program { ppa, data: &page },
                };
                match nand.submit(now, 0, cmd) {
                    Ok(()) => {
                        q.pop_front();
                    }
                    Err(nb::Error::WouldBlock) => break,
                    Err(nb::Error::Other(e)) => return Err(e),
                }
            }
        }
        if nand.in_flight() == 0 {
            return Ok(now);
        }
        match nand.poll(&mut out) {
            Ok((_, t)) => now = now.max(t),
            // Commands in flight always finish; nothing else blocks.
            Err(nb::Error::WouldBlock) => return Ok(now),
            Err(nb::Error::Other(e)) => return Err(e),
        }
    }
}
