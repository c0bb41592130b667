//! `instinfer bench soak`: days of service in **virtual** time on a small
//! simulated drive kept near full, with NAND faults and power cuts.
//!
//! Short requests arrive as a Poisson process (heavy-tailed prompts and
//! replies), chat sessions grow turn by turn, shared prompts written at
//! the start stay for the whole run (`service`); the live KV is held
//! under the fill target by admission, the rest waits. The drive collects
//! garbage and levels wear with its defaults, reads fail and blocks go bad
//! at seeded rates, and the power is cut at random (about once a day by
//! default), the host recovering its sequences from its own copies
//! (`drive`). Every decode output is compared with the engine model; a
//! mismatch fails the run. Reported: throughput over time, write
//! amplification, GC's share of the busy time, decode latency
//! percentiles, erase-count spread from the flash's own counts, faults
//! and recoveries, and a chart. Nothing here reads the wall clock.

mod drive;
mod service;

use std::fmt;
use std::path::PathBuf;

use board_sim::{NandFaults, SimConfig};
use ftl::Geometry;

use super::RunError;
use super::plot::{Series, lines};
use super::serving_mix::percentile;
use drive::{Recovery, SoakDrive, Totals};
use service::{STEP_NS, Service, spread};

/// Bench settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakParams {
    /// Virtual days served.
    pub days: f64,
    /// Live KV kept under this share of the drive's usable pages.
    pub fill: f64,
    /// Mean virtual seconds between two request arrivals.
    pub request_interval_s: f64,
    /// Chat sessions.
    pub sessions: u32,
    /// Power cuts per virtual day, on average (0: none).
    pub cuts_per_day: f64,
    /// NAND faults (off: none): 200 reads per million fail ECC once (read
    /// retry takes them), 5 programs and 50 erases per million fail and
    /// retire their block. Per operation, not per wear: on this small,
    /// much-rewritten drive the erase rate retires a few blocks a week.
    pub faults: bool,
    /// Virtual hours per line of the time series.
    pub bucket_hours: f64,
    /// Erase-count spread past which static wear levelling moves a cold
    /// block (`None`: the FTL's default, `GcConfig::wear_spread`).
    pub wear_spread: Option<u32>,
    /// Workload and fault seed.
    pub seed: u64,
    /// Where to write the chart (PNG), if anywhere.
    pub chart: Option<PathBuf>,
}

impl Default for SoakParams {
    fn default() -> Self {
        Self {
            days: 7.0,
            fill: 0.9,
            request_interval_s: 20.0,
            sessions: 8,
            cuts_per_day: 1.0,
            faults: true,
            bucket_hours: 12.0,
            wear_spread: None,
            seed: 1,
            chart: None,
        }
    }
}

impl SoakParams {
    fn validate(&self) -> Result<(), RunError> {
        let bad = |what: &str| Err(RunError::Input(format!("bench soak: {what}")));
        if !(self.days > 0.0 && self.days <= 365.0) {
            return bad("--days must be in (0, 365]");
        }
        if !(0.5..=0.95).contains(&self.fill) {
            return bad("--fill must be in 0.5..=0.95");
        }
        if !(self.request_interval_s >= 0.05 && self.request_interval_s <= 86_400.0) {
            return bad("--request-interval must be in 0.05..=86400 seconds");
        }
        if self.sessions > 16 {
            return bad("--sessions must be at most 16");
        }
        if !(0.0..=1000.0).contains(&self.cuts_per_day) {
            return bad("--cuts-per-day must be in 0..=1000");
        }
        if !(self.bucket_hours >= 0.01 && self.bucket_hours <= 24.0 * 365.0) {
            return bad("--bucket-hours must be in 0.01..=8760");
        }
        Ok(())
    }
}

/// One line of the time series.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// Virtual day at the line's end.
    pub end_day: f64,
    /// Decode steps per virtual second.
    pub steps_per_s: f64,
    /// Write amplification within the line.
    pub write_amplification: f64,
    /// GC's share of the busy time within the line.
    pub gc_share: f64,
    /// Busy share of the virtual time within the line.
    pub busy_share: f64,
    /// p99 decode latency within the line, ns.
    pub p99_ns: u64,
    /// Live KV the host holds at the end, share of the usable pages.
    pub fill: f64,
    /// Valid flash pages at the end, share of the usable pages.
    pub flash_fill: f64,
    /// Free blocks at the end.
    pub free_blocks: u64,
    /// Largest erase count over the mean (flash's counts).
    pub erase_max_over_mean: f64,
    /// Power cuts within the line.
    pub cuts: u64,
}

