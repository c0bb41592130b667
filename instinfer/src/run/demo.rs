//! `instinfer demo`: a synthetic multi-layer, multi-sequence decode loop on
//! simulated drives, checked step by step against the host reference.
//!
//! Every (sequence, layer) gets structured KV from
//! [`attention::testdata::structured_kv`] (a few heavy tokens along a hidden
//! direction, not white noise) for `prompt + steps` tokens. The first
//! `prompt` tokens are prefilled; each step then decodes every layer of
//! every sequence in one batch, appending that step's token (APPEND_KV).
//! The loop runs once with dense attention and once with SparF
//! (`r = d/8`, `k = S/8`, `local = k/4`, S the length after the append);
//! [`HostDense`] computes the same method with the f32 reference on the
//! same fp16-rounded inputs, and the largest difference is reported.

use std::fmt;
use std::time::Instant;

use attention::shape::{Method, SparseParams};
use attention::testdata::{SplitMix64, structured_kv, structured_query};

use host_driver::backend::{
    AttentionBackend, DecodeStep, HostDense, InStorage, ModelShape, round_f16,
};

use host_driver::measure::{Phase, PhaseCounters};

use super::sim::device_array;
use super::{RunError, check_page_size, input};
use crate::device::DeviceSpec;

/// Demo settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoParams {
    /// Layers per sequence.
    pub layers: usize,
    /// Sequences decoded together.
    pub seqs: usize,
    /// Decode steps.
    pub steps: usize,
    /// Prompt (prefill) tokens.
    pub prompt: usize,
    /// Which device (`sim` by default).
    pub device: DeviceSpec,
    /// Drives.
    pub devices: usize,
    /// Flash page size.
    pub page_size: u32,
    /// Query heads.
    pub q_heads: usize,
    /// KV heads.
    pub kv_heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Dim group of the K layout.
    pub dim_group: u8,
    /// Data seed.
    pub seed: u64,
}

impl Default for DemoParams {
    /// SmolLM2-135M's attention shape (9 query / 3 KV heads, d = 64).
    fn default() -> Self {
        Self {
            layers: 4,
            seqs: 8,
            steps: 64,
            prompt: 1024,
            device: DeviceSpec::Sim,
            devices: 1,
            page_size: 4096,
            q_heads: 9,
            kv_heads: 3,
            head_dim: 64,
            dim_group: 1,
            seed: 0x1A57_1AFE,
        }
    }
}

/// One method's results.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoRow {
    /// `dense` or `sparf`.
    pub method: &'static str,
    /// Counters summed over all steps.
    pub total: PhaseCounters,
    /// Sum over steps of each step's virtual time (ns).
    pub virtual_ns: u64,
    /// Largest |device − host reference| over every output element.
    pub max_abs_err: f32,
    /// Wall time of the device decodes, ms.
    pub wall_device_ms: f64,
    /// Wall time of the host reference decodes, ms.
    pub wall_host_ms: f64,
    /// The flash page size the drive reports (its capability block): a
    /// drive other than the simulated one has its own.
    pub page_size: u32,
}

/// The demo's results.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoReport {
    /// Settings used.
    pub params: DemoParams,
    /// Dense, then SparF.
    pub rows: Vec<DemoRow>,
    /// Wall time of the whole demo, ms.
    pub wall_total_ms: f64,
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        writeln!(
            f,
            "demo: {} seqs x {} layers, {} q / {} kv heads, d={}, prompt {} + {} steps, {} device(s), {} B pages",
            p.seqs,
            p.layers,
            p.q_heads,
            p.kv_heads,
            p.head_dim,
            p.prompt,
            p.steps,
            p.devices,
            self.rows.first().map_or(p.page_size, |r| r.page_size)
        )?;
        writeln!(
            f,
            "{:<7} {:>18} {:>15} {:>18} {:>16} {:>14} {:>14} {:>16} {:>14}",
            "method",
            "virtual us/step",
            "pages read/st",
            "pages skipped/st",
            "engine B/step",
            "PCIe B/step",
            "max |err|",
            "wall dev ms",
            "wall host ms"
        )?;
        let steps = p.steps.max(1) as f64;
        for r in &self.rows {
            writeln!(
                f,
                "{:<7} {:>18.1} {:>15.1} {:>18.1} {:>16.0} {:>14.0} {:>14.3e} {:>16.1} {:>14.1}",
                r.method,
                r.virtual_ns as f64 / 1e3 / steps,
                r.total.flash_pages_read as f64 / steps,
                r.total.flash_pages_skipped as f64 / steps,
                r.total.engine_bytes as f64 / steps,
                r.total.pcie_bytes as f64 / steps,
                r.max_abs_err,
                r.wall_device_ms,
                r.wall_host_ms
            )?;
        }
        write!(
            f,
            "wall total: {:.1} ms (virtual = simulated device time; wall = host clock)",
            self.wall_total_ms
        )
    }
}

/// KV of one (sequence, layer): `[kv_heads][total][d]` each.
struct LayerData {
    k: Vec<f32>,
    v: Vec<f32>,
    q_seed: u64,
}

