//! The flash side of the board: NAND flash controllers (one queue per die)
//! over the page store ([`mod@array`]), with the timing parameters
//! ([`timing`]) and the dies' and buses' event model ([`schedule`]).
//!
//! [`NandSim::submit`] checks the command, does its effect on the array at
//! once (commands of one die run in queue order, so this is the order the
//! die would see) and queues it on its die; [`NandSim::poll`] runs the
//! discrete-event schedule ([`schedule`]) until the earliest completion is
//! known and hands it back.
//!
//! # Charging rule
//!
//! The **array read is paid per page**: every read costs the die a full tR,
//! whatever its filter keeps. The **channel bus and the engine are paid per
//! kept byte**: the NFC uses column-address changes so that only the rows
//! the [`RowFilter`] keeps cross the bus (bus time = command overhead +
//! kept bytes / bus rate), and only those reach the engine. (Model choice;
//! see [`CHARGING_RULE`].) Programs move whole pages over the bus.

pub mod array;
pub mod faults;
mod min_tree;
pub mod schedule;
pub mod sweep;
pub mod timing;

use std::sync::Arc;

use rustc_hash::FxHashMap;

use firmware::hal::{NandCmd, NandDone, NandStatus, RowFilter};
use ftl::Geometry;

use crate::error::NandError;
pub use array::NandArray;
pub use faults::{FaultCounters, NandFaults};
pub use schedule::NandTimer;
use schedule::Work;
pub use timing::NandTiming;

/// The charging rule of this model, in words (for reports).
pub const CHARGING_RULE: &str = "array read per page (tR regardless of filter); \
     channel bus and engine per kept byte (NFC column-address changes move only kept rows)";

/// Flash activity so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NandCounters {
    /// Page reads (each paid a full tR).
    pub pages_read: u64,
    /// Page programs.
    pub pages_programmed: u64,
    /// Block erases.
    pub blocks_erased: u64,
    /// Bytes over the channel buses (kept read bytes + programmed pages).
    pub bus_bytes: u64,
    /// Sum over dies of array busy time (tR, tPROG, tBERS), ns.
    pub array_busy_ns: u64,
    /// Sum over channels of bus busy time, ns.
    pub bus_busy_ns: u64,
    /// Page reads per channel.
    pub reads_per_channel: Vec<u64>,
    /// Page reads per die, indexed as `ftl::Geometry::die_index`.
    pub reads_per_die: Vec<u64>,
    /// Reads that ended uncorrectable.
    pub uncorrectable_reads: u64,
}

#[derive(Debug)]
struct Outstanding {
    die: usize,
    done: NandDone,
    data: Data,
}

/// What a command hands back when it completes.
#[derive(Debug)]
enum Data {
    /// Nothing (programs, erases, failed reads).
    None,
    /// A read's kept bytes: `filter` over the page at `ppa` as it was
    /// read. The copy waits for the completion (the kept lines are
    /// prefetched at submit, so they have arrived by then); a program of
    /// the page or an erase of its block in between first takes the page
    /// into `taken`, as the die reads before it programs or erases.
    Read {
        ppa: ftl::Ppa,
        filter: RowFilter,
        taken: Option<Taken>,
    },
}

/// A page an erase took away from under a read in flight.
#[derive(Debug)]
enum Taken {
    /// It held data.
    Data(Arc<[u8]>),
    /// It was erased already.
    Erased,
}

/// The NAND flash controllers with their dies.
#[derive(Debug)]
pub struct NandSim {
    array: NandArray,
    timer: NandTimer,
    /// By submission number.
    outstanding: FxHashMap<u64, Outstanding>,
    per_die: Vec<usize>,
    seq: u64,
    counters: NandCounters,
    faults: faults::FaultDice,
    /// Commands submitted since power-on, and the one after which power
    /// is lost (simulated power cut).
    ops: u64,
    cut_after: Option<u64>,
}

impl NandSim {
    /// Erased flash of `geometry` with factory `bad_blocks`.
    pub fn new(geometry: Geometry, timing: NandTiming, bad_blocks: &[ftl::BlockAddr]) -> Self {
        let (ch, ways) = (usize::from(geometry.channels), usize::from(geometry.ways));
        Self {
            array: NandArray::new(geometry, bad_blocks),
            timer: NandTimer::new(timing, ch, ways),
            outstanding: FxHashMap::default(),
            per_die: vec![0; ch * ways],
            seq: 0,
            counters: NandCounters {
                reads_per_channel: vec![0; ch],
                reads_per_die: vec![0; ch * ways],
                ..NandCounters::default()
            },
            faults: faults::FaultDice::default(),
            ops: 0,
            cut_after: None,
        }
    }

