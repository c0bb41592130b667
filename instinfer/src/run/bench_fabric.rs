//! `instinfer bench fabric`: decode step time against the number of
//! NVMe/TCP targets the KV heads are sharded over, and the same array of
//! simulated boards in process as the baseline, measured in the same run.
//!
//! Every target is its own `instinfer serve` process on loopback (or a
//! thread, for tests). All figures are **wall time on this one machine**:
//! the targets share its cores and the loopback, so they show what the
//! fabric and the sharding cost here, not what separate machines would
//! reach. The in-process rows also give the simulated boards' **virtual**
//! time per step (the slowest board's device time: they run in parallel).

use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use host_driver::array::CsdArray;
use host_driver::backend::{AttentionBackend, InStorage};
use host_driver::csd::{Csd, CsdError};
use host_driver::transport::{SimTransport, Transport};
use nvme_tcp::{NvmeTcp, Target, TargetConfig, TargetHandle, TcpUrl};

use super::{RunError, check_page_size, input};
use host_driver::vectors::DecodeWorkload;

/// How the targets run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// `EXE serve` processes (the `instinfer` binary).
    Process(PathBuf),
    /// Threads of this process.
    Thread,
}

/// Bench settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FabricParams {
    /// Target counts to measure.
    pub targets: Vec<usize>,
    /// Sequences decoded together.
    pub seqs: u32,
    /// Prompt tokens.
    pub prompt: usize,
    /// Decode steps timed per row (after one warm-up step).
    pub steps: usize,
    /// Flash page size of every board.
    pub page_size: u32,
    /// How targets run.
    pub kind: TargetKind,
}

impl Default for FabricParams {
    fn default() -> Self {
        Self {
            targets: vec![1, 2, 4],
            seqs: 4,
            prompt: 1024,
            steps: 8,
            page_size: 16384,
            kind: TargetKind::Thread,
        }
    }
}

/// One measured row.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricRow {
    /// Devices (targets or boards).
    pub devices: usize,
    /// `nvme-tcp` or `in-process`.
    pub path: &'static str,
    /// `dense` or `sparf`.
    pub method: &'static str,
    /// Wall ms per decode step (all sequences, all layers).
    pub wall_ms: f64,
    /// Virtual µs per step (in-process boards only).
    pub virtual_us: Option<f64>,
}

/// The result.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricReport {
    /// Settings.
    pub params: FabricParams,
    /// Rows.
    pub rows: Vec<FabricRow>,
}

/// Targets for one row; stopped when dropped.
enum Targets {
    Procs(Vec<Child>),
    Threads(Vec<TargetHandle>),
}

impl Drop for Targets {
    fn drop(&mut self) {
        match self {
            Targets::Procs(ps) => {
                for p in ps {
                    let _ = p.kill();
                    let _ = p.wait();
                }
            }
            Targets::Threads(hs) => hs.iter_mut().for_each(TargetHandle::stop),
        }
    }
}

fn start(kind: &TargetKind, n: usize, page_size: u32) -> Result<(Targets, Vec<TcpUrl>), RunError> {
    let nqn = nvme_tcp::DEFAULT_NQN;
    match kind {
        TargetKind::Thread => {
            let mut hs = Vec::new();
            for _ in 0..n {
                let cfg = TargetConfig {
                    listen: "127.0.0.1:0".parse().map_err(|_| input("address"))?,
                    page_size,
                    namespace_bytes: 1 << 20,
                    log: false,
                    ..TargetConfig::default()
                };
                hs.push(Target::bind(cfg)?.spawn()?);
            }
            let urls = hs
                .iter()
                .map(|h| TcpUrl::parse(&h.url()).map_err(input))
                .collect::<Result<_, _>>()?;
            Ok((Targets::Threads(hs), urls))
        }
        TargetKind::Process(exe) => {
            let mut procs = Vec::new();
            let mut urls = Vec::new();
            for _ in 0..n {
                let mut c = Command::new(exe)
                    .args([
                        "serve",
                        "--listen",
                        "127.0.0.1:0",
                        "--quiet",
                        "--namespace-mib",
                        "1",
                    ])
                    .args(["--page-size", &page_size.to_string()])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| input(format!("{} serve: {e}", exe.display())))?;
                let mut line = String::new();
                if let Some(out) = c.stdout.take() {
                    let _ = BufReader::new(out).read_line(&mut line);
                }
                procs.push(c);
                urls.push(
                    TcpUrl::parse(&format!("tcp://{}/{nqn}", line.trim()))
                        .map_err(|e| input(format!("target address {line:?}: {e}")))?,
                );
            }
            Ok((Targets::Procs(procs), urls))
        }
    }
}

/// Times `steps` steps (after one warm-up) of `method` on `b`; returns
/// wall ms per step.
fn time_steps(
    w: &DecodeWorkload,
    b: &mut dyn AttentionBackend,
    steps: usize,
    sparf: bool,
    first: usize,
) -> Result<f64, RunError> {
    w.step(b, first, sparf)?;
    let t0 = Instant::now();
    for s in 0..steps {
        w.step(b, first + 1 + s, sparf)?;
    }
    Ok(t0.elapsed().as_secs_f64() * 1e3 / steps as f64)
}

