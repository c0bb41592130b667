//! `instinfer bench host`: what this machine itself does, measured in wall
//! time and reported as ratios against a baseline run in the same process:
//!
//! - a memory read-bandwidth probe (summing a buffer far larger than the
//!   caches), then the host decode-attention kernels — the f32 dense
//!   fast f32 dense kernel, the f64 dense reference and SparF — in GB/s of KV consumed, as a
//!   fraction of the probe;
//! - the FTL's operations per second: token appends (with the flash ops
//!   they produce drained), token-group lookups, stream close;
//! - the simulator's speed: end-to-end decode steps (NVMe commands, the
//!   firmware, the board's timing model) per wall second.
//!
//! Nothing here asserts a time.

use std::fmt::Write as _;
use std::time::Instant;

use attention::reference;
use attention::shape::{Method, SparseParams};
use attention::testdata::{structured_kv, structured_query};
use ftl::{Ftl, FtlConfig, Geometry, Kind, StreamShape};

use super::{RunError, input};

/// Parameters of `bench host`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostBenchParams {
    /// Tokens of the attention kernels.
    pub s: usize,
    /// KV heads.
    pub kv_heads: usize,
    /// Head dimension.
    pub d: usize,
    /// Repetitions (the best is kept: least disturbed by the machine).
    pub reps: usize,
}

impl Default for HostBenchParams {
    fn default() -> Self {
        Self {
            s: 8192,
            kv_heads: 8,
            d: 128,
            reps: 5,
        }
    }
}