    /// Cuts power after `ops` more commands: the last one is torn (a
    /// program leaves its page unreadable), every later one fails with
    /// [`NandError::PowerLost`], and so does every poll from then on (no
    /// completion of a command in flight is reported).
    pub fn cut_power_after(&mut self, ops: u64) {
        self.cut_after = Some(self.ops + ops);
    }

    /// Flash commands issued since power-on (what `cut_power_after`
    /// counts).
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// Whether power has been cut.
    pub fn power_lost(&self) -> bool {
        self.cut_after.is_some_and(|n| self.ops >= n)
    }

    /// Power comes back: commands in flight are gone, the cut is cleared;
    /// the array keeps what was written.
    pub fn restore_power(&mut self) {
        self.outstanding.clear();
        self.timer.reset();
        self.per_die.iter_mut().for_each(|d| *d = 0);
        self.cut_after = None;
    }

    /// Turns on seeded faults (see [`NandFaults`]).
    pub fn set_faults(&mut self, cfg: NandFaults) {
        self.faults = faults::FaultDice::new(cfg);
    }

    /// Faults injected so far.
    pub fn fault_counters(&self) -> FaultCounters {
        self.faults.counters
    }

    /// Queues `cmd` at virtual time `now`; `WouldBlock` when the die's queue
    /// is full.
    pub fn submit(&mut self, now: u64, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), NandError> {
        if self.power_lost() {
            return Err(nb::Error::Other(NandError::PowerLost));
        }
        let (channel, way) = match cmd {
            NandCmd::Read { ppa, .. } | NandCmd::Program { ppa, .. } => {
                self.array.check_page(ppa)?;
                (ppa.channel, ppa.way)
            }
            NandCmd::Erase { block } => {
                self.array.check_block(block)?;
                (block.channel, block.way)
            }
        };
        let die = self.array.geometry().die_index(channel, way) as usize;
        let (ch, way) = (usize::from(channel), usize::from(way));
        if self.per_die[die] >= self.timer.timing().queue_depth {
            return Err(nb::Error::WouldBlock);
        }
        let page_size = self.array.geometry().page_size as usize;
        let (work, status, data) = match cmd {
            NandCmd::Read { ppa, filter } => {
                if !filter.fits(page_size) {
                    return Err(nb::Error::Other(NandError::BadFilter(page_size)));
                }
                let (page, mut status) = self.array.read_shared(ppa)?;
                if let (Some(p), NandStatus::Ok) = (page, status) {
                    filter.spans(|start, len| crate::simd::prefetch(&p[start..start + len]));
                }
                if status == NandStatus::Ok && self.faults.roll(self.faults.cfg.read_ppm) {
                    self.faults.counters.reads += 1;
                    status = NandStatus::Uncorrectable;
                }
                let kept = filter.kept_bytes();
                let work = Work::Read { kept_bytes: kept };
                self.counters.pages_read += 1;
                self.counters.reads_per_channel[ch] += 1;
                self.counters.reads_per_die[die] += 1;
                self.counters.bus_bytes += kept as u64;
                let data = if status == NandStatus::Ok {
                    Data::Read {
                        ppa,
                        filter,
                        taken: None,
                    }
                } else {
                    // The bus moved the bytes, but they must not be used.
                    self.counters.uncorrectable_reads += 1;
                    Data::None
                };
                (work, status, data)
            }
            NandCmd::Program { ppa, data } => {
                self.take_pages_read(|p| p == ppa);
                if self.faults.roll(self.faults.cfg.program_ppm) {
                    self.faults.counters.programs += 1;
                    self.array.inject_worn_block(ppa.block());
                }
                let status = self.array.program(ppa, data)?;
                self.counters.pages_programmed += 1;
                self.counters.bus_bytes += data.len() as u64;
                let work = Work::Program {
                    page_bytes: data.len(),
                };
                (work, status, Data::None)
            }
            NandCmd::Erase { block } => {
                if self.faults.roll(self.faults.cfg.erase_ppm) {
                    self.faults.counters.erases += 1;
                    self.array.inject_worn_block(block);
                }
                self.take_pages_read(|p| p.block() == block);
                let status = self.array.erase(block)?;
                self.counters.blocks_erased += 1;
                (Work::Erase, status, Data::None)
            }
        };
        // A slow channel stretches every stage of its operations.
        let scale = self.faults.slowdown(channel);
        self.timer.submit(now, self.seq, ch, way, work, scale);
        self.ops += 1;
        if self.power_lost() {
            // The last command before the cut is torn.
            if let NandCmd::Program { ppa, .. } = cmd {
                self.array.inject_uncorrectable(ppa);
            }
        }
        let done = NandDone {
            tag,
            status,
            bytes: match &data {
                Data::None => 0,
                Data::Read { filter, .. } => filter.kept_bytes(),
            },
        };
        self.outstanding
            .insert(self.seq, Outstanding { die, done, data });
        self.seq += 1;
        self.per_die[die] += 1;
        Ok(())
    }

