//! The soak's drive as a serving host holds it: a simulated InstCSD whose
//! power may be cut at any flash command, the host's copy of every
//! sequence it keeps open, and the recovery a host runs when the drive
//! comes back (every sequence it held answers Sequence Lost; each is
//! acknowledged, opened again and its KV appended again from the host's
//! copy). Counters of every power-on life are summed. Time is the
//! drive's **virtual** clock, continued across lives.

use std::collections::BTreeMap;

use attention::shape::Method;
use board_sim::{SimConfig, SimCsd};
use ftl::GcConfig;
use host_driver::csd::{Csd, CsdError};
use host_driver::transport::SimTransport;
use proto::{StatsLog, Status};

use super::super::RunError;
use super::super::serving_mix::{D, HostSeq, SHAPE};

/// What became of one host command.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome {
    /// Done (a decode's output equal to the engine model).
    Done,
    /// No room on the drive (Capacity Exceeded); nothing changed.
    NoRoom,
    /// Failed with another status: the sequence's state on the drive is
    /// unknown (the caller closes or rebuilds it).
    Failed(Status),
    /// The power went during the command; the drive came back and every
    /// sequence the host held was appended again (the command's effect is
    /// not in the host's copy: the caller repeats it if it still wants it).
    PowerCut,
}

/// Counters summed over the drive's lives.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Totals {
    /// Flash pages programmed (host data, GC and bad-block moves, journal).
    pub programmed: u64,
    /// Of those, live pages GC moved and pages moved off bad blocks.
    pub moved: u64,
    /// Virtual time in GC's copies and erases, ns.
    pub gc_ns: u64,
    /// Virtual time powered on, ns (busy and idle).
    pub on_ns: u64,
    /// Of that, idle (waiting for the host), ns.
    pub idle_ns: u64,
    /// Blocks GC collected.
    pub gc_blocks: u64,
    /// Cold blocks moved for wear levelling.
    pub wear_moves: u64,
}

impl Totals {
    fn of_life(s: &StatsLog, idle_ns: u64) -> Self {
        Self {
            programmed: s.flash_pages_programmed,
            moved: s.gc_pages_moved + s.pages_relocated,
            gc_ns: s.virtual_ns_gc,
            on_ns: s.virtual_ns_total,
            idle_ns,
            gc_blocks: s.gc_blocks,
            wear_moves: s.wear_moves,
        }
    }

    fn plus(self, o: Self) -> Self {
        Self {
            programmed: self.programmed + o.programmed,
            moved: self.moved + o.moved,
            gc_ns: self.gc_ns + o.gc_ns,
            on_ns: self.on_ns + o.on_ns,
            idle_ns: self.idle_ns + o.idle_ns,
            gc_blocks: self.gc_blocks + o.gc_blocks,
            wear_moves: self.wear_moves + o.wear_moves,
        }
    }

    /// `self − earlier`, field by field.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            programmed: self.programmed - earlier.programmed,
            moved: self.moved - earlier.moved,
            gc_ns: self.gc_ns - earlier.gc_ns,
            on_ns: self.on_ns - earlier.on_ns,
            idle_ns: self.idle_ns - earlier.idle_ns,
            gc_blocks: self.gc_blocks - earlier.gc_blocks,
            wear_moves: self.wear_moves - earlier.wear_moves,
        }
    }

    /// Flash pages programmed per page the host asked for (1 = no GC).
    pub fn write_amplification(self) -> f64 {
        let host = self.programmed.saturating_sub(self.moved);
        if host == 0 {
            1.0
        } else {
            self.programmed as f64 / host as f64
        }
    }

    /// Share of the busy (not idle) virtual time spent in GC.
    pub fn gc_share(self) -> f64 {
        self.gc_ns as f64 / self.on_ns.saturating_sub(self.idle_ns).max(1) as f64
    }
}

/// Recovery after power cuts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Recovery {
    /// Power cuts.
    pub cuts: u64,
    /// Of them, cuts that landed while GC was running.
    pub in_gc: u64,
    /// Sequences the drive reported lost (each one the host held).
    pub lost: u64,
    /// Tokens appended again from the host's copies.
    pub tokens: u64,
    /// Ids the drive reported lost that the host did not hold.
    pub unknown_lost: u64,
    /// Virtual time from power-on to the last sequence appended again, ns.
    pub ns: u64,
}

