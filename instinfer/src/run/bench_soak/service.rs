//! The service the soak runs, as discrete events in virtual time: short
//! requests arriving as a Poisson process (heavy-tailed prompts and
//! replies, admitted while the live KV stays under the fill target, else
//! queued), chat sessions that grow turn by turn and start a new
//! conversation at their length limit (or are evicted when the drive is
//! full), and shared prompts written once and kept for the whole run.
//! A sequence that is generating takes a decode step every
//! [`STEP_NS`] after its last one ended (the host's share of a token).
//! One command at a time (queue depth 1): a step that becomes ready while
//! the drive is busy waits, and its latency counts the wait. Power cuts
//! come as a Poisson process too.

use std::collections::VecDeque;

use attention::testdata::SplitMix64;

use super::super::RunError;
use super::super::serving_mix::{D, exponential_ns, pages_per_token, pareto, percentile, token};
use super::drive::{Outcome, SoakDrive, Totals};
use super::{Bucket, ServiceCounts, SoakParams};

/// Host time between two decode steps of one sequence (the rest of the
/// model's layers and the sampling): 30 ms.
pub(super) const STEP_NS: u64 = 30_000_000;
/// Mean think time between a session's turns: 5 minutes.
const THINK_NS: f64 = 300e9;
/// Shared prompts kept for the whole run.
const PREFIXES: u32 = 4;
/// First session id; requests take ids from `REQUEST_BASE` on.
const SESSION_BASE: u32 = 100;
const REQUEST_BASE: u32 = 1000;
/// Requests generating at once, at most.
const MAX_ACTIVE: usize = 32;
/// Requests waiting for room, at most (more are turned away).
const MAX_WAITING: usize = 512;
/// A deferred session turn tries again after a minute.
const DEFER_NS: u64 = 60_000_000_000;

const DAY_NS: f64 = 86_400e9;

struct Session {
    id: u32,
    limit: u32,
    next_turn: u64,
    generating: bool,
}

struct Gen {
    id: u32,
    left: u32,
    ready: u64,
    session: Option<usize>,
}

struct Waiting {
    arrived: u64,
    prompt: u32,
    reply: u32,
}

/// What the service saw, beside the drive's own counters.
#[derive(Default)]
pub(super) struct Seen {
    pub latencies: Vec<u64>,
    pub admission_waits: Vec<u64>,
    pub counts: ServiceCounts,
    pub buckets: Vec<Bucket>,
    pub peak_fill: f64,
    pub fill_time_weighted: f64,
}

pub(super) struct Service<'a> {
    p: &'a SoakParams,
    r: SplitMix64,
    pub d: SoakDrive,
    sessions: Vec<Session>,
    gens: Vec<Gen>,
    waiting: VecDeque<Waiting>,
    free_ids: Vec<u32>,
    next_request: u64,
    next_cut: u64,
    pub seen: Seen,
    fill_at: (u64, f64),
}

impl<'a> Service<'a> {
    pub fn new(p: &'a SoakParams, d: SoakDrive) -> Self {
        let mut r = SplitMix64::new(p.seed);
        let next_request = exponential_ns(&mut r, p.request_interval_s * 1e9);
        let next_cut = cut_wait(&mut r, p.cuts_per_day);
        Self {
            p,
            r,
            d,
            sessions: Vec::new(),
            gens: Vec::new(),
            waiting: VecDeque::new(),
            free_ids: (0..MAX_ACTIVE as u32)
                .rev()
                .map(|i| REQUEST_BASE + i)
                .collect(),
            next_request,
            next_cut,
            seen: Seen::default(),
            fill_at: (0, 0.0),
        }
    }

    /// Live tokens the host holds plus those its generating sequences
    /// will still add.
    fn committed(&self) -> f64 {
        let live: usize = self.d.seqs.values().map(|s| s.len()).sum();
        let coming: u32 = self.gens.iter().map(|g| g.left).sum();
        (live + coming as usize) as f64
    }

    /// Tokens the drive can hold now (see [`SoakDrive::usable_pages`]).
    pub fn cap_tokens(&self) -> f64 {
        self.d.usable_pages() as f64 / pages_per_token()
    }

    fn fits(&self, tokens: u32) -> bool {
        self.committed() + f64::from(tokens) <= self.p.fill * self.cap_tokens()
    }

