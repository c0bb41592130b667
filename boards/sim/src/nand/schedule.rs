//! The dies and channel buses of the flash as a discrete-event model in
//! virtual time ([`NandTimer`]), evaluated lazily.
//!
//! A die is one (channel, way) pair; its commands run in the order they
//! were queued. Each channel has one bus shared by its ways.
//! - **read**: the array reads the page into the data register for tR
//!   once the array and the data register are free; the page then requests
//!   the bus. Without cache read it leaves from the data register, so the
//!   die's next command waits until it has crossed. With cache read (ONFI
//!   31h) the controller, when another read of the die is queued behind
//!   the page and the page could not leave the data register within
//!   tRCBSY (the bus is busy or claimed, or the transfer is longer than
//!   tRCBSY), moves the page into the cache register (tRCBSY; also when
//!   the cache register is still occupied, once it is free) and the page
//!   requests the bus from there; the array is free for the next read as
//!   soon as the move ends. Otherwise the page is read out of the data
//!   register directly (no tRCBSY).
//! - **program**: once the die is idle (array, data and cache registers
//!   empty) the page requests the bus; when it has crossed, the array
//!   programs for tPROG. Cache program is not modelled.
//! - **erase**: once the die is idle the array erases for tBERS; no bus
//!   (the command bytes are neglected).
//! - **bus arbitration**: when a channel's bus falls free it goes to the
//!   waiting request that became ready first (ties: the lower way); it is
//!   never idle while a request waits (work-conserving). Transfer time:
//!   command overhead + bytes / bus rate.
//!
//! Multi-plane operations are not modelled: `ftl::Geometry` has no planes.
//!
//! **Causality.** Submitting only queues a command. [`NandTimer::next_done`]
//! runs events in time order (die events before grants at equal times, so
//! a grant sees every request ready by then) until the earliest completion
//! is known, and runs no event at or after that completion's time: a
//! command submitted once the board clock has reached that completion
//! requests the bus no earlier, so every grant that it could change is
//! still undecided.

use core::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::min_tree::MinTree;
use super::timing::NandTiming;

/// What one command asks of its die, before scaling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// A page read that hands `kept_bytes` over the bus.
    Read {
        /// Bytes the row filter keeps.
        kept_bytes: usize,
    },
    /// A page program moving `page_bytes` over the bus.
    Program {
        /// Bytes of the page.
        page_bytes: usize,
    },
    /// A block erase.
    Erase,
}

/// A queued command with its durations (scaled for a slow channel).
#[derive(Clone, Copy, Debug)]
struct Cmd {
    id: u64,
    at: u64,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Read { t_r: u64, t_move: u64, bus: u64 },
    Program { bus: u64, t_prog: u64 },
    Erase { t_bers: u64 },
}

/// A page read by the array, on its way to the bus.
#[derive(Clone, Copy, Debug)]
struct Page {
    id: u64,
    t_move: u64,
    bus: u64,
}

/// What the array is doing.
#[derive(Clone, Copy, Debug)]
enum Array {
    Idle,
    /// Reading (`page` lands in the data register at `until`), programming
    /// or erasing.
    Busy {
        until: u64,
        page: Option<Page>,
    },
    /// Held by a program whose data is not in yet.
    Loading,
}

/// A transfer at the register that faces the bus.
#[derive(Clone, Copy, Debug)]
struct Port {
    id: u64,
    bus: u64,
    /// When it requested the bus.
    ready: u64,
    /// When its bus transfer ends, once granted.
    crossing_until: Option<u64>,
    /// A program's tPROG, which follows the transfer.
    then_prog: Option<u64>,
    /// The page leaves from the data register (no cache read for it):
    /// the array cannot read the die's next page until it has crossed.
    holds_data_register: bool,
}

impl Port {
    /// A read page requesting the bus at `t` from the data register
    /// (`holds_data_register`) or from the cache register.
    const fn read(page: Page, t: u64, holds_data_register: bool) -> Self {
        Self {
            id: page.id,
            bus: page.bus,
            ready: t,
            crossing_until: None,
            then_prog: None,
            holds_data_register,
        }
    }
}

