//! [`FlashArray`]: the board's [`Nand`] over a NAND storage controller
//! ([`Nsc`]): per-die queues and state machines, page buffers in a DMA
//! window, completions in the order they finish.
//!
//! Each die runs one command at a time through these steps, each of which
//! issues at most one controller command or reads one DRAM word, so a
//! [`Nand::poll`] never blocks and every die makes progress:
//!
//! ```text
//! read:    trigger → status until ready → transfer → completion word → filter
//! program: copy page to the slot → program → status until ready
//! erase:   erase → status until ready
//! ```
//!
//! The NFC row filter runs in software here: after the transfer, only the
//! kept rows are copied out of the page buffer. (The engine's hardware
//! filter sits on the stream into its kernels, which the OpenSSD block
//! designs do not wire yet; see [`crate::engine`].)

mod error;
pub mod nsc;
pub mod report;
pub mod slots;

#[cfg(test)]
mod tests;

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use firmware::hal::{Nand, NandCmd, NandDone, NandStatus, RowFilter};
use ftl::{BlockAddr, Geometry, Ppa};

use crate::mmio::DmaMemory;

pub use error::FlashError;
pub use nsc::{Nsc, NscCmd};
use report::DieStatus;

/// Commands a die may hold (running + queued) before `submit` says
/// `WouldBlock`.
pub const DEFAULT_DEPTH: usize = 4;
/// Default poll budget of one command (polls of its die without progress).
pub const DEFAULT_MAX_POLLS: u32 = 100_000_000;

#[derive(Debug)]
enum Kind {
    Read { ppa: Ppa, filter: RowFilter },
    Program { ppa: Ppa, data: Vec<u8> },
    Erase { block: BlockAddr },
}

#[derive(Debug)]
struct Op {
    tag: u32,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Issue the operation's main command (for a read: the trigger, or the
    /// transfer once `triggered`).
    Command,
    /// Issue a status read.
    StatusIssue,
    /// Wait for the status report.
    StatusWait,
    /// Wait for a read transfer's completion word.
    TransferWait,
}

#[derive(Debug)]
struct Active {
    op: Op,
    step: Step,
    triggered: bool,
    idle_polls: u32,
}

#[derive(Debug, Default)]
struct Die {
    queue: VecDeque<Op>,
    active: Option<Active>,
}

impl Die {
    fn len(&self) -> usize {
        self.queue.len() + usize::from(self.active.is_some())
    }
}

type Finished = Result<(NandDone, Vec<u8>), FlashError>;

/// The NAND array of a board; see the module docs.
#[derive(Debug)]
pub struct FlashArray<C, M> {
    nsc: C,
    mem: M,
    geo: Geometry,
    dies: Vec<Die>,
    done: VecDeque<Finished>,
    depth: usize,
    max_polls: u32,
}

impl<C: Nsc, M: DmaMemory> FlashArray<C, M> {
    /// The array of geometry `geo` behind controller `nsc`, with one
    /// [`slots::SLOT`] per die in `mem`.
    pub fn new(nsc: C, mem: M, geo: Geometry) -> Result<Self, FlashError> {
        let dies = geo.dies() as usize;
        let needed = slots::window_bytes(dies);
        if mem.len() < needed || geo.page_size as usize > slots::DATA_BYTES {
            return Err(FlashError::WindowTooSmall {
                needed,
                have: mem.len(),
            });
        }
        if mem.bus_base() + mem.len() as u64 > 1 << 32 {
            return Err(FlashError::WindowAboveFourGib);
        }
        Ok(Self {
            nsc,
            mem,
            geo,
            dies: (0..dies).map(|_| Die::default()).collect(),
            done: VecDeque::new(),
            depth: DEFAULT_DEPTH,
            max_polls: DEFAULT_MAX_POLLS,
        })
    }

    /// Sets the per-die depth (≥ 1).
    pub fn with_depth(mut self, depth: usize) -> Self {
        self.depth = depth.max(1);
        self
    }

