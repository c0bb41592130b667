//! `instinfer bench gc`: the FTL's garbage collection under a serving
//! mix on a small simulated drive, greedy against cost-benefit victims in
//! the same run, beside a drive large enough never to collect (the
//! physical limit: write amplification 1, no copying).
//!
//! The mix: long-lived sessions that grow turn by turn (and restart when
//! they reach their length limit) between short requests that open,
//! prefill a heavy-tailed prompt, decode a heavy-tailed number of tokens
//! (each step stores its token: DECODE_SUBMIT with APPEND_KV) and close;
//! requests are admitted while the live KV stays under the fill target.
//! Every decode output is compared with the engine model
//! (`attention::engine::dense_group`) on the host's copy of the sequence;
//! a mismatch fails the run. All times are **virtual** (the simulated
//! board's clock); nothing here reads the wall clock.

use std::fmt;

use attention::shape::Method;
use attention::testdata::SplitMix64;
use board_sim::{SimConfig, SimCsd};
use ftl::{GcConfig, GcPolicy, Geometry};
use host_driver::csd::{Csd, CsdError};
use host_driver::transport::SimTransport;

use super::RunError;
use super::serving_mix::{D, HostSeq, SHAPE, pages_per_token, pareto, percentile, token};

/// Bench settings.
#[derive(Clone, Debug, PartialEq)]
pub struct GcParams {
    /// Requests served per drive.
    pub requests: usize,
    /// Live KV kept under this share of the drive's usable pages.
    pub fill: f64,
    /// Workload seed.
    pub seed: u64,
}

impl Default for GcParams {
    fn default() -> Self {
        Self {
            requests: 400,
            fill: 0.8,
            seed: 1,
        }
    }
}

/// One drive's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct GcRow {
    /// `greedy`, `cost-benefit` or `no GC needed`.
    pub label: &'static str,
    /// Flash pages programmed per page of host data.
    pub write_amplification: f64,
    /// Live pages GC moved; blocks it collected.
    pub pages_moved: u64,
    /// Blocks collected.
    pub blocks: u64,
    /// Erase counts of usable blocks: min, mean, max.
    pub erase: (u64, f64, u64),
    /// Share of the virtual time spent in GC's copies and erases.
    pub gc_share: f64,
    /// Virtual decode latency (submit to output), ns: p50, p99, p99.9.
    pub latency: (u64, u64, u64),
    /// Decode outputs compared with the engine model (all equal).
    pub outputs: u64,
    /// Host writes refused for lack of room.
    pub refused: u64,
    /// Peak live share of the usable pages.
    pub peak_fill: f64,
    /// Virtual seconds the run took on the drive.
    pub virtual_s: f64,
}

/// The bench's result.
#[derive(Clone, Debug, PartialEq)]
pub struct GcReport {
    /// Settings.
    pub params: GcParams,
    /// Greedy, cost-benefit, then the large drive.
    pub rows: Vec<GcRow>,
}

/// Sessions kept open.
const SESSIONS: u32 = 3;
/// Tokens a session may reach before it restarts.
const SESSION_MAX: u32 = 3000;

fn geometry(blocks_per_die: u32) -> Geometry {
    Geometry {
        channels: 2,
        ways: 2,
        blocks_per_die,
        pages_per_block: 16,
        page_size: 4096,
    }
}

struct Drive {
    csd: Csd<SimTransport>,
    seqs: std::collections::BTreeMap<u32, HostSeq>,
    latencies: Vec<u64>,
    outputs: u64,
    refused: u64,
    peak: f64,
    usable_pages: f64,
}

fn err(e: CsdError) -> RunError {
    RunError::Device(e)
}