#[derive(Clone, Debug)]
struct Die {
    queue: VecDeque<Cmd>,
    array: Array,
    /// A page in the data register, and when its move into the cache
    /// register ends (once started).
    data: Option<(Page, Option<u64>)>,
    port: Option<Port>,
}

impl Die {
    const fn new() -> Self {
        Self {
            queue: VecDeque::new(),
            array: Array::Idle,
            data: None,
            port: None,
        }
    }

    /// Whether the head of the queue may start now: a read needs the array
    /// and the data register, a program or an erase the whole die.
    fn head_startable(&self) -> bool {
        let Some(head) = self.queue.front() else {
            return false;
        };
        let registers_free = matches!(self.array, Array::Idle) && self.data.is_none();
        match head.kind {
            Kind::Read { .. } => registers_free && self.port.is_none_or(|p| !p.holds_data_register),
            Kind::Program { .. } | Kind::Erase { .. } => registers_free && self.port.is_none(),
        }
    }

    /// Whether a read waits at the head of the queue by `t`.
    fn read_waits(&self, t: u64) -> bool {
        self.queue
            .front()
            .is_some_and(|c| c.at <= t && matches!(c.kind, Kind::Read { .. }))
    }

    /// The next time something happens on this die by itself (not a grant).
    fn next_event(&self) -> Option<u64> {
        let array = match self.array {
            Array::Busy { until, .. } => Some(until),
            _ => None,
        };
        let moving = self.data.and_then(|(_, end)| end);
        let crossing = self.port.and_then(|p| p.crossing_until);
        let start = self
            .head_startable()
            .then(|| self.queue.front().map(|c| c.at))
            .flatten();
        [array, moving, crossing, start].into_iter().flatten().min()
    }
}

/// One event: a die's own transition, or a channel's bus grant.
#[derive(Clone, Copy, Debug)]
enum Event {
    Die(usize),
    Grant { channel: usize, die: usize },
}

/// The dies and channel buses of the flash, in virtual time.
#[derive(Clone, Debug)]
pub struct NandTimer {
    timing: NandTiming,
    channels: usize,
    /// Indexed by `way * channels + channel` (`ftl::Geometry::die_index`).
    dies: Vec<Die>,
    /// `Die::next_event` of each die, kept current as the die changes
    /// (nothing but its own commands changes a die).
    die_next: MinTree,
    /// [`Self::grant`] of each channel, kept current the same way (a grant
    /// depends only on the channel's dies and its bus, which change only
    /// with them).
    grant_next: Vec<Option<(u64, Event)>>,
    /// The times of `grant_next`, by channel.
    grant_times: MinTree,
    /// When each channel's bus is next free.
    bus_free: Vec<u64>,
    /// Known completions: (finish, id), earliest first.
    done: BinaryHeap<Reverse<(u64, u64)>>,
    /// Time of the last event run: nothing before it can change.
    horizon: u64,
    array_busy_ns: u64,
    bus_busy_ns: u64,
    /// Every grant, for the tests: (channel, ready, start, end).
    #[cfg(test)]
    grants: Vec<(usize, u64, u64, u64)>,
}

impl NandTimer {
    /// `channels × ways` idle dies.
    pub fn new(timing: NandTiming, channels: usize, ways: usize) -> Self {
        Self {
            timing,
            channels,
            dies: vec![Die::new(); channels * ways],
            die_next: MinTree::new(channels * ways),
            grant_next: vec![None; channels],
            grant_times: MinTree::new(channels),
            bus_free: vec![0; channels],
            done: BinaryHeap::new(),
            horizon: 0,
            array_busy_ns: 0,
            bus_busy_ns: 0,
            #[cfg(test)]
            grants: Vec::new(),
        }
    }

    /// The parameters.
    pub fn timing(&self) -> &NandTiming {
        &self.timing
    }

