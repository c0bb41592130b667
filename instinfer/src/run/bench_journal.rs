//! `instinfer bench journal`: what the power-loss journal costs each
//! command, in **virtual** time on the simulated drive. The same script
//! (open a sequence, append a prompt, decode a few steps, close it) runs
//! on a drive with the journal and on one without, in the same run;
//! SEQ_OPEN and SEQ_CLOSE are the journaled commands (one snapshot page
//! programmed each, an erase when the journal moves to a new block),
//! KV_APPEND and the decode pair are shown as the control. Also the
//! power-on time each drive takes (the journal's boot scan).

use std::fmt;

use attention::shape::Method;
use attention::testdata::SplitMix64;
use board_sim::{SimConfig, SimCsd};
use host_driver::csd::Csd;
use host_driver::transport::SimTransport;

use super::RunError;
use super::serving_mix::{D, SHAPE, percentile, token};

/// Bench settings.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalParams {
    /// Sequences opened and closed per drive.
    pub sequences: u32,
    /// Flash page size (4096 or 16384).
    pub page_size: u32,
    /// Workload seed.
    pub seed: u64,
}

impl Default for JournalParams {
    fn default() -> Self {
        Self {
            sequences: 300,
            page_size: 16384,
            seed: 1,
        }
    }
}

/// Virtual time per command kind on one drive, ns: mean and p99.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommandTimes {
    /// Power-on to ready.
    pub boot_ns: u64,
    /// SEQ_OPEN, SEQ_CLOSE, KV_APPEND (256 tokens), decode step.
    pub open: (f64, u64),
    /// See `open`.
    pub close: (f64, u64),
    /// See `open`.
    pub append: (f64, u64),
    /// See `open`.
    pub decode: (f64, u64),
}

/// The bench's result.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalReport {
    /// Settings.
    pub params: JournalParams,
    /// Journal on (the default on every board).
    pub on: CommandTimes,
    /// Journal off.
    pub off: CommandTimes,
}

const PROMPT: u32 = 256;
const STEPS: u32 = 4;

fn summary(mut v: Vec<u64>) -> (f64, u64) {
    v.sort_unstable();
    let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    (mean, percentile(&v, 0.99))
}

fn drive(p: &JournalParams, journal: bool) -> Result<CommandTimes, RunError> {
    let input = |e: &dyn fmt::Display| RunError::Input(format!("bench journal: {e}"));
    let mut c = SimConfig::new(p.page_size);
    c.journal = journal;
    let dev = SimCsd::new(c).map_err(|e| input(&e))?;
    let boot_ns = dev.now_ns();
    let mut csd = Csd::new(SimTransport::with_device(dev, 64).map_err(|e| input(&e))?)
        .map_err(RunError::Device)?;
    let mut r = SplitMix64::new(p.seed);
    let (mut open, mut close, mut append, mut decode) = (vec![], vec![], vec![], vec![]);
    let now = |csd: &Csd<SimTransport>| csd.transport().device().now_ns();
    for i in 0..p.sequences {
        // A few sequences stay open across the others, as on a server.
        let seq = i % 16;
        let t = now(&csd);
        csd.open(seq, SHAPE).map_err(RunError::Device)?;
        open.push(now(&csd) - t);
        let (mut k, mut v) = (Vec::new(), Vec::new());
        for _ in 0..PROMPT {
            k.extend(token(&mut r));
            v.extend(token(&mut r));
        }
        let t = now(&csd);
        csd.append(seq, 0, 0, &k, &v).map_err(RunError::Device)?;
        append.push(now(&csd) - t);
        for s in 0..STEPS {
            let (q, kn, vn) = (token(&mut r), token(&mut r), token(&mut r));
            let t = now(&csd);
            let ticket = csd
                .submit_decode(seq, 0, PROMPT + s, &q, Some((&kn, &vn)), Method::Dense)
                .map_err(RunError::Device)?;
            let out = csd.fetch(ticket).map_err(RunError::Device)?;
            decode.push(now(&csd) - t);
            if out.raw.len() != D {
                return Err(RunError::Attention(
                    "bench journal: short decode output".into(),
                ));
            }
        }
        let t = now(&csd);
        csd.close(seq).map_err(RunError::Device)?;
        close.push(now(&csd) - t);
    }
    Ok(CommandTimes {
        boot_ns,
        open: summary(open),
        close: summary(close),
        append: summary(append),
        decode: summary(decode),
    })
}

/// Runs the bench: the same script with the journal on, then off.
pub fn run_journal_bench(p: &JournalParams) -> Result<JournalReport, RunError> {
    if p.sequences == 0 || !matches!(p.page_size, 4096 | 16384) {
        return Err(RunError::Input(
            "bench journal: --sequences ≥ 1 and --page-size 4096 or 16384".into(),
        ));
    }
    Ok(JournalReport {
        params: p.clone(),
        on: drive(p, true)?,
        off: drive(p, false)?,
    })
}

impl fmt::Display for JournalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "bench journal: {} sequences opened, appended ({PROMPT} tokens), decoded ({STEPS} steps) and closed on the simulated drive ({} B pages), journal on and off (virtual time)",
            self.params.sequences, self.params.page_size
        )?;
        writeln!(
            f,
            "{:<22} {:>14} {:>14} {:>14} {:>10}",
            "command", "on: mean/p99", "off: mean/p99", "cost (mean)", "on / off"
        )?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, on: (f64, u64), off: (f64, u64)| {
            writeln!(
                f,
                "{:<22} {:>14} {:>14} {:>11.1} us {:>9.2}x",
                name,
                format!("{:.1}/{:.1}", on.0 / 1e3, on.1 as f64 / 1e3),
                format!("{:.1}/{:.1}", off.0 / 1e3, off.1 as f64 / 1e3),
                (on.0 - off.0) / 1e3,
                on.0 / off.0.max(1.0)
            )
        };
        row(f, "SEQ_OPEN (journaled)", self.on.open, self.off.open)?;
        row(f, "SEQ_CLOSE (journaled)", self.on.close, self.off.close)?;
        row(f, "KV_APPEND", self.on.append, self.off.append)?;
        row(f, "decode step", self.on.decode, self.off.decode)?;
        writeln!(
            f,
            "power-on: {:.1} ms with the journal (the first page of every block read, a block erased, a snapshot and the wear table written), {:.1} ms without (times in us unless said)",
            self.on.boot_ns as f64 / 1e6,
            self.off.boot_ns as f64 / 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{JournalParams, run_journal_bench};

    #[test]
    fn journaled_commands_cost_a_program_and_the_others_nothing() {
        let p = JournalParams {
            sequences: 40,
            page_size: 4096,
            seed: 3,
        };
        let r = run_journal_bench(&p).unwrap();
        // One snapshot page each: at least tPROG more.
        assert!(r.on.open.0 > r.off.open.0 + 100_000.0, "{r:?}");
        assert!(r.on.close.0 > r.off.close.0 + 100_000.0, "{r:?}");
        assert_eq!(r.off.boot_ns, 0);
        assert!(r.on.boot_ns > 0);
        assert!(r.to_string().contains("SEQ_OPEN (journaled)"));
        assert!(
            run_journal_bench(&JournalParams {
                page_size: 8192,
                ..p
            })
            .is_err()
        );
    }
}