    fn note_fill(&mut self) {
        let now = self.d.now();
        let fill = self.d.seqs.values().map(|s| s.len()).sum::<usize>() as f64 / self.cap_tokens();
        let (t0, f0) = self.fill_at;
        self.seen.fill_time_weighted += f0 * now.saturating_sub(t0) as f64;
        self.fill_at = (now, fill);
        self.seen.peak_fill = self.seen.peak_fill.max(fill);
    }

    fn tokens(&mut self, n: u32) -> (Vec<u16>, Vec<u16>) {
        let (mut k, mut v) = (Vec::with_capacity(n as usize * D), Vec::new());
        for _ in 0..n {
            k.extend(token(&mut self.r));
            v.extend(token(&mut self.r));
        }
        (k, v)
    }

    /// Appends `n` fresh tokens; a power cut repeats the append.
    fn append(&mut self, id: u32, n: u32) -> Result<Outcome, RunError> {
        let (k, v) = self.tokens(n);
        loop {
            match self.d.append(id, &k, &v)? {
                Outcome::PowerCut => continue,
                o => return Ok(o),
            }
        }
    }

    fn open(&mut self, id: u32) -> Result<Outcome, RunError> {
        loop {
            match self.d.open(id)? {
                Outcome::PowerCut => continue,
                o => return Ok(o),
            }
        }
    }

    /// Closes `id`, whatever its state (a failed close is rebuilt and
    /// closed again).
    fn close(&mut self, id: u32) -> Result<(), RunError> {
        loop {
            match self.d.close(id)? {
                Outcome::Done => return Ok(()),
                Outcome::PowerCut => continue,
                Outcome::NoRoom | Outcome::Failed(_) => self.d.rebuild(id)?,
            }
        }
    }

    /// Writes the shared prompts and opens the sessions.
    pub fn start(&mut self) -> Result<(), RunError> {
        let share = (self.p.fill - 0.3).max(0.0);
        let per = (share * self.cap_tokens() / f64::from(PREFIXES)) as u32;
        for id in 0..PREFIXES {
            if self.open(id)? != Outcome::Done {
                return Err(RunError::Input(
                    "bench soak: a shared prompt would not open".into(),
                ));
            }
            let mut left = per;
            while left > 0 {
                let n = left.min(1024);
                if self.append(id, n)? != Outcome::Done {
                    return Err(RunError::Input(
                        "bench soak: the shared prompts do not fit the drive".into(),
                    ));
                }
                left -= n;
            }
        }
        for i in 0..self.p.sessions {
            let id = SESSION_BASE + i;
            self.open(id)?;
            let limit = 1000 + self.r.below(3000) as u32;
            let next_turn = exponential_ns(&mut self.r, THINK_NS);
            self.sessions.push(Session {
                id,
                limit,
                next_turn,
                generating: false,
            });
        }
        self.note_fill();
        Ok(())
    }

    /// Serves until `end` (virtual ns), closing a bucket every
    /// `bucket_ns`.
    pub fn run(&mut self, end: u64, bucket_ns: u64) -> Result<(), RunError> {
        let mut bucket_end = bucket_ns;
        let mut mark = Mark::now(self);
        loop {
            let gen_at = self.gens.iter().map(|g| g.ready).min().unwrap_or(u64::MAX);
            let turn_at = self
                .sessions
                .iter()
                .filter(|s| !s.generating)
                .map(|s| s.next_turn)
                .min()
                .unwrap_or(u64::MAX);
            let t = gen_at
                .min(turn_at)
                .min(self.next_request)
                .min(self.next_cut)
                .min(bucket_end);
            if t >= end {
                break;
            }
            self.d.idle_until(t)?;
            if t == bucket_end {
                self.check_prefixes()?;
                let b = mark.close(self, t);
                self.seen.buckets.push(b);
                mark = Mark::now(self);
                bucket_end += bucket_ns;
            } else if t == self.next_cut {
                let ops = self.r.below(64);
                self.d.arm_cut(ops);
                self.next_cut = t + cut_wait(&mut self.r, self.p.cuts_per_day);
            } else if t == self.next_request {
                self.arrive(t);
                self.admit()?;
                self.next_request =
                    t + exponential_ns(&mut self.r, self.p.request_interval_s * 1e9);
            } else if t == gen_at {
                let i = self.gens.iter().position(|g| g.ready == t).unwrap_or(0);
                self.step(i)?;
            } else {
                let i = self
                    .sessions
                    .iter()
                    .position(|s| !s.generating && s.next_turn == t)
                    .unwrap_or(0);
                self.turn(i)?;
            }
            self.note_fill();
        }
        self.d.idle_until(end)?;
        self.note_fill();
        if bucket_end - bucket_ns < end {
            let b = mark.close(self, end);
            self.seen.buckets.push(b);
        }
        Ok(())
    }