/// The bench's result.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakReport {
    /// Settings.
    pub params: SoakParams,
    /// The drive's geometry.
    pub geometry: Geometry,
    /// Pages host data may take (GC's reserve and the journal's block left
    /// out), at the start and at the end (blocks go bad).
    pub usable_pages: (u64, u64),
    /// Virtual days served.
    pub virtual_days: f64,
    /// Counters over every life.
    pub totals: TotalsView,
    /// Decode latency (ready to output, virtual), ns: p50, p99, p99.9.
    pub latency: (u64, u64, u64),
    /// Admission wait of requests, ns: p50, p99.
    pub admission: (u64, u64),
    /// Decode outputs compared with the engine model (all equal).
    pub outputs: u64,
    /// What the service did.
    pub service: ServiceCounts,
    /// Commands failed with a status (not lack of room).
    pub failed: u64,
    /// Host writes refused for lack of room.
    pub no_room: u64,
    /// Sequences the host dropped when the drive had no room to take
    /// their copies back.
    pub dropped: u64,
    /// Fewest free blocks after any command.
    pub min_free_blocks: u64,
    /// Live KV share: time-weighted mean and peak.
    pub fill: (f64, f64),
    /// Erase counts from the flash (all lives): min, mean, max.
    pub erase: (u32, f64, u32),
    /// Power cuts and recovery.
    pub recovery: RecoveryView,
    /// NAND faults injected: reads, programs, erases.
    pub faults: (u64, u64, u64),
    /// Bad blocks the FTL knows at the end (this life).
    pub bad_blocks: u64,
    /// The time series.
    pub buckets: Vec<Bucket>,
}

/// What the service did over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServiceCounts {
    /// Requests served to their last token.
    pub requests_done: u64,
    /// Requests ended early by a refused or failed command.
    pub requests_aborted: u64,
    /// Requests that found the waiting line full.
    pub turned_away: u64,
    /// Session turns served.
    pub session_turns: u64,
    /// Sessions that reached their length and started over.
    pub conversations: u64,
    /// Sessions closed to make room.
    pub evictions: u64,
    /// Decodes of the shared prompts (one each per line of the series).
    pub prefix_checks: u64,
}

/// Counters summed over the drive's lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TotalsView {
    /// Flash pages programmed per page of host data.
    pub write_amplification: f64,
    /// GC's share of the busy time.
    pub gc_share: f64,
    /// Busy share of the virtual time.
    pub busy_share: f64,
    /// Blocks GC collected.
    pub gc_blocks: u64,
    /// Cold blocks moved for wear levelling.
    pub wear_moves: u64,
    /// Pages moved by GC and off bad blocks.
    pub pages_moved: u64,
}

impl From<Totals> for TotalsView {
    fn from(t: Totals) -> Self {
        Self {
            write_amplification: t.write_amplification(),
            gc_share: t.gc_share(),
            busy_share: t.on_ns.saturating_sub(t.idle_ns) as f64 / t.on_ns.max(1) as f64,
            gc_blocks: t.gc_blocks,
            wear_moves: t.wear_moves,
            pages_moved: t.moved,
        }
    }
}

/// Power cuts and what the host re-did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecoveryView {
    /// Power cuts.
    pub cuts: u64,
    /// Of them, cuts while GC ran.
    pub in_gc: u64,
    /// Sequences the drive reported lost.
    pub lost: u64,
    /// Tokens appended again from the host's copies.
    pub tokens: u64,
    /// Ids the drive reported lost that the host did not hold.
    pub unknown_lost: u64,
    /// Mean virtual time from power-on to every sequence back, ns.
    pub mean_ns: u64,
}

impl From<Recovery> for RecoveryView {
    fn from(r: Recovery) -> Self {
        Self {
            cuts: r.cuts,
            in_gc: r.in_gc,
            lost: r.lost,
            tokens: r.tokens,
            unknown_lost: r.unknown_lost,
            mean_ns: r.ns / r.cuts.max(1),
        }
    }
}