    /// Sets the poll budget of one command.
    pub fn with_max_polls(mut self, polls: u32) -> Self {
        self.max_polls = polls.max(1);
        self
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The controller (tests inspect the model behind it).
    pub fn nsc_mut(&mut self) -> &mut C {
        &mut self.nsc
    }

    fn die_of(&self, channel: u8, way: u8) -> usize {
        self.geo.die_index(channel, way) as usize
    }

    /// Offset of die `die`'s slot field `field` in the window.
    fn at(die: usize, field: usize) -> usize {
        die * slots::SLOT + field
    }

    /// Bus address of die `die`'s slot field `field`.
    fn bus(&self, die: usize, field: usize) -> u32 {
        // `new` checked the whole window lies below 4 GiB.
        (self.mem.bus_base() + Self::at(die, field) as u64) as u32
    }

    fn validate(&self, cmd: &NandCmd<'_>) -> Result<(u8, u8), FlashError> {
        let page = self.geo.page_size as usize;
        match *cmd {
            NandCmd::Read { ppa, filter } => {
                if !self.geo.contains(ppa) {
                    return Err(FlashError::BadAddress);
                }
                if !filter.fits(page) {
                    return Err(FlashError::BadFilter);
                }
                Ok((ppa.channel, ppa.way))
            }
            NandCmd::Program { ppa, data } => {
                if !self.geo.contains(ppa) {
                    return Err(FlashError::BadAddress);
                }
                if data.len() != page {
                    return Err(FlashError::WrongLength { len: data.len() });
                }
                Ok((ppa.channel, ppa.way))
            }
            NandCmd::Erase { block } => {
                if !self.geo.contains_block(block) {
                    return Err(FlashError::BadAddress);
                }
                Ok((block.channel, block.way))
            }
        }
    }

    /// Starts the next queued command of die `d` if it is idle.
    fn activate(&mut self, d: usize) {
        if self.dies[d].active.is_some() {
            return;
        }
        let Some(op) = self.dies[d].queue.pop_front() else {
            return;
        };
        if let Kind::Program { data, .. } = &op.kind {
            self.mem.write(Self::at(d, slots::DATA), data);
            // Spare bytes erased-looking: a 0x00 in the first spare byte
            // of a block's first or last page is the factory bad-block mark.
            self.mem
                .write(Self::at(d, slots::SPARE), &[0xFF; slots::SPARE_BYTES]);
        }
        self.dies[d].active = Some(Active {
            op,
            step: Step::Command,
            triggered: false,
            idle_polls: 0,
        });
    }

    /// Advances die `d` by at most one step; returns its finished command.
    fn step(&mut self, d: usize) -> Option<Finished> {
        self.activate(d);
        let mut a = self.dies[d].active.take()?;
        let (ch, way) = match a.op.kind {
            Kind::Read { ppa, .. } | Kind::Program { ppa, .. } => (ppa.channel, ppa.way),
            Kind::Erase { block } => (block.channel, block.way),
        };
        // Only a new phase counts as progress: a die that stays busy
        // through any number of status reads still runs into the budget.
        let mut progressed = false;
        let mut finished = None;
        match a.step {
            Step::Command | Step::StatusIssue if !self.nsc.can_issue(ch) => {}
            Step::Command => {
                let cmd = self.main_command(d, &a);
                self.nsc.issue(ch, way, cmd);
                a.step = match cmd {
                    NscCmd::ReadTransfer { .. } => Step::TransferWait,
                    _ => Step::StatusIssue,
                };
                progressed = true;
            }
            Step::StatusIssue => {
                self.mem.write_u32(Self::at(d, slots::REPORT), 0);
                let report = self.bus(d, slots::REPORT);
                self.nsc.issue(ch, way, NscCmd::Status { report });
                a.step = Step::StatusWait;
            }
            Step::StatusWait => {
                match report::die_status(self.mem.read_u32(Self::at(d, slots::REPORT))) {
                    DieStatus::Pending => {}
                    // Ask again until the die is ready.
                    DieStatus::Busy => a.step = Step::StatusIssue,
                    DieStatus::Ready { failed } => match a.op.kind {
                        Kind::Read { .. } if !failed => {
                            a.triggered = true;
                            a.step = Step::Command;
                            progressed = true;
                        }
                        Kind::Read { .. } => {
                            finished = Some(self.finish(&a, NandStatus::Uncorrectable, 0))
                        }
                        Kind::Program { .. } => {
                            let s = if failed {
                                NandStatus::ProgramFailed
                            } else {
                                NandStatus::Ok
                            };
                            finished = Some(self.finish(&a, s, 0));
                        }
                        Kind::Erase { .. } => {
                            let s = if failed {
                                NandStatus::EraseFailed
                            } else {
                                NandStatus::Ok
                            };
                            finished = Some(self.finish(&a, s, 0));
                        }
                    },
                }
            }
            Step::TransferWait => {
                if report::transfer_done(self.mem.read_u32(Self::at(d, slots::COMPLETION))) {
                    let w0 = self.mem.read_u32(Self::at(d, slots::ERROR_INFO));
                    let w1 = self.mem.read_u32(Self::at(d, slots::ERROR_INFO) + 4);
                    finished = Some(if report::page_ok(w0, w1) {
                        self.finish_read(d, &a)
                    } else {
                        self.finish(&a, NandStatus::Uncorrectable, 0)
                    });
                }
            }
        }
        if finished.is_some() {
            return finished;
        }
        if progressed {
            a.idle_polls = 0;
        } else {
            a.idle_polls += 1;
            if a.idle_polls >= self.max_polls {
                return Some(Err(FlashError::Timeout {
                    channel: ch,
                    way,
                    tag: a.op.tag,
                }));
            }
        }
        self.dies[d].active = Some(a);
        None
    }

    fn main_command(&mut self, d: usize, a: &Active) -> NscCmd {
        match a.op.kind {
            Kind::Read { ppa, .. } if a.triggered => {
                self.mem.write_u32(Self::at(d, slots::COMPLETION), 0);
                NscCmd::ReadTransfer {
                    row: self.nsc.row(ppa),
                    data: self.bus(d, slots::DATA),
                    spare: self.bus(d, slots::SPARE),
                    error_info: self.bus(d, slots::ERROR_INFO),
                    completion: self.bus(d, slots::COMPLETION),
                }
            }
            Kind::Read { ppa, .. } => NscCmd::ReadTrigger {
                row: self.nsc.row(ppa),
            },
            Kind::Program { ppa, .. } => NscCmd::Program {
                row: self.nsc.row(ppa),
                data: self.bus(d, slots::DATA),
                spare: self.bus(d, slots::SPARE),
            },
            Kind::Erase { block } => NscCmd::Erase {
                row: self.nsc.row(block.page(0)),
            },
        }
    }

    fn finish(&self, a: &Active, status: NandStatus, bytes: usize) -> Finished {
        Ok((
            NandDone {
                tag: a.op.tag,
                status,
                bytes,
            },
            Vec::new(),
        ))
    }

    /// The read's kept bytes, copied row by row out of the page buffer.
    fn finish_read(&mut self, d: usize, a: &Active) -> Finished {
        let Kind::Read { filter, .. } = a.op.kind else {
            return self.finish(a, NandStatus::Ok, 0);
        };
        let mut out = vec![0u8; filter.kept_bytes()];
        let row = usize::from(filter.row_bytes);
        let keep = usize::from(filter.keep_bytes.min(filter.row_bytes));
        let mut n = 0;
        for i in (0..filter.rows).filter(|&i| filter.keeps(i)) {
            let at = Self::at(d, slots::DATA) + usize::from(i) * row;
            self.mem.read(at, &mut out[n..n + keep]);
            n += keep;
        }
        Ok((
            NandDone {
                tag: a.op.tag,
                status: NandStatus::Ok,
                bytes: n,
            },
            out,
        ))
    }
}

impl<C: Nsc, M: DmaMemory> Nand for FlashArray<C, M> {
    type NandError = FlashError;