    fn arrive(&mut self, t: u64) {
        let prompt = pareto(&mut self.r, 48.0, 1.3, 2048);
        let reply = pareto(&mut self.r, 8.0, 1.5, 256);
        if self.waiting.len() >= MAX_WAITING {
            self.seen.counts.turned_away += 1;
        } else {
            self.waiting.push_back(Waiting {
                arrived: t,
                prompt,
                reply,
            });
        }
    }

    /// Admits waiting requests in order while they fit.
    fn admit(&mut self) -> Result<(), RunError> {
        while let Some(w) = self.waiting.front() {
            if self.free_ids.is_empty() || !self.fits(w.prompt + w.reply) {
                break;
            }
            let w = self.waiting.pop_front().expect("front exists");
            let id = self.free_ids.pop().expect("checked non-empty");
            self.seen
                .admission_waits
                .push(self.d.now().saturating_sub(w.arrived));
            if self.open(id)? != Outcome::Done {
                self.seen.counts.requests_aborted += 1;
                self.free_ids.push(id);
                continue;
            }
            if self.append(id, w.prompt)? != Outcome::Done {
                self.seen.counts.requests_aborted += 1;
                self.close(id)?;
                self.free_ids.push(id);
                continue;
            }
            let ready = self.d.now();
            self.gens.push(Gen {
                id,
                left: w.reply,
                ready,
                session: None,
            });
        }
        Ok(())
    }

    /// A session's turn: the user's tokens, then its reply.
    fn turn(&mut self, i: usize) -> Result<(), RunError> {
        let (user, reply) = (
            pareto(&mut self.r, 24.0, 1.5, 400),
            pareto(&mut self.r, 16.0, 1.5, 256),
        );
        let id = self.sessions[i].id;
        if !self.d.holds(id) {
            // Dropped for lack of room when the drive took copies back.
            self.restart_session(i)?;
            self.seen.counts.evictions += 1;
        }
        let len = self.d.seqs.get(&id).map_or(0, |s| s.len()) as u32;
        if len + user + reply > self.sessions[i].limit {
            // A new conversation.
            self.restart_session(i)?;
            self.seen.counts.conversations += 1;
        } else if !self.fits(user + reply) {
            // No room: the session's KV is evicted (recomputed later by
            // the host, out of this drive's concern).
            self.restart_session(i)?;
            self.seen.counts.evictions += 1;
        }
        if !self.fits(user + reply) {
            self.sessions[i].next_turn = self.d.now() + DEFER_NS;
            return Ok(());
        }
        match self.append(id, user)? {
            Outcome::Done => {}
            _ => {
                self.d.rebuild(id)?;
                self.sessions[i].next_turn = self.d.now() + DEFER_NS;
                return Ok(());
            }
        }
        self.seen.counts.session_turns += 1;
        self.sessions[i].generating = true;
        let ready = self.d.now();
        self.gens.push(Gen {
            id,
            left: reply,
            ready,
            session: Some(i),
        });
        Ok(())
    }

    fn restart_session(&mut self, i: usize) -> Result<(), RunError> {
        let id = self.sessions[i].id;
        self.close(id)?;
        if self.open(id)? != Outcome::Done {
            return Err(RunError::Input(format!(
                "bench soak: session {id} would not open again"
            )));
        }
        self.sessions[i].limit = 1000 + self.r.below(3000) as u32;
        Ok(())
    }

    /// One decode step of generator `i`.
    fn step(&mut self, i: usize) -> Result<(), RunError> {
        let (id, ready) = (self.gens[i].id, self.gens[i].ready);
        if !self.d.holds(id) {
            // Dropped for lack of room when the drive took copies back.
            return self.finish(i, false);
        }
        let (q, k, v) = (token(&mut self.r), token(&mut self.r), token(&mut self.r));
        let outcome = self.d.decode(id, &q, &k, &v)?;
        let now = self.d.now();
        match outcome {
            Outcome::Done => {
                self.seen.latencies.push(now.saturating_sub(ready));
                let g = &mut self.gens[i];
                g.left -= 1;
                g.ready = now + STEP_NS;
                if g.left == 0 {
                    self.finish(i, true)?;
                }
            }
            Outcome::PowerCut => self.gens[i].ready = now + STEP_NS,
            Outcome::NoRoom | Outcome::Failed(_) => self.finish(i, false)?,
        }
        Ok(())
    }