    /// Queues command `id` (ids rise with submission order) on die
    /// (`channel`, `way`) at `now`; every duration is multiplied by `scale`
    /// (a slow channel). A command cannot act before the last event already
    /// run, so `now` is raised to it if earlier.
    pub fn submit(
        &mut self,
        now: u64,
        id: u64,
        channel: usize,
        way: usize,
        work: Work,
        scale: u64,
    ) {
        let t = self.timing;
        let s = scale.max(1);
        let kind = match work {
            Work::Read { kept_bytes } => Kind::Read {
                t_r: t.t_read_ns * s,
                t_move: if t.cache_read { t.t_cache_ns * s } else { 0 },
                bus: t.bus_ns(kept_bytes) * s,
            },
            Work::Program { page_bytes } => Kind::Program {
                bus: t.bus_ns(page_bytes) * s,
                t_prog: t.t_prog_ns * s,
            },
            Work::Erase => Kind::Erase {
                t_bers: t.t_erase_ns * s,
            },
        };
        let (array, bus) = match kind {
            Kind::Read { t_r, bus, .. } => (t_r, bus),
            Kind::Program { bus, t_prog } => (t_prog, bus),
            Kind::Erase { t_bers } => (t_bers, 0),
        };
        self.array_busy_ns += array;
        self.bus_busy_ns += bus;
        let i = way * self.channels + channel;
        self.dies[i].queue.push_back(Cmd {
            id,
            at: now.max(self.horizon),
            kind,
        });
        self.refresh(i);
    }

    fn refresh(&mut self, i: usize) {
        self.die_next.set(i, self.dies[i].next_event());
        let channel = i % self.channels;
        let grant = self.grant(channel);
        self.grant_next[channel] = grant;
        self.grant_times.set(channel, grant.map(|(t, _)| t));
    }

    /// The earliest completion, `(id, finish)`, without taking it; runs the
    /// events before it. `None` when nothing is queued.
    pub fn next_done(&mut self) -> Option<(u64, u64)> {
        loop {
            let known = self.done.peek().map(|&Reverse((t, _))| t);
            match self.next_event() {
                Some((t, e)) if known.is_none_or(|k| t < k) => self.run(t, e),
                _ => return self.done.peek().map(|&Reverse((t, id))| (id, t)),
            }
        }
    }

    /// Whether a command has finished by `now`: runs the events before
    /// `now` (none at or after it, so a command submitted at `now` still
    /// competes for every later grant) and looks at the earliest known
    /// completion. Every completion due by `now` is known then: it comes
    /// from an event before it. [`Self::next_done`] then returns it.
    pub fn done_by(&mut self, now: u64) -> bool {
        while let Some((t, e)) = self.next_event()
            && t < now
        {
            self.run(t, e);
        }
        self.done.peek().is_some_and(|&Reverse((t, _))| t <= now)
    }

    /// Takes the completion [`Self::next_done`] returned.
    pub fn take_done(&mut self) {
        self.done.pop();
    }

    /// Power loss: every command in flight is gone, dies and buses idle
    /// from time zero. The busy sums are kept.
    pub fn reset(&mut self) {
        self.dies.iter_mut().for_each(|d| *d = Die::new());
        self.die_next.clear();
        self.grant_next.iter_mut().for_each(|g| *g = None);
        self.grant_times.clear();
        self.bus_free.iter_mut().for_each(|b| *b = 0);
        self.done.clear();
        self.horizon = 0;
    }

    /// Sum over dies of array busy time (tR, tPROG, tBERS) of every
    /// command submitted.
    pub fn array_busy_ns(&self) -> u64 {
        self.array_busy_ns
    }

    /// Sum over channels of bus transfer time of every command submitted.
    pub fn bus_busy_ns(&self) -> u64 {
        self.bus_busy_ns
    }

    /// The earliest event: die events before grants at equal times.
    fn next_event(&self) -> Option<(u64, Event)> {
        let die = self.die_next.min().map(|(t, i)| (t, Event::Die(i)));
        let grant = self
            .grant_times
            .min()
            .and_then(|(_, channel)| self.grant_next[channel]);
        match (die, grant) {
            (Some(d), Some(g)) => Some(if g.0 < d.0 { g } else { d }),
            (d, g) => d.or(g),
        }
    }

    /// When `channel`'s bus would next be granted, and to which die: to the
    /// request that became ready first (ties: lower way), when the bus is
    /// free.
    fn grant(&self, channel: usize) -> Option<(u64, Event)> {
        let (ready, die) = (channel..self.dies.len())
            .step_by(self.channels)
            .filter_map(|i| {
                let p = self.dies[i].port?;
                p.crossing_until.is_none().then_some((p.ready, i))
            })
            .min()?;
        let at = ready.max(self.bus_free[channel]);
        Some((at, Event::Grant { channel, die }))
    }