fn best_of<T>(reps: usize, mut f: impl FnMut() -> T) -> f64 {
    (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// Sums `buf` (f32, 8 independent lanes so the adds do not serialize).
fn read_probe(buf: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    for c in buf.chunks_exact(8) {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum()
}

/// Runs the benchmarks; returns the report.
pub fn run_host_bench(p: &HostBenchParams) -> Result<String, RunError> {
    if p.s == 0 || p.kv_heads == 0 || p.d == 0 || !p.d.is_multiple_of(8) {
        return Err(input(
            "--s and --kv-heads must be at least 1, --d a multiple of 8",
        ));
    }
    let mut out = String::new();
    let (s, h, d) = (p.s, p.kv_heads, p.d);
    let (k, v) = structured_kv(7, h, s, d);
    let q = structured_query(7, h, d, h);
    let kv_bytes = ((k.len() + v.len()) * 4) as f64;
    // The probe reads as many bytes as the dense kernel, from a buffer of
    // its own (so neither benefits from the other's cache lines).
    let probe_buf: Vec<f32> = (0..k.len() + v.len()).map(|i| (i % 7) as f32).collect();
    let probe_s = best_of(p.reps, || read_probe(&probe_buf));
    let probe = kv_bytes / probe_s / 1e9;
    let dense_s = best_of(p.reps, || {
        reference::attend_heads(Method::Dense, &q, &k, &v, h, h, s, d)
    });
    let dense = kv_bytes / dense_s / 1e9;
    let mut fast_out = vec![0f32; h * d];
    let fast_s = best_of(p.reps, || {
        attention::host::dense_f32(&q, &k, &v, h, h, s, d, &mut fast_out)
    });
    let fast = kv_bytes / fast_s / 1e9;
    let sp = SparseParams {
        r: d / 8,
        k: s / 16,
        local: s / 64,
    };
    let sparf_s = best_of(p.reps, || {
        reference::attend_heads(Method::SparF(sp), &q, &k, &v, h, h, s, d)
    });
    let sparf = kv_bytes / sparf_s / 1e9;
    let _ = writeln!(
        out,
        "bench host: one core, wall time (best of {}); KV = {h} heads x {s} tokens x d {d}, f32 ({:.0} MB)",
        p.reps,
        kv_bytes / 1e6
    );
    let _ = writeln!(out, "{:<44} {:>10} {:>12}", "", "GB/s", "vs probe");
    let _ = writeln!(
        out,
        "{:<44} {probe:>10.2} {:>11.2}x",
        "memory read probe (sum of the buffer)", 1.0
    );
    let _ = writeln!(
        out,
        "{:<44} {fast:>10.2} {:>11.2}x",
        "host dense attention (fast f32 kernel)",
        fast / probe
    );
    let _ = writeln!(
        out,
        "{:<44} {dense:>10.2} {:>11.2}x",
        "host dense attention (f64 reference)",
        dense / probe
    );
    let _ = writeln!(
        out,
        "{:<44} {sparf:>10.2} {:>11.2}x",
        "host SparF 1/8 (f64 reference, KV-equivalent)",
        sparf / probe
    );

    // FTL operations.
    let geo = Geometry::sim_default(16384);
    let mut ftl = Ftl::new(FtlConfig {
        geometry: geo,
        dram_budget: 64 << 20,
        max_streams: 256,
        bad_blocks: Vec::new(),
    })
    .map_err(|e| input(format!("FTL: {e:?}")))?;
    let shape = StreamShape {
        head_dim: 128,
        dim_group: 1,
    };
    let token = vec![0x3C00u16; 128];
    let (streams, tokens) = (32usize, 2048usize);
    let ids: Vec<_> = (0..streams)
        .map(|_| ftl.open_stream(shape))
        .collect::<Result<_, _>>()
        .map_err(|e| input(format!("FTL: {e:?}")))?;
    let t = Instant::now();
    let mut ops = 0usize;
    for _ in 0..tokens {
        for &id in &ids {
            ftl.append(id, &token, &token)
                .map_err(|e| input(format!("FTL append: {e:?}")))?;
        }
        ops += ftl.drain_ops().len();
    }
    let append_s = t.elapsed().as_secs_f64();
    let groups = tokens
        / ftl
            .tokens_per_page(ids[0])
            .map_err(|e| input(format!("{e:?}")))? as usize;
    let t = Instant::now();
    let mut found = 0usize;
    for _ in 0..16 {
        for &id in &ids {
            for g in 0..groups as u32 {
                found += usize::from(ftl.token_group(id, Kind::K, g).is_ok());
            }
        }
    }
    let lookup_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for &id in &ids {
        ftl.close_stream(id)
            .map_err(|e| input(format!("FTL close: {e:?}")))?;
    }
    ops += ftl.drain_ops().len();
    let close_s = t.elapsed().as_secs_f64();
    let appends = (streams * tokens) as f64;
    let _ = writeln!(
        out,
        "FTL: {:.2} M token appends/s ({} flash ops drained), {:.2} M group lookups/s, {:.0} stream closes (flushes) /s",
        appends / append_s / 1e6,
        ops,
        found as f64 / lookup_s / 1e6,
        streams as f64 / close_s.max(1e-9)
    );

    // Simulator speed: decode steps end to end.
    let mut csd = host_driver::csd::Csd::new(
        host_driver::transport::SimTransport::new(16384)
            .map_err(host_driver::csd::CsdError::from)?,
    )?;
    let (heads, group, dd, prompt, steps) = (3usize, 3usize, 64usize, 1024usize, 64usize);
    let bits = |x: &[f32]| -> Vec<u16> {
        x.iter()
            .map(|&f| attention::engine::f32_to_f16_bits(f))
            .collect()
    };
    let (k, v) = structured_kv(9, heads, prompt, dd);
    csd.open(
        1,
        proto::SeqShape {
            layers: 1,
            kv_heads: heads as u8,
            group: group as u8,
            head_dim: dd as u16,
            dim_group: 1,
            rotated: false,
            placement: proto::Placement::TIME,
        },
    )?;
    csd.append(1, 0, 0, &bits(&k), &bits(&v))?;
    let qb = bits(&structured_query(9, heads * group, dd, heads));
    let t = Instant::now();
    let v0 = csd.device_time().map_or(0, |t| t.now_ns);
    for i in 0..steps {
        let tk = csd.submit_decode(
            1,
            0,
            (prompt - 1) as u32,
            &qb,
            None,
            if i % 2 == 0 {
                Method::Dense
            } else {
                Method::SparF(SparseParams {
                    r: dd / 8,
                    k: prompt / 16,
                    local: prompt / 64,
                })
            },
        )?;
        std::hint::black_box(csd.fetch(tk)?);
    }
    let wall = t.elapsed().as_secs_f64();
    let virt = (csd.device_time().map_or(0, |t| t.now_ns) - v0) as f64 * 1e-9;
    let _ = writeln!(
        out,
        "simulator: {:.0} decode steps/s wall (SmolLM2 shape, {prompt} tokens, dense and SparF alternating); \
         {:.2} ms virtual per step; virtual/wall {:.2}",
        steps as f64 / wall,
        virt / steps as f64 * 1e3,
        virt / wall
    );
    Ok(out)
}