impl Drive {
    fn new(blocks_per_die: u32, policy: Option<GcPolicy>) -> Result<Self, RunError> {
        let mut c = SimConfig::new(4096);
        c.geometry = geometry(blocks_per_die);
        c.max_sequences = 64;
        c.max_streams = 256;
        c.dram_budget = 512 << 10;
        if let Some(p) = policy {
            let mut g = GcConfig::for_geometry(&c.geometry);
            g.policy = p;
            g.low_free = 6;
            g.critical_free = 2;
            c.gc = Some(g);
        }
        let usable = f64::from(c.geometry.dies() * (c.geometry.blocks_per_die - 2))
            * f64::from(c.geometry.pages_per_block);
        let dev = SimCsd::new(c).map_err(|e| RunError::Input(format!("bench gc: {e}")))?;
        let t = SimTransport::with_device(dev, 64)
            .map_err(|e| RunError::Input(format!("bench gc: {e}")))?;
        Ok(Self {
            csd: Csd::new(t).map_err(err)?,
            seqs: Default::default(),
            latencies: Vec::new(),
            outputs: 0,
            refused: 0,
            peak: 0.0,
            usable_pages: usable,
        })
    }

    fn live_share(&self) -> f64 {
        let tokens: usize = self.seqs.values().map(|s| s.len()).sum();
        tokens as f64 * pages_per_token() / self.usable_pages
    }

    fn open(&mut self, id: u32) -> Result<(), RunError> {
        self.csd.open(id, SHAPE).map_err(err)?;
        self.seqs.insert(id, HostSeq::default());
        Ok(())
    }

    fn close(&mut self, id: u32) -> Result<(), RunError> {
        self.csd.close(id).map_err(err)?;
        self.seqs.remove(&id);
        Ok(())
    }

    /// Appends `n` tokens; false if the drive had no room (nothing
    /// changed).
    fn append(&mut self, id: u32, n: u32, r: &mut SplitMix64) -> Result<bool, RunError> {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        for _ in 0..n {
            k.extend(token(r));
            v.extend(token(r));
        }
        let at = self.seqs.get(&id).map_or(0, HostSeq::len) as u32;
        match self.csd.append(id, 0, at, &k, &v) {
            Ok(()) => {}
            Err(CsdError::Status { status, .. })
                if status.same_code(&proto::Status::CAPACITY_EXCEEDED) =>
            {
                self.refused += 1;
                return Ok(false);
            }
            Err(e) => return Err(err(e)),
        }
        let s = self.seqs.entry(id).or_default();
        s.k.extend(k);
        s.v.extend(v);
        self.peak = self.peak.max(self.live_share());
        Ok(true)
    }

    /// One decode step that stores a new token first; its output checked
    /// against the engine model.
    fn decode(&mut self, id: u32, r: &mut SplitMix64) -> Result<bool, RunError> {
        let (q, kn, vn) = (token(r), token(r), token(r));
        let pos = self.seqs.get(&id).map_or(0, HostSeq::len) as u32;
        let start = self.csd.transport().device().now_ns();
        let t = match self
            .csd
            .submit_decode(id, 0, pos, &q, Some((&kn, &vn)), Method::Dense)
        {
            Ok(t) => t,
            Err(CsdError::Status { status, .. })
                if status.same_code(&proto::Status::CAPACITY_EXCEEDED) =>
            {
                self.refused += 1;
                return Ok(false);
            }
            Err(e) => return Err(err(e)),
        };
        let out = self.csd.fetch(t).map_err(err)?;
        self.latencies
            .push(self.csd.transport().device().now_ns().saturating_sub(start));
        let s = self.seqs.entry(id).or_default();
        s.k.extend(&kn);
        s.v.extend(&vn);
        s.check(&q, &out.raw, &format!("bench gc: sequence {id} at {pos}"))?;
        self.outputs += 1;
        Ok(true)
    }
}