    fn run(&mut self, t: u64, e: Event) {
        debug_assert!(t >= self.horizon, "events run in time order");
        self.horizon = t;
        match e {
            Event::Grant { channel, die } => {
                let Some(p) = self.dies[die].port.as_mut() else {
                    return;
                };
                let end = t + p.bus;
                #[cfg(test)]
                self.grants.push((channel, p.ready, t, end));
                p.crossing_until = Some(end);
                self.bus_free[channel] = end;
                self.done
                    .push(Reverse((end + p.then_prog.unwrap_or(0), p.id)));
                self.refresh(die);
            }
            Event::Die(i) => {
                self.die_events(i, t);
                self.settle(i, t);
                self.refresh(i);
            }
        }
    }

    /// Whether the bus of die `i`'s channel is free at `t` with no request
    /// waiting for it (the controller arbitrates it, so it knows).
    fn bus_idle(&self, i: usize, t: u64) -> bool {
        let channel = i % self.channels;
        self.bus_free[channel] <= t
            && (channel..self.dies.len())
                .step_by(self.channels)
                .all(|j| self.dies[j].port.is_none_or(|p| p.crossing_until.is_some()))
    }

    /// Die `i`'s transitions due at `t`.
    fn die_events(&mut self, i: usize, t: u64) {
        let cache = self.timing.cache_read;
        let bus_idle = self.bus_idle(i, t);
        let d = &mut self.dies[i];
        // A page that has crossed frees its register first, so a page
        // landing at the same time finds it free.
        if let Some(p) = d.port
            && p.crossing_until == Some(t)
        {
            d.port = None;
            if let Some(t_prog) = p.then_prog {
                d.array = Array::Busy {
                    until: t + t_prog,
                    page: None,
                };
            }
        }
        if let Array::Busy { until, page } = d.array
            && until == t
        {
            d.array = Array::Idle;
            if let Some(page) = page {
                // The controller uses cache read where it pays: a read
                // of the die waits, and the page could not be out of
                // the data register within tRCBSY.
                let quick = bus_idle && page.bus <= page.t_move;
                if d.port.is_none() && !(cache && d.read_waits(t) && !quick) {
                    // Nothing to overlap: read out of the data register.
                    d.port = Some(Port::read(page, t, true));
                } else {
                    // Cache read: into the cache register once it is
                    // free (31h, or 3Fh for the last page).
                    d.data = Some((page, None));
                }
            }
        }
        if let Some((page, Some(end))) = d.data
            && end == t
        {
            d.data = None;
            d.port = Some(Port::read(page, t, false));
        }
    }

    /// Starts, at `t`, whatever die `i` can start at once: a page's move
    /// into the free cache register, the head of its queue.
    fn settle(&mut self, i: usize, t: u64) {
        loop {
            let d = &mut self.dies[i];
            if let (Some((page, None)), None) = (d.data, d.port) {
                // tRCBSY; the array is held until the move ends.
                d.data = Some((page, Some(t + page.t_move)));
                if page.t_move == 0 {
                    self.die_events(i, t);
                }
                continue;
            }
            if !(d.head_startable() && d.queue.front().is_some_and(|c| c.at <= t)) {
                return;
            }
            let Some(cmd) = d.queue.pop_front() else {
                return;
            };
            match cmd.kind {
                Kind::Read { t_r, t_move, bus } => {
                    let page = Page {
                        id: cmd.id,
                        t_move,
                        bus,
                    };
                    d.array = Array::Busy {
                        until: t + t_r,
                        page: Some(page),
                    };
                }
                Kind::Program { bus, t_prog } => {
                    d.array = Array::Loading;
                    d.port = Some(Port {
                        id: cmd.id,
                        bus,
                        ready: t,
                        crossing_until: None,
                        then_prog: Some(t_prog),
                        holds_data_register: true,
                    });
                }
                Kind::Erase { t_bers } => {
                    d.array = Array::Busy {
                        until: t + t_bers,
                        page: None,
                    };
                    self.done.push(Reverse((t + t_bers, cmd.id)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