/// The soak's drive: 2 channels × 2 ways of 64 blocks of 16 pages of
/// 4 KiB (16 MiB), small enough that days of service rewrite it many
/// times over.
pub fn soak_geometry() -> Geometry {
    Geometry {
        channels: 2,
        ways: 2,
        blocks_per_die: 64,
        pages_per_block: 16,
        page_size: 4096,
    }
}

fn config(p: &SoakParams) -> SimConfig {
    let mut c = SimConfig::new(4096);
    c.geometry = soak_geometry();
    c.max_sequences = 64;
    c.max_streams = 256;
    c.dram_budget = 1 << 20;
    if let Some(w) = p.wear_spread {
        let mut g = ftl::GcConfig::for_geometry(&c.geometry);
        g.wear_spread = w;
        c.gc = Some(g);
    }
    if p.faults {
        c.faults = NandFaults {
            seed: p.seed ^ 0x5eed,
            read_ppm: 200,
            program_ppm: 5,
            erase_ppm: 50,
            slow_channel: None,
        };
    }
    c
}

/// Runs the soak.
pub fn run_soak(p: &SoakParams) -> Result<SoakReport, RunError> {
    p.validate()?;
    let cfg = config(p);
    let geometry = cfg.geometry;
    let drive = SoakDrive::new(cfg)?;
    let usable = drive.usable_pages();
    let mut s = Service::new(p, drive);
    let end = (p.days * 86_400e9) as u64;
    let served = s
        .start()
        .and_then(|()| s.run(end, (p.bucket_hours * 3600e9) as u64));
    if let Err(e) = served {
        return Err(RunError::Input(format!(
            "bench soak: stopped at virtual day {:.3} ({} decode outputs checked until then): {e}",
            s.d.now() as f64 / 86_400e9,
            s.d.outputs
        )));
    }
    let seen = &mut s.seen;
    seen.latencies.sort_unstable();
    seen.admission_waits.sort_unstable();
    let d = &s.d;
    let erases = d.erase_counts();
    let (max, mean) = spread(&erases);
    let faults = d.faults();
    let now = d.now();
    let report = SoakReport {
        params: p.clone(),
        geometry,
        usable_pages: (usable, d.usable_pages()),
        virtual_days: now as f64 / 86_400e9,
        totals: d.totals().into(),
        latency: (
            percentile(&seen.latencies, 0.5),
            percentile(&seen.latencies, 0.99),
            percentile(&seen.latencies, 0.999),
        ),
        admission: (
            percentile(&seen.admission_waits, 0.5),
            percentile(&seen.admission_waits, 0.99),
        ),
        outputs: d.outputs,
        service: seen.counts,
        failed: d.failed,
        no_room: d.no_room,
        dropped: d.dropped,
        min_free_blocks: d.min_free_blocks,
        fill: (seen.fill_time_weighted / now.max(1) as f64, seen.peak_fill),
        erase: (erases.iter().copied().min().unwrap_or(0), mean, max),
        recovery: d.recovery.into(),
        faults: (faults.reads, faults.programs, faults.erases),
        bad_blocks: d.ftl().bad_blocks,
        buckets: std::mem::take(&mut seen.buckets),
    };
    if let Some(path) = &p.chart {
        chart(&report, path)?;
    }
    Ok(report)
}

fn chart(r: &SoakReport, path: &std::path::Path) -> Result<(), RunError> {
    let pick = |f: &dyn Fn(&Bucket) -> f64| -> Vec<(f64, f64)> {
        r.buckets.iter().map(|b| (b.end_day, f(b))).collect()
    };
    let series: Vec<Series> = vec![
        ("decode steps / s".into(), pick(&|b| b.steps_per_s)),
        (
            "live KV (% of usable pages)".into(),
            pick(&|b| b.fill * 100.0),
        ),
        ("GC (% of busy time)".into(), pick(&|b| b.gc_share * 100.0)),
        ("decode p99 (ms)".into(), pick(&|b| b.p99_ns as f64 / 1e6)),
        (
            "write amplification".into(),
            pick(&|b| b.write_amplification),
        ),
        (
            "erase count max / mean".into(),
            pick(&|b| b.erase_max_over_mean),
        ),
    ];
    lines(
        path,
        "bench soak: a drive near full for days (virtual time)",
        "virtual day",
        "value (log scale)",
        &series,
        false,
        true,
    )
}