/// Serves the mix on one drive.
fn serve(p: &GcParams, label: &'static str, mut d: Drive) -> Result<GcRow, RunError> {
    let mut r = SplitMix64::new(p.seed);
    for s in 0..SESSIONS {
        d.open(s)?;
    }
    let mut next = SESSIONS;
    for req in 0..p.requests {
        // A turn of each session: a few tokens of prompt, a short reply.
        let s = (req as u32) % SESSIONS;
        let turn = pareto(&mut r, 24.0, 1.5, 400);
        if d.live_share() + f64::from(turn) * pages_per_token() / d.usable_pages < p.fill {
            d.append(s, turn, &mut r)?;
            for _ in 0..2 {
                d.decode(s, &mut r)?;
            }
        }
        if d.seqs
            .get(&s)
            .is_some_and(|q| q.k.len() / D >= SESSION_MAX as usize)
        {
            d.close(s)?;
            d.open(s)?;
        }
        // A short request, if it fits under the fill target.
        let prompt = pareto(&mut r, 48.0, 1.3, 2048);
        let reply = pareto(&mut r, 8.0, 1.5, 96);
        let need = f64::from(prompt + reply) * pages_per_token() / d.usable_pages;
        if d.live_share() + need > p.fill {
            continue;
        }
        let id = next;
        next = SESSIONS + (next + 1 - SESSIONS) % 40;
        d.open(id)?;
        if d.append(id, prompt, &mut r)? {
            for _ in 0..reply {
                if !d.decode(id, &mut r)? {
                    break;
                }
            }
        }
        d.close(id)?;
    }
    let st = d.csd.stats().map_err(err)?;
    let host = st
        .flash_pages_programmed
        .saturating_sub(st.gc_pages_moved + st.pages_relocated);
    d.latencies.sort_unstable();
    Ok(GcRow {
        label,
        write_amplification: if host == 0 {
            1.0
        } else {
            st.flash_pages_programmed as f64 / host as f64
        },
        pages_moved: st.gc_pages_moved,
        blocks: st.gc_blocks,
        erase: (
            st.erase_count_min,
            st.erase_count_total as f64 / st.usable_blocks.max(1) as f64,
            st.erase_count_max,
        ),
        gc_share: st.virtual_ns_gc as f64 / st.virtual_ns_total.max(1) as f64,
        latency: (
            percentile(&d.latencies, 0.5),
            percentile(&d.latencies, 0.99),
            percentile(&d.latencies, 0.999),
        ),
        outputs: d.outputs,
        refused: d.refused,
        peak_fill: d.peak,
        virtual_s: st.virtual_ns_total as f64 / 1e9,
    })
}

/// Runs the bench: the same mix on a 24-block-per-die drive with each
/// victim policy, and on a 256-block-per-die drive (no GC needed).
pub fn run_gc_bench(p: &GcParams) -> Result<GcReport, RunError> {
    if !(0.1..=0.95).contains(&p.fill) || p.requests == 0 {
        return Err(RunError::Input(
            "bench gc: --fill in 0.1..=0.95 and --requests ≥ 1".into(),
        ));
    }
    let rows = vec![
        serve(p, "greedy", Drive::new(24, Some(GcPolicy::Greedy))?)?,
        serve(
            p,
            "cost-benefit",
            Drive::new(24, Some(GcPolicy::CostBenefit))?,
        )?,
        serve(
            &GcParams {
                fill: p.fill * 24.0 / 256.0,
                ..p.clone()
            },
            "no GC needed (10.7x the flash)",
            Drive::new(256, None)?,
        )?,
    ];
    Ok(GcReport {
        params: p.clone(),
        rows,
    })
}

impl fmt::Display for GcReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "bench gc: {} requests, live KV under {:.0} % of the usable pages, seed {} (virtual time)",
            self.params.requests,
            self.params.fill * 100.0,
            self.params.seed
        )?;
        writeln!(
            f,
            "{:<30} {:>6} {:>8} {:>7} {:>16} {:>7} {:>28} {:>8} {:>7} {:>6} {:>9}",
            "drive",
            "WA",
            "moved",
            "blocks",
            "erases min/mean/max",
            "GC %",
            "decode p50/p99/p99.9 (us)",
            "outputs",
            "refused",
            "peak",
            "virtual s"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<30} {:>6.3} {:>8} {:>7} {:>16} {:>7.2} {:>28} {:>8} {:>7} {:>5.0}% {:>9.2}",
                r.label,
                r.write_amplification,
                r.pages_moved,
                r.blocks,
                format!("{}/{:.2}/{}", r.erase.0, r.erase.1, r.erase.2),
                r.gc_share * 100.0,
                format!(
                    "{:.0}/{:.0}/{:.0}",
                    r.latency.0 as f64 / 1e3,
                    r.latency.1 as f64 / 1e3,
                    r.latency.2 as f64 / 1e3
                ),
                r.outputs,
                r.refused,
                r.peak_fill * 100.0,
                r.virtual_s
            )?;
        }
        writeln!(
            f,
            "every decode output equal to attention::engine::dense_group; WA = flash pages programmed / pages of host data"
        )
    }
}