/// Tokens `t0..t1` of a `[heads][total][d]` buffer as `[heads][t1-t0][d]`.
fn tokens(x: &[f32], heads: usize, total: usize, d: usize, t0: usize, t1: usize) -> Vec<f32> {
    (0..heads)
        .flat_map(|h| {
            x[(h * total + t0) * d..(h * total + t1) * d]
                .iter()
                .copied()
        })
        .collect()
}

fn check(p: &DemoParams) -> Result<(), RunError> {
    check_page_size(p.page_size)?;
    if p.layers == 0 || p.seqs == 0 || p.prompt == 0 || p.devices == 0 {
        return Err(input(
            "--layers, --seqs, --prompt and --devices must be at least 1",
        ));
    }
    if p.layers > usize::from(u16::MAX) {
        return Err(input(format!("--layers {} too large", p.layers)));
    }
    if u32::try_from(p.seqs).is_err()
        || p.prompt
            .checked_add(p.steps)
            .is_none_or(|t| u32::try_from(t).is_err())
    {
        return Err(input("--seqs, --prompt and --steps too large"));
    }
    Ok(())
}

/// Runs the demo.
pub fn run_demo(p: &DemoParams) -> Result<DemoReport, RunError> {
    check(p)?;
    let started = Instant::now();
    let shape = ModelShape {
        layers: p.layers,
        q_heads: p.q_heads,
        kv_heads: p.kv_heads,
        head_dim: p.head_dim,
    };
    shape.validate()?;
    let total = p.prompt + p.steps;
    let mut data = Vec::with_capacity(p.seqs * p.layers);
    for seq in 0..p.seqs {
        for layer in 0..p.layers {
            let seed =
                p.seed ^ ((seq as u64) << 32 | layer as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let (k, v) = structured_kv(seed, p.kv_heads, total, p.head_dim);
            data.push(LayerData { k, v, q_seed: seed });
        }
    }
    let mut rows = Vec::new();
    for sparf in [false, true] {
        rows.push(run_method(p, shape, &data, sparf)?);
    }
    Ok(DemoReport {
        params: p.clone(),
        rows,
        wall_total_ms: started.elapsed().as_secs_f64() * 1e3,
    })
}

fn run_method(
    p: &DemoParams,
    shape: ModelShape,
    data: &[LayerData],
    sparf: bool,
) -> Result<DemoRow, RunError> {
    let (kvh, d, total) = (p.kv_heads, p.head_dim, p.prompt + p.steps);
    let array = device_array(&p.device, p.devices, p.page_size)?;
    let page_size = array.devices()[0].info().caps.page_size;
    let mut dev = InStorage::new(array, p.dim_group);
    let mut host = HostDense::new();
    for seq in 0..p.seqs {
        dev.open(seq as u32, shape)?;
        host.open(seq as u32, shape)?;
        for layer in 0..p.layers {
            let ld = &data[seq * p.layers + layer];
            let k = tokens(&ld.k, kvh, total, d, 0, p.prompt);
            let v = tokens(&ld.v, kvh, total, d, 0, p.prompt);
            dev.append(seq as u32, layer, &k, &v)?;
            host.append(seq as u32, layer, &k, &v)?;
        }
    }
    let mut row = DemoRow {
        method: if sparf { "sparf" } else { "dense" },
        total: PhaseCounters::default(),
        virtual_ns: 0,
        max_abs_err: 0.0,
        wall_device_ms: 0.0,
        wall_host_ms: 0.0,
        page_size,
    };
    for step in 0..p.steps {
        let pos = p.prompt + step;
        let s = pos + 1;
        let method = if sparf {
            let k = (s / 8).max(1);
            Method::SparF(SparseParams {
                r: (d / 8).max(1),
                k,
                local: k / 4,
            })
        } else {
            Method::Dense
        };
        let mut owned = Vec::with_capacity(data.len());
        for ld in data {
            let mut q = structured_query(ld.q_seed, p.q_heads, d, kvh);
            let mut rng =
                SplitMix64::new(ld.q_seed ^ (step as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
            for x in &mut q {
                *x = round_f16(*x + 0.1 * rng.normal());
            }
            let k = tokens(&ld.k, kvh, total, d, pos, pos + 1);
            let v = tokens(&ld.v, kvh, total, d, pos, pos + 1);
            owned.push((q, k, v));
        }
        let batch: Vec<DecodeStep<'_>> = owned
            .iter()
            .enumerate()
            .map(|(i, (q, k, v))| DecodeStep {
                seq: (i / p.layers) as u32,
                layer: i % p.layers,
                q,
                kv_new: Some((k, v)),
                method,
            })
            .collect();
        let phase = Phase::begin(dev.array_mut())?;
        let got = dev.decode(&batch)?;
        let (wall, counters) = phase.end(dev.array_mut())?;
        row.wall_device_ms += wall;
        row.virtual_ns += counters.virtual_ns;
        row.total.add(&counters);
        let t = Instant::now();
        let want = host.decode(&batch)?;
        row.wall_host_ms += t.elapsed().as_secs_f64() * 1e3;
        for (g, w) in got.iter().zip(&want) {
            for (a, b) in g.iter().zip(w) {
                row.max_abs_err = row.max_abs_err.max((a - b).abs());
            }
        }
    }
    for seq in 0..p.seqs {
        dev.close(seq as u32)?;
        host.close(seq as u32)?;
    }
    Ok(row)
}