pub(super) struct SoakDrive {
    csd: Option<Csd<SimTransport>>,
    cfg: SimConfig,
    /// Virtual time at this life's power-on, ns.
    epoch: u64,
    /// Counters of the lives that ended in a power cut.
    past: Totals,
    /// The host's copy of every sequence it holds open.
    pub seqs: BTreeMap<u32, HostSeq>,
    pub recovery: Recovery,
    /// Decode outputs compared with the engine model (all equal).
    pub outputs: u64,
    /// Commands that failed with a status other than Capacity Exceeded.
    pub failed: u64,
    /// Host writes refused for lack of room.
    pub no_room: u64,
    /// Fewest free blocks the FTL had after any command.
    pub min_free_blocks: u64,
    /// Sequences the host dropped because the drive had no room to take
    /// their copies back (after a power cut or a failed command).
    pub dropped: u64,
    gc_blocks_before: u64,
}

fn io(e: impl std::fmt::Display) -> RunError {
    RunError::Input(format!("bench soak: {e}"))
}

/// Tokens per KV_APPEND when appending a whole copy again.
const CHUNK: usize = 1024;

impl SoakDrive {
    pub fn new(cfg: SimConfig) -> Result<Self, RunError> {
        let dev = SimCsd::new(cfg.clone()).map_err(io)?;
        let csd =
            Csd::new(SimTransport::with_device(dev, 64).map_err(io)?).map_err(RunError::Device)?;
        Ok(Self {
            csd: Some(csd),
            cfg,
            epoch: 0,
            past: Totals::default(),
            seqs: BTreeMap::new(),
            recovery: Recovery::default(),
            outputs: 0,
            failed: 0,
            no_room: 0,
            min_free_blocks: u64::MAX,
            dropped: 0,
            gc_blocks_before: 0,
        })
    }

    fn csd(&mut self) -> &mut Csd<SimTransport> {
        self.csd
            .as_mut()
            .expect("the drive is always present between calls")
    }

    fn sim(&self) -> &SimCsd {
        self.csd
            .as_ref()
            .expect("the drive is always present between calls")
            .transport()
            .device()
    }

    /// Virtual time, ns, continued across lives.
    pub fn now(&self) -> u64 {
        self.epoch + self.sim().now_ns()
    }

    /// Counters of every life so far.
    pub fn totals(&self) -> Totals {
        let s = self.sim();
        self.past
            .plus(Totals::of_life(&s.device().stats(), s.idle_ns()))
    }

    /// Pages host data may take now: the blocks not retired, less GC's
    /// reserve on every die and the journal's block. It shrinks as blocks
    /// go bad; the host admits work against it.
    pub fn usable_pages(&self) -> u64 {
        let g = self.cfg.geometry;
        let reserve = u64::from(GcConfig::for_geometry(&g).critical_free) * u64::from(g.dies()) + 1;
        self.ftl().usable_blocks.saturating_sub(reserve) * u64::from(g.pages_per_block)
    }

    /// The FTL of this life (free blocks, valid pages, its erase counts).
    pub fn ftl(&self) -> ftl::FtlStats {
        self.sim().device().ftl().stats()
    }

    /// The flash's own erase count of every block (all lives).
    pub fn erase_counts(&self) -> Vec<u32> {
        self.sim().erase_counts().to_vec()
    }

    /// NAND faults injected so far (all lives).
    pub fn faults(&self) -> board_sim::FaultCounters {
        self.sim().fault_counters()
    }

    /// The power goes after `ops` more flash commands.
    pub fn arm_cut(&mut self, ops: u64) {
        self.gc_blocks_before = self.ftl().gc_blocks;
        self.csd().transport_mut().device_mut().cut_power_after(ops);
    }

    /// Nothing from the host until `t` (virtual ns): the drive's idle work,
    /// then idle time. A power cut inside the idle work is recovered.
    pub fn idle_until(&mut self, t: u64) -> Result<(), RunError> {
        let local = t.saturating_sub(self.epoch);
        self.csd().transport_mut().device_mut().idle_until(local);
        if self.sim().power_lost() {
            self.recover(None)?;
        }
        Ok(())
    }