fn measure<T: Transport>(
    p: &FabricParams,
    array: CsdArray<T>,
    path: &'static str,
    out: &mut Vec<FabricRow>,
) -> Result<(), RunError> {
    let n = array.len();
    let w = DecodeWorkload::new(p.seqs, p.prompt);
    let mut b = InStorage::new(array, 1);
    w.prefill(&mut b)?;
    let mut step = 0;
    for (method, sparf) in [("dense", false), ("sparf", true)] {
        let before = virtual_now(b.array());
        let wall_ms = time_steps(&w, &mut b, p.steps, sparf, step)?;
        let after = virtual_now(b.array());
        step += p.steps + 1;
        let virtual_us = before.zip(after).map(|(a, z)| {
            // The warm-up step is in the virtual span too.
            (z - a) as f64 / 1e3 / (p.steps + 1) as f64
        });
        out.push(FabricRow {
            devices: n,
            path,
            method,
            wall_ms,
            virtual_us,
        });
    }
    w.close(&mut b)?;
    Ok(())
}

/// The slowest device's clock (boards run in parallel).
fn virtual_now<T: Transport>(a: &CsdArray<T>) -> Option<u64> {
    a.device_times()
        .into_iter()
        .map(|t| t.map(|t| t.now_ns))
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().max())
}

/// Runs the benchmark.
pub fn run_fabric_bench(p: &FabricParams) -> Result<FabricReport, RunError> {
    check_page_size(p.page_size)?;
    if p.targets.is_empty() || p.targets.iter().any(|&n| n == 0 || n > 16) {
        return Err(input("--targets: counts of 1 to 16"));
    }
    if p.seqs == 0 || p.prompt == 0 || p.steps == 0 {
        return Err(input("--seqs, --prompt and --steps must be at least 1"));
    }
    let mut rows = Vec::new();
    for &n in &p.targets {
        let (targets, urls) = start(&p.kind, n, p.page_size)?;
        let csds = urls
            .iter()
            .map(|u| Csd::new(NvmeTcp::connect(u)?))
            .collect::<Result<Vec<_>, CsdError>>()?;
        measure(p, CsdArray::new(csds)?, "nvme-tcp", &mut rows)?;
        drop(targets);
        let sims = (0..n)
            .map(|_| Csd::new(SimTransport::new(p.page_size)?))
            .collect::<Result<Vec<_>, CsdError>>()?;
        measure(p, CsdArray::new(sims)?, "in-process", &mut rows)?;
    }
    Ok(FabricReport {
        params: p.clone(),
        rows,
    })
}

impl fmt::Display for FabricReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        writeln!(
            f,
            "bench fabric: {} seqs x 2 layers, 9 q / 3 kv heads, d=64, prompt {} + {} timed steps per row, {} B pages",
            p.seqs, p.prompt, p.steps, p.page_size
        )?;
        writeln!(
            f,
            "targets: {} (wall = this machine's clock, all targets on one machine over loopback; virtual = simulated device time)",
            match &p.kind {
                TargetKind::Process(_) => "instinfer serve processes",
                TargetKind::Thread => "threads of this process",
            }
        )?;
        writeln!(
            f,
            "{:>7}  {:<6}  {:<10}  {:>13}  {:>15}  {:>17}  {:>15}",
            "devices",
            "method",
            "path",
            "wall ms/step",
            "x in-process",
            "x 1 device (wall)",
            "virtual us/step"
        )?;
        for r in &self.rows {
            let same = |path: &str, devices: usize| {
                self.rows
                    .iter()
                    .find(|o| o.method == r.method && o.path == path && o.devices == devices)
            };
            let vs_local =
                same("in-process", r.devices).map_or(f64::NAN, |o| r.wall_ms / o.wall_ms);
            let vs_one = same(r.path, p.targets[0]).map_or(f64::NAN, |o| o.wall_ms / r.wall_ms);
            writeln!(
                f,
                "{:>7}  {:<6}  {:<10}  {:>13.2}  {:>15.2}  {:>17.2}  {:>15}",
                r.devices,
                r.method,
                r.path,
                r.wall_ms,
                vs_local,
                vs_one,
                r.virtual_us.map_or("-".to_string(), |v| format!("{v:.1}"))
            )?;
        }
        write!(
            f,
            "x in-process: nvme-tcp wall / in-process wall (same devices); x 1 device: speed-up over the first count"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_for_every_count_and_method() {
        let p = FabricParams {
            targets: vec![1, 2],
            seqs: 2,
            prompt: 64,
            steps: 1,
            page_size: 4096,
            kind: TargetKind::Thread,
        };
        let r = run_fabric_bench(&p).unwrap();
        assert_eq!(r.rows.len(), 2 * 2 * 2);
        assert!(r.rows.iter().all(|x| x.wall_ms > 0.0));
        assert!(
            r.rows
                .iter()
                .all(|x| x.virtual_us.is_some() == (x.path == "in-process"))
        );
        let text = r.to_string();
        assert!(text.contains("nvme-tcp") && text.contains("loopback"));
        assert!(
            run_fabric_bench(&FabricParams {
                targets: vec![0],
                ..p
            })
            .is_err()
        );
    }
}