    /// Generator `i` is done (or failed).
    fn finish(&mut self, i: usize, ok: bool) -> Result<(), RunError> {
        let g = self.gens.swap_remove(i);
        match g.session {
            Some(s) => {
                if !ok {
                    self.d.rebuild(g.id)?;
                }
                self.sessions[s].generating = false;
                self.sessions[s].next_turn = self.d.now() + exponential_ns(&mut self.r, THINK_NS);
            }
            None => {
                self.close(g.id)?;
                self.free_ids.push(g.id);
                if ok {
                    self.seen.counts.requests_done += 1;
                } else {
                    self.seen.counts.requests_aborted += 1;
                }
                self.admit()?;
            }
        }
        Ok(())
    }

    /// One decode of each shared prompt: data written at the start and
    /// moved by GC and wear levelling since must still be there.
    fn check_prefixes(&mut self) -> Result<(), RunError> {
        for id in 0..PREFIXES {
            if !self.d.holds(id) {
                return Err(RunError::Input(format!(
                    "bench soak: shared prompt {id} was dropped for lack of room"
                )));
            }
            let (q, k, v) = (token(&mut self.r), token(&mut self.r), token(&mut self.r));
            loop {
                match self.d.decode(id, &q, &k, &v)? {
                    Outcome::Done => break,
                    Outcome::PowerCut => continue,
                    Outcome::NoRoom | Outcome::Failed(_) => {
                        self.d.rebuild(id)?;
                        break;
                    }
                }
            }
            self.seen.counts.prefix_checks += 1;
        }
        Ok(())
    }
}

fn cut_wait(r: &mut SplitMix64, per_day: f64) -> u64 {
    if per_day <= 0.0 {
        u64::MAX
    } else {
        exponential_ns(r, DAY_NS / per_day)
    }
}

/// Counters at a bucket's start.
struct Mark {
    t: u64,
    totals: Totals,
    outputs: u64,
    latencies: usize,
    cuts: u64,
}

impl Mark {
    fn now(s: &Service<'_>) -> Self {
        Self {
            t: s.d.now(),
            totals: s.d.totals(),
            outputs: s.d.outputs,
            latencies: s.seen.latencies.len(),
            cuts: s.d.recovery.cuts,
        }
    }

    fn close(self, s: &Service<'_>, t: u64) -> Bucket {
        let dt = s.d.totals().since(self.totals);
        let mut lat = s.seen.latencies[self.latencies..].to_vec();
        lat.sort_unstable();
        let erases = s.d.erase_counts();
        let (max, mean) = spread(&erases);
        let ftl = s.d.ftl();
        let live: usize = s.d.seqs.values().map(|q| q.len()).sum();
        Bucket {
            end_day: t as f64 / DAY_NS,
            steps_per_s: (s.d.outputs - self.outputs) as f64 / ((t - self.t).max(1) as f64 / 1e9),
            write_amplification: dt.write_amplification(),
            gc_share: dt.gc_share(),
            busy_share: dt.on_ns.saturating_sub(dt.idle_ns) as f64 / dt.on_ns.max(1) as f64,
            p99_ns: percentile(&lat, 0.99),
            fill: live as f64 / s.cap_tokens(),
            flash_fill: ftl.valid_pages as f64 / s.d.usable_pages().max(1) as f64,
            free_blocks: ftl.free_blocks,
            erase_max_over_mean: if mean > 0.0 {
                f64::from(max) / mean
            } else {
                0.0
            },
            cuts: s.d.recovery.cuts - self.cuts,
        }
    }
}

/// The largest erase count and the mean over every block.
pub(super) fn spread(erases: &[u32]) -> (u32, f64) {
    let max = erases.iter().copied().max().unwrap_or(0);
    let mean = erases.iter().map(|&e| f64::from(e)).sum::<f64>() / erases.len().max(1) as f64;
    (max, mean)
}