    /// After a command: the power cut's recovery, or the outcome of `r`.
    fn settle<T>(
        &mut self,
        seq: u32,
        r: Result<T, CsdError>,
    ) -> Result<Result<T, Outcome>, RunError> {
        if self.sim().power_lost() {
            if r.is_ok() {
                // Acknowledged before the cut (GC after the command was
                // cut): the caller applies it, the recovery appends it.
                return Ok(r.map_err(|_| Outcome::PowerCut));
            }
            self.recover(Some(seq))?;
            return Ok(Err(Outcome::PowerCut));
        }
        let free = self.ftl().free_blocks;
        self.min_free_blocks = self.min_free_blocks.min(free);
        match r {
            Ok(v) => Ok(Ok(v)),
            Err(CsdError::Status { status, .. })
                if status.same_code(&Status::CAPACITY_EXCEEDED) =>
            {
                self.no_room += 1;
                Ok(Err(Outcome::NoRoom))
            }
            Err(CsdError::Status { status, .. }) => {
                self.failed += 1;
                Ok(Err(Outcome::Failed(status)))
            }
            Err(e) => Err(RunError::Device(e)),
        }
    }

    /// Opens `seq` (empty in the host's copy). An id the drive reports
    /// lost although the host did not hold it (a close whose journal
    /// record a cut tore, never acknowledged) is acknowledged and opened.
    pub fn open(&mut self, seq: u32) -> Result<Outcome, RunError> {
        let mut r = self.csd().open(seq, SHAPE);
        if let Err(CsdError::Status { status, .. }) = &r
            && *status == Status::SEQ_LOST
            && !self.sim().power_lost()
        {
            self.recovery.unknown_lost += 1;
            self.csd().close_lost(seq).map_err(RunError::Device)?;
            r = self.csd().open(seq, SHAPE);
        }
        Ok(match self.settle(seq, r)? {
            Ok(()) => {
                self.seqs.insert(seq, HostSeq::default());
                self.after_cut_check()?
            }
            Err(o) => o,
        })
    }

    /// Closes `seq` and drops the host's copy (nothing to do for a
    /// sequence already dropped).
    pub fn close(&mut self, seq: u32) -> Result<Outcome, RunError> {
        if !self.holds(seq) && self.csd().shape(seq).is_none() {
            return Ok(Outcome::Done);
        }
        let r = self.csd().close(seq);
        Ok(match self.settle(seq, r)? {
            Ok(()) => {
                self.seqs.remove(&seq);
                // Closed before a cut after the command: nothing to keep.
                if self.sim().power_lost() {
                    self.recover(None)?;
                }
                Outcome::Done
            }
            Err(o) => o,
        })
    }

    /// Appends `k`/`v` (`n` tokens of fp16 bits) to `seq`.
    pub fn append(&mut self, seq: u32, k: &[u16], v: &[u16]) -> Result<Outcome, RunError> {
        let at = self.seqs.get(&seq).map_or(0, HostSeq::len) as u32;
        let r = self.csd().append(seq, 0, at, k, v);
        Ok(match self.settle(seq, r)? {
            Ok(()) => {
                let s = self.seqs.entry(seq).or_default();
                s.k.extend_from_slice(k);
                s.v.extend_from_slice(v);
                self.after_cut_check()?
            }
            Err(o) => o,
        })
    }

    /// One decode step of `seq` that stores a new token first (DECODE_SUBMIT
    /// with APPEND_KV); its output checked against the engine model.
    pub fn decode(
        &mut self,
        seq: u32,
        q: &[u16],
        k: &[u16],
        v: &[u16],
    ) -> Result<Outcome, RunError> {
        let pos = self.seqs.get(&seq).map_or(0, HostSeq::len) as u32;
        let csd = self.csd();
        let r = csd
            .submit_decode(seq, 0, pos, q, Some((k, v)), Method::Dense)
            .and_then(|t| csd.fetch(t));
        Ok(match self.settle(seq, r)? {
            Ok(out) => {
                let s = self.seqs.entry(seq).or_default();
                s.k.extend_from_slice(k);
                s.v.extend_from_slice(v);
                s.check(q, &out.raw, &format!("bench soak: sequence {seq} at {pos}"))?;
                self.outputs += 1;
                self.after_cut_check()?
            }
            Err(o) => o,
        })
    }

    /// A command that succeeded with the power cut right after it.
    fn after_cut_check(&mut self) -> Result<Outcome, RunError> {
        if self.sim().power_lost() {
            self.recover(None)?;
            // The command's effect is in the host's copy and was appended
            // again: done.
        }
        Ok(Outcome::Done)
    }

