//! `instinfer bench p2p`: the same layer-wise prefill and decode steps on
//! the simulated board with q, k, v and the outputs in host memory, in GPU
//! memory reached peer to peer, and in GPU memory bounced through host
//! memory. All times are the board's **virtual** time (the model: PCIe
//! Gen3 x4 drive link, a switch adding 150 ns per peer transaction, the
//! GPU's Gen4 x16 link and 10 µs per bounce copy — assumptions named in
//! `board_sim::GpuModel`); wall time is printed apart.

use std::fmt;
use std::time::Instant;

use host_driver::array::CsdArray;
use host_driver::backend::InStorage;
use host_driver::csd::{Csd, CsdError};
use host_driver::dma::{GpuPath, Placement};
use host_driver::transport::SimTransport;

use super::{RunError, check_page_size, input};
use host_driver::vectors::DecodeWorkload;

/// Bench settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct P2pParams {
    /// Sequences.
    pub seqs: u32,
    /// Prompt tokens (prefilled layer by layer).
    pub prompt: usize,
    /// Decode steps.
    pub steps: usize,
    /// Flash page size.
    pub page_size: u32,
}

impl Default for P2pParams {
    fn default() -> Self {
        Self {
            seqs: 4,
            prompt: 1024,
            steps: 16,
            page_size: 16384,
        }
    }
}

/// One placement's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct P2pRow {
    /// Placement.
    pub placement: Placement,
    /// Virtual ns of the prefill.
    pub prefill_ns: u64,
    /// Virtual ns per decode step.
    pub step_ns: f64,
    /// Host DRAM bytes read and written during the prefill (host code,
    /// drive DMA, copies).
    pub prefill_dram: u64,
    /// The same per decode step.
    pub step_dram: f64,
    /// Bytes the drive moved peer to peer (both phases).
    pub p2p_bytes: u64,
    /// Bytes bounced (both phases).
    pub bounce_bytes: u64,
    /// Wall seconds of the whole row.
    pub wall_s: f64,
}

/// The result.
#[derive(Clone, Debug, PartialEq)]
pub struct P2pReport {
    /// Settings.
    pub params: P2pParams,
    /// Host, P2P, bounce.
    pub rows: Vec<P2pRow>,
}

fn dram(t: &SimTransport) -> u64 {
    let c = t.device().host_memory_counters();
    c.bytes_read + c.bytes_written
}

fn row(p: &P2pParams, placement: Placement) -> Result<P2pRow, RunError> {
    let t0 = Instant::now();
    let mut t = SimTransport::new(p.page_size).map_err(CsdError::from)?;
    t.set_placement(placement);
    let csd = Csd::new(t)?;
    let mut b = InStorage::new(CsdArray::new(vec![csd])?, 1);
    let w = DecodeWorkload::new(p.seqs, p.prompt);
    let snap = |b: &InStorage<SimTransport>| {
        let t = b.array().devices()[0].transport();
        (t.device().now_ns(), dram(t), t.dma_stats())
    };
    let (n0, d0, s0) = snap(&b);
    w.prefill(&mut b)?;
    let (n1, d1, _) = snap(&b);
    for step in 0..p.steps {
        w.step(&mut b, step, step % 2 == 1)?;
    }
    let (n2, d2, s2) = snap(&b);
    w.close(&mut b)?;
    let s = s2 - s0;
    Ok(P2pRow {
        placement,
        prefill_ns: n1 - n0,
        step_ns: (n2 - n1) as f64 / p.steps as f64,
        prefill_dram: d1 - d0,
        step_dram: (d2 - d1) as f64 / p.steps as f64,
        p2p_bytes: s.p2p_bytes,
        bounce_bytes: s.bounce_bytes,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// Runs the three placements.
pub fn run_p2p_bench(p: &P2pParams) -> Result<P2pReport, RunError> {
    check_page_size(p.page_size)?;
    if p.seqs == 0 || p.prompt == 0 || p.steps == 0 {
        return Err(input("--seqs, --prompt and --steps must be at least 1"));
    }
    let rows = [
        Placement::Host,
        Placement::Gpu(GpuPath::PeerToPeer),
        Placement::Gpu(GpuPath::Bounce),
    ]
    .into_iter()
    .map(|pl| row(p, pl))
    .collect::<Result<Vec<_>, _>>()?;
    Ok(P2pReport { params: *p, rows })
}

impl P2pReport {
    /// The row of `placement`.
    pub fn row(&self, placement: Placement) -> Option<&P2pRow> {
        self.rows.iter().find(|r| r.placement == placement)
    }
}

impl fmt::Display for P2pReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        writeln!(
            f,
            "bench p2p: {} seqs x 2 layers, 9 q / 3 kv heads, d=64, prompt {} (prefilled layer by layer) + {} decode steps, {} B pages, one simulated drive",
            p.seqs, p.prompt, p.steps, p.page_size
        )?;
        writeln!(
            f,
            "virtual = simulated device time (drive link Gen3 x4; switch +150 ns per peer transaction; GPU link Gen4 x16, 10 us per bounce copy: model assumptions)"
        )?;
        writeln!(
            f,
            "{:<11} {:>16} {:>13} {:>18} {:>17} {:>14} {:>14} {:>8}",
            "placement",
            "prefill ms virt",
            "x bounce",
            "prefill DRAM MB",
            "step us virt",
            "step DRAM KB",
            "x bounce DRAM",
            "wall s"
        )?;
        let b = self.row(Placement::Gpu(GpuPath::Bounce));
        for r in &self.rows {
            let xp = b.map_or(f64::NAN, |b| r.prefill_ns as f64 / b.prefill_ns as f64);
            let xd = b.map_or(f64::NAN, |b| {
                (r.prefill_dram as f64 + r.step_dram * p.steps as f64)
                    / (b.prefill_dram as f64 + b.step_dram * p.steps as f64)
            });
            writeln!(
                f,
                "{:<11} {:>16.3} {:>13.3} {:>18.2} {:>17.1} {:>14.1} {:>14.3} {:>8.2}",
                r.placement.name(),
                r.prefill_ns as f64 / 1e6,
                xp,
                r.prefill_dram as f64 / 1e6,
                r.step_ns / 1e3,
                r.step_dram / 1e3,
                xd,
                r.wall_s
            )?;
        }
        write!(
            f,
            "DRAM = host DRAM bytes read and written (host code, drive DMA, bounce copies); x bounce: against the gpu-bounce row"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p2p_keeps_data_out_of_host_dram_and_bounce_adds_copies() {
        let p = P2pParams {
            seqs: 2,
            prompt: 128,
            steps: 2,
            page_size: 4096,
        };
        let r = run_p2p_bench(&p).unwrap();
        let host = r.row(Placement::Host).unwrap();
        let p2p = r.row(Placement::Gpu(GpuPath::PeerToPeer)).unwrap();
        let bounce = r.row(Placement::Gpu(GpuPath::Bounce)).unwrap();
        assert!(
            p2p.prefill_dram < host.prefill_dram / 4,
            "{p2p:?} vs {host:?}"
        );
        // The bounce buffer takes the place of the host buffer: the same
        // DRAM traffic as host memory, all of it avoidable.
        assert_eq!(bounce.prefill_dram, host.prefill_dram);
        assert!(bounce.prefill_ns > host.prefill_ns);
        assert_eq!(host.p2p_bytes + host.bounce_bytes, 0);
        assert_eq!(p2p.bounce_bytes, 0);
        assert_eq!(bounce.p2p_bytes, 0);
        assert!(r.to_string().contains("gpu-p2p"));
    }
}
