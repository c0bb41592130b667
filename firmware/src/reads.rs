//! The read queue of a decode batch: filtered page reads that arrive over
//! time (stage 1 of every head at once, stage 2 of a head as soon as its
//! top-k is known) and leave for the NAND controllers as deep as they take
//! them, one queue per die so that a full die does not hold back the
//! others. On each die, reads that finish a head (token pages, whose head
//! has selected) and reads that start one (dim pages) take turns: with
//! many heads in flight, a plain FIFO put every head's dim pages before
//! any token page and left dies idle at the end (SparF at 4 KiB pages, 8
//! sequences of 40 heads: 1.33× the array bound in FIFO order, 1.14× with
//! token pages first or in turns; at 2 sequences and 2048 tokens in turns
//! does best, 1.21× against 1.24× with token pages first). Completions
//! come back in the order they finish, each with the caller's token.
//!
//! A page that fails ECC is read again, up to [`READ_RETRIES`] times,
//! ahead of the reads still waiting for its die; one that fails every time
//! comes back as [`Arrival::Failed`] and its data never reaches the engine.

use crate::counters::Counters;
use crate::flash::{PageRead, READ_RETRIES};
use crate::hal::{Nand, NandCmd, NandStatus};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use proto::Status;

/// One read and what the caller knows it by.
struct Slot<T> {
    read: PageRead,
    token: T,
    tries: usize,
}

/// One die's waiting reads: `[finishing a head, the others]`, and whether
/// the others have the next turn.
type DieQueue = ([VecDeque<u32>; 2], bool);

/// What came back.
pub(crate) enum Arrival<T> {
    /// The kept bytes, `len` of them at the start of the buffer.
    Data { token: T, len: usize },
    /// Every try failed ECC.
    Failed(T),
}

/// Reads waiting for a controller, and reads in flight.
pub(crate) struct ReadQueue<T> {
    slots: Vec<Slot<T>>,
    /// Per die: reads that finish a head, the others, and whether the
    /// others have the next turn.
    per_die: BTreeMap<(u8, u8), DieQueue>,
    waiting: usize,
}

impl<T: Copy> ReadQueue<T> {
    pub fn new() -> Self {
        Self {
            slots: Vec::new(),
            per_die: BTreeMap::new(),
            waiting: 0,
        }
    }

    /// Queues `read` behind the reads of its class (`urgent`: it finishes
    /// a head) already waiting for its die; the two classes take turns.
    pub fn push(&mut self, read: PageRead, token: T, urgent: bool) -> Result<(), Status> {
        let slot = u32::try_from(self.slots.len()).map_err(|_| Status::INTERNAL_ERROR)?;
        self.per_die
            .entry((read.ppa.channel, read.ppa.way))
            .or_default()
            .0[usize::from(!urgent)]
        .push_back(slot);
        self.slots.push(Slot {
            read,
            token,
            tries: 0,
        });
        self.waiting += 1;
        Ok(())
    }

    /// Whether reads wait for a controller that has no room for them.
    pub fn waiting(&self) -> bool {
        self.waiting > 0
    }

    /// Hands every waiting read its controller takes to the controller.
    pub fn pump<B: Nand>(&mut self, board: &mut B) -> Result<(), Status> {
        if self.waiting == 0 {
            return Ok(());
        }
        for (queues, turn) in self.per_die.values_mut() {
            let [high, low] = queues;
            loop {
                let take_low = !low.is_empty() && (high.is_empty() || *turn);
                let queue = if take_low { &mut *low } else { &mut *high };
                let Some(&slot) = queue.front() else { break };
                let r = &self.slots[slot as usize].read;
                let cmd = NandCmd::Read {
                    ppa: r.ppa,
                    filter: r.filter,
                };
                match board.submit(slot, cmd) {
                    Ok(()) => {
                        queue.pop_front();
                        self.waiting -= 1;
                        *turn = !take_low;
                    }
                    Err(nb::Error::WouldBlock) => break,
                    Err(nb::Error::Other(_)) => return Err(Status::INTERNAL_ERROR),
                }
            }
        }
        Ok(())
    }

    /// The next read to finish, its bytes in `buf`; `None` when the queue
    /// is idle.
    pub fn next<B: Nand>(
        &mut self,
        board: &mut B,
        buf: &mut [u8],
        counters: &mut Counters,
    ) -> Result<Option<Arrival<T>>, Status> {
        self.take(board, buf, counters, true)
    }

    /// A read that has finished already ([`Nand::poll_done`]), its bytes
    /// in `buf`; `None` when none has: the firmware goes on with its own
    /// work instead of waiting.
    pub fn ready<B: Nand>(
        &mut self,
        board: &mut B,
        buf: &mut [u8],
        counters: &mut Counters,
    ) -> Result<Option<Arrival<T>>, Status> {
        self.take(board, buf, counters, false)
    }

    fn take<B: Nand>(
        &mut self,
        board: &mut B,
        buf: &mut [u8],
        counters: &mut Counters,
        wait: bool,
    ) -> Result<Option<Arrival<T>>, Status> {
        loop {
            self.pump(board)?;
            if board.in_flight() == 0 {
                return if self.waiting == 0 || !wait {
                    Ok(None)
                } else {
                    // Waiting reads that no controller takes.
                    Err(Status::INTERNAL_ERROR)
                };
            }
            let polled = match wait {
                true => nb::block!(board.poll(buf)).map_err(nb::Error::Other),
                false => board.poll_done(buf),
            };
            let done = match polled {
                Ok(done) => done,
                Err(nb::Error::WouldBlock) => return Ok(None),
                Err(nb::Error::Other(_)) => return Err(Status::INTERNAL_ERROR),
            };
            let i = done.tag as usize;
            let slot = self.slots.get_mut(i).ok_or(Status::INTERNAL_ERROR)?;
            if done.status == NandStatus::Ok {
                counters.pages_read += 1;
                counters.bus_bytes += done.bytes as u64;
                return Ok(Some(Arrival::Data {
                    token: slot.token,
                    len: done.bytes.min(buf.len()),
                }));
            }
            if slot.tries >= READ_RETRIES {
                return Ok(Some(Arrival::Failed(slot.token)));
            }
            // Read retry: a real controller shifts its read voltages.
            slot.tries += 1;
            counters.read_retries += 1;
            let die = (slot.read.ppa.channel, slot.read.ppa.way);
            self.per_die.entry(die).or_default().0[0].push_front(done.tag);
            self.waiting += 1;
        }
    }
}