    fn submit(&mut self, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), FlashError> {
        let (ch, way) = self.validate(&cmd)?;
        let d = self.die_of(ch, way);
        if self.dies[d].len() >= self.depth {
            return Err(nb::Error::WouldBlock);
        }
        let kind = match cmd {
            NandCmd::Read { ppa, filter } => Kind::Read { ppa, filter },
            NandCmd::Program { ppa, data } => Kind::Program {
                ppa,
                data: data.to_vec(),
            },
            NandCmd::Erase { block } => Kind::Erase { block },
        };
        self.dies[d].queue.push_back(Op { tag, kind });
        Ok(())
    }

    fn poll(&mut self, out: &mut [u8]) -> nb::Result<NandDone, FlashError> {
        if self.done.is_empty() {
            for d in 0..self.dies.len() {
                if let Some(f) = self.step(d) {
                    self.done.push_back(f);
                }
            }
        }
        let Some(f) = self.done.front() else {
            return Err(nb::Error::WouldBlock);
        };
        if let Ok((_, data)) = f
            && out.len() < data.len()
        {
            return Err(nb::Error::Other(FlashError::BufferTooSmall {
                needed: data.len(),
            }));
        }
        match self.done.pop_front() {
            Some(Ok((done, data))) => {
                out[..data.len()].copy_from_slice(&data);
                Ok(done)
            }
            Some(Err(e)) => Err(nb::Error::Other(e)),
            None => Err(nb::Error::WouldBlock),
        }
    }

    fn in_flight(&self) -> usize {
        self.dies.iter().map(Die::len).sum::<usize>() + self.done.len()
    }
}