fn us(ns: u64) -> String {
    format!("{:.0}", ns as f64 / 1e3)
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        let g = &self.geometry;
        writeln!(
            f,
            "bench soak: {:.2} virtual days on a {}-die drive of {} blocks × {} pages × {} B ({} usable pages at the start, {} at the end), live KV under {:.0} % of them, seed {} (virtual time)",
            self.virtual_days,
            g.dies(),
            g.blocks_per_die,
            g.pages_per_block,
            g.page_size,
            self.usable_pages.0,
            self.usable_pages.1,
            p.fill * 100.0,
            p.seed
        )?;
        writeln!(
            f,
            "service: {} requests done, {} aborted, {} turned away (one every {} s on average); {} session turns ({} sessions, {} new conversations, {} evicted for room); a decode step every {} ms per generating sequence, queue depth 1",
            self.service.requests_done,
            self.service.requests_aborted,
            self.service.turned_away,
            p.request_interval_s,
            self.service.session_turns,
            p.sessions,
            self.service.conversations,
            self.service.evictions,
            STEP_NS / 1_000_000
        )?;
        writeln!(
            f,
            "checks: {} decode outputs equal to attention::engine::dense_group ({} of them on the shared prompts written at the start); {} commands failed with a status; {} host writes refused for lack of room; {} sequences dropped for lack of room when taken back",
            self.outputs, self.service.prefix_checks, self.failed, self.no_room, self.dropped
        )?;
        let t = &self.totals;
        writeln!(
            f,
            "drive: write amplification {:.3} (limit 1.000), GC {:.2} % of the busy time (limit 0), busy {:.2} % of the virtual time; {} blocks collected, {} pages moved, {} wear-levelling moves; fewest free blocks {}",
            t.write_amplification,
            t.gc_share * 100.0,
            t.busy_share * 100.0,
            t.gc_blocks,
            t.pages_moved,
            t.wear_moves,
            self.min_free_blocks
        )?;
        writeln!(
            f,
            "decode latency (ready to output, virtual): p50 {} us, p99 {} us, p99.9 {} us; request admission wait p50 {} ms, p99 {} ms",
            us(self.latency.0),
            us(self.latency.1),
            us(self.latency.2),
            self.admission.0 / 1_000_000,
            self.admission.1 / 1_000_000
        )?;
        writeln!(
            f,
            "fill: live KV {:.1} % of the usable pages on average over time, peak {:.1} %",
            self.fill.0 * 100.0,
            self.fill.1 * 100.0
        )?;
        writeln!(
            f,
            "erase counts (the flash's own, every life): min {} mean {:.2} max {}, max/mean {:.2}",
            self.erase.0,
            self.erase.1,
            self.erase.2,
            if self.erase.1 > 0.0 {
                f64::from(self.erase.2) / self.erase.1
            } else {
                0.0
            }
        )?;
        let r = &self.recovery;
        writeln!(
            f,
            "power cuts: {} ({} while GC ran); {} sequences reported lost and appended again ({} tokens), {:.1} ms virtual from power-on to the last one back on average; {} ids reported lost that the host did not hold",
            r.cuts,
            r.in_gc,
            r.lost,
            r.tokens,
            r.mean_ns as f64 / 1e6,
            r.unknown_lost
        )?;
        writeln!(
            f,
            "NAND faults injected: {} failed reads, {} failed programs, {} failed erases; {} bad blocks known at the end",
            self.faults.0, self.faults.1, self.faults.2, self.bad_blocks
        )?;
        writeln!(
            f,
            "{:>7} {:>9} {:>7} {:>7} {:>7} {:>10} {:>7} {:>7} {:>6} {:>8} {:>5}",
            "day",
            "steps/s",
            "WA",
            "GC %",
            "busy %",
            "p99 (us)",
            "live %",
            "flash %",
            "free",
            "max/mean",
            "cuts"
        )?;
        for b in &self.buckets {
            writeln!(
                f,
                "{:>7.2} {:>9.2} {:>7.3} {:>7.2} {:>7.2} {:>10} {:>7.1} {:>7.1} {:>6} {:>8.2} {:>5}",
                b.end_day,
                b.steps_per_s,
                b.write_amplification,
                b.gc_share * 100.0,
                b.busy_share * 100.0,
                us(b.p99_ns),
                b.fill * 100.0,
                b.flash_fill * 100.0,
                b.free_blocks,
                b.erase_max_over_mean,
                b.cuts
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