    /// Closes `seq` on the drive whatever its state, opens it again and
    /// appends the host's copy (a sequence whose last command failed).
    /// If the drive has no room for it, the host drops it (see
    /// [`Self::put_back`]).
    pub fn rebuild(&mut self, seq: u32) -> Result<(), RunError> {
        let copy = self.seqs.remove(&seq).unwrap_or_default();
        let csd = self.csd();
        if csd.shape(seq).is_some() {
            csd.close(seq).map_err(RunError::Device)?;
        }
        if self.put_back(seq, &copy)?.is_some() {
            self.seqs.insert(seq, copy);
        }
        Ok(())
    }

    /// Opens `seq` and appends `copy`: the tokens appended, or `None`
    /// when the host dropped the sequence (counted): the drive had no room
    /// for it, or failed it twice with another status (each failure
    /// counted too). A failed attempt's sequence is closed first.
    fn put_back(&mut self, seq: u32, copy: &HostSeq) -> Result<Option<u64>, RunError> {
        for _ in 0..2 {
            let status = match self.try_put_back(seq, copy) {
                Ok(n) => return Ok(Some(n)),
                Err(CsdError::Status { status, .. }) => status,
                Err(e) => return Err(RunError::Device(e)),
            };
            let csd = self.csd();
            if csd.shape(seq).is_some() {
                csd.close(seq).map_err(RunError::Device)?;
            }
            if status.same_code(&Status::CAPACITY_EXCEEDED) {
                self.no_room += 1;
                break;
            }
            self.failed += 1;
        }
        self.dropped += 1;
        Ok(None)
    }

    fn try_put_back(&mut self, seq: u32, copy: &HostSeq) -> Result<u64, CsdError> {
        let csd = self.csd();
        csd.open(seq, SHAPE)?;
        let n = copy.len();
        let mut at = 0;
        while at < n {
            let end = (at + CHUNK).min(n);
            csd.append(
                seq,
                0,
                at as u32,
                &copy.k[at * D..end * D],
                &copy.v[at * D..end * D],
            )?;
            at = end;
        }
        Ok(n as u64)
    }

    /// Whether the host still holds `seq` (a sequence dropped for lack of
    /// room is not).
    pub fn holds(&self, seq: u32) -> bool {
        self.seqs.contains_key(&seq)
    }

    /// Power back on: the drive boots through its journal; every sequence
    /// the host held must answer Sequence Lost (but `torn`, the one whose
    /// command the cut interrupted, which may not have reached the
    /// journal); each is acknowledged, opened and appended again.
    fn recover(&mut self, torn: Option<u32>) -> Result<(), RunError> {
        let dead = self
            .csd
            .take()
            .expect("the drive is always present between calls")
            .into_transport()
            .into_device();
        let life = Totals::of_life(&dead.device().stats(), dead.idle_ns());
        if dead.device().ftl().stats().gc_blocks > self.gc_blocks_before {
            self.recovery.in_gc += 1;
        }
        self.past = self.past.plus(life);
        self.epoch += dead.now_ns();
        let dev = dead.restart(self.cfg.clone()).map_err(io)?;
        self.csd = Some(
            Csd::new(SimTransport::with_device(dev, 64).map_err(io)?).map_err(RunError::Device)?,
        );
        self.recovery.cuts += 1;
        if let Some(t) = torn.filter(|t| !self.seqs.contains_key(t)) {
            // Opened by the torn command, perhaps journaled: acknowledge
            // whatever the drive says.
            let _ = self.csd().close_lost(t);
        }
        let ids: Vec<u32> = self.seqs.keys().copied().collect();
        for id in ids {
            match self.csd().open(id, SHAPE) {
                Err(CsdError::Status { status, .. }) if status == Status::SEQ_LOST => {
                    self.recovery.lost += 1;
                    self.csd().close_lost(id).map_err(RunError::Device)?;
                }
                Ok(()) if Some(id) == torn => {
                    // Its open never reached the journal: nothing lost.
                    self.csd().close(id).map_err(RunError::Device)?;
                }
                Ok(()) => {
                    return Err(RunError::Attention(format!(
                        "bench soak: after a power cut the drive opened sequence {id} again without reporting it lost"
                    )));
                }
                Err(e) => return Err(RunError::Device(e)),
            }
            let copy = self.seqs.get(&id).cloned().unwrap_or_default();
            match self.put_back(id, &copy)? {
                Some(n) => self.recovery.tokens += n,
                None => {
                    self.seqs.remove(&id);
                }
            }
        }
        self.recovery.ns += self.sim().now_ns();
        Ok(())
    }
}