    /// The outstanding command that finishes first (ties: first submitted)
    /// and its finish time; a read's kept bytes go to `out`. The board's
    /// clock moves to the finish time: no bus grant after it has been
    /// decided, so commands submitted then still compete for the bus.
    pub fn poll(&mut self, out: &mut [u8]) -> nb::Result<(NandDone, u64), NandError> {
        if self.outstanding.is_empty() {
            return Err(nb::Error::WouldBlock);
        }
        // The controller died with the power: no completion reaches the
        // firmware any more, the torn command's included (it must not be
        // acknowledged as if its page had been written).
        if self.power_lost() {
            return Err(nb::Error::Other(NandError::PowerLost));
        }
        let Some((seq, finish)) = self.timer.next_done() else {
            return Err(nb::Error::WouldBlock);
        };
        let Some(op) = self.outstanding.get(&seq) else {
            // Not ours (dropped by a power loss): never handed back.
            self.timer.take_done();
            return Err(nb::Error::WouldBlock);
        };
        let needed = op.done.bytes;
        if out.len() < needed {
            return Err(nb::Error::Other(NandError::BufferTooSmall {
                needed,
                actual: out.len(),
            }));
        }
        self.timer.take_done();
        let Some(op) = self.outstanding.remove(&seq) else {
            return Err(nb::Error::WouldBlock);
        };
        if let Data::Read { ppa, filter, taken } = &op.data {
            let page_size = self.array.geometry().page_size as usize;
            let page = match taken {
                None => self.array.read_shared(*ppa)?.0.map(|p| &p[..]),
                Some(Taken::Data(p)) => Some(&p[..]),
                Some(Taken::Erased) => None,
            };
            let erased;
            let page = match page {
                Some(p) => p,
                None => {
                    erased = vec![0xFF; page_size];
                    &erased[..]
                }
            };
            filter
                .apply(page, &mut out[..needed])
                .ok_or(NandError::BadFilter(page_size))?;
        }
        self.per_die[op.die] -= 1;
        Ok((op.done, finish))
    }

    /// Before a program or an erase changes the pages `hit` names: every
    /// read in flight of one of them takes the page as it is now (the die
    /// reads before it programs or erases).
    fn take_pages_read(&mut self, hit: impl Fn(ftl::Ppa) -> bool) {
        for op in self.outstanding.values_mut() {
            if let Data::Read {
                ppa,
                taken: taken @ None,
                ..
            } = &mut op.data
                && hit(*ppa)
            {
                *taken = Some(match self.array.read_shared(*ppa) {
                    Ok((Some(p), _)) => Taken::Data(p.clone()),
                    _ => Taken::Erased,
                });
            }
        }
    }

    /// [`Self::poll`] for a command finished by `now` only: `WouldBlock`
    /// when none is. Runs the schedule's events before `now` and none
    /// after, so commands submitted from `now` on compete as before.
    pub fn poll_done(
        &mut self,
        now: u64,
        out: &mut [u8],
    ) -> nb::Result<(NandDone, u64), NandError> {
        if self.outstanding.is_empty() || !self.timer.done_by(now) {
            return Err(nb::Error::WouldBlock);
        }
        self.poll(out)
    }

    /// Commands submitted and not yet polled.
    pub fn in_flight(&self) -> usize {
        self.outstanding.len()
    }

    /// Activity so far.
    pub fn counters(&self) -> NandCounters {
        NandCounters {
            array_busy_ns: self.timer.array_busy_ns(),
            bus_busy_ns: self.timer.bus_busy_ns(),
            ..self.counters.clone()
        }
    }

    /// The page store (fault injection, inspection).
    pub fn array(&self) -> &NandArray {
        &self.array
    }

    /// The page store, mutably (fault hooks).
    pub fn array_mut(&mut self) -> &mut NandArray {
        &mut self.array
    }

    /// The timing parameters.
    pub fn timing(&self) -> &NandTiming {
        self.timer.timing()
    }
}

#[cfg(test)]
mod tests;
