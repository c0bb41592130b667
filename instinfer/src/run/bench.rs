//! `instinfer bench attend` (and `cargo bench -p host-driver`): one decode
//! step three ways on the same inputs, measured in the same run:
//!
//! * **host-dense**: the f32 reference on the host (wall clock only; the
//!   KV is assumed already in host memory);
//! * **in-storage dense** and **in-storage SparF** on simulated drives:
//!   wall clock of submit + fetch, and the virtual device time.
//!
//! Wall times are the median of `reps` repetitions; virtual times the
//! median of the per-rep virtual times. Ratios compare each row with
//! host-dense (wall) and with in-storage dense (virtual, pages, bytes).
//! Nothing here asserts on time.

use std::fmt;
use std::time::Instant;

use attention::reference;
use attention::shape::Method;
use attention::testdata::{structured_kv, structured_query};
use proto::SeqShape;

use host_driver::array::ArrayDecode;
use host_driver::backend::to_f16_bits;

use super::attend::{MethodChoice, SparseChoice, resolve_method};
use host_driver::measure::{Phase, PhaseCounters};

use super::sim::sim_array;
use super::{RunError, check_page_size, input};

/// Bench settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchParams {
    /// Tokens.
    pub s: usize,
    /// Head dimension.
    pub d: usize,
    /// KV heads.
    pub kv_heads: usize,
    /// Query heads per KV head.
    pub group: usize,
    /// Repetitions (median taken).
    pub reps: usize,
    /// Flash page size.
    pub page_size: u32,
    /// Simulated drives.
    pub devices: usize,
    /// Data seed.
    pub seed: u64,
}

impl Default for BenchParams {
    fn default() -> Self {
        Self {
            s: 4096,
            d: 128,
            kv_heads: 8,
            group: 1,
            reps: 3,
            page_size: 4096,
            devices: 1,
            seed: 7,
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// `host-dense`, `in-storage dense`, `in-storage sparf m=M`.
    pub name: String,
    /// Median wall time, ms.
    pub wall_ms: f64,
    /// Median virtual device time, µs (None for the host).
    pub virtual_us: Option<f64>,
    /// Counters of the last rep (None for the host).
    pub counters: Option<PhaseCounters>,
}

/// The bench's results.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    /// Settings used.
    pub params: BenchParams,
    /// host-dense, in-storage dense, in-storage sparf.
    pub rows: Vec<BenchRow>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.3}x", a / b)
    } else {
        "-".into()
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        writeln!(
            f,
            "bench attend: S={} d={} kv_heads={} group={} reps={} devices={} page={} B",
            p.s, p.d, p.kv_heads, p.group, p.reps, p.devices, p.page_size
        )?;
        writeln!(
            f,
            "{:<22} {:>12} {:>14} {:>11} {:>14} {:>16} {:>19} {:>17}",
            "backend",
            "wall ms",
            "virtual us",
            "pages read",
            "engine bytes",
            "wall/host-dense",
            "virtual/is-dense",
            "pages/is-dense"
        )?;
        let host_wall = self.rows.first().map_or(0.0, |r| r.wall_ms);
        let dense = self.rows.iter().find(|r| r.name == "in-storage dense");
        let dense_virtual = dense.and_then(|r| r.virtual_us).unwrap_or(0.0);
        let dense_pages = dense
            .and_then(|r| r.counters)
            .map_or(0.0, |c| c.flash_pages_read as f64);
        for r in &self.rows {
            let (virt, pages, engine, vr, pr) = match (r.virtual_us, r.counters) {
                (Some(v), Some(c)) => (
                    format!("{v:.1}"),
                    c.flash_pages_read.to_string(),
                    c.engine_bytes.to_string(),
                    ratio(v, dense_virtual),
                    ratio(c.flash_pages_read as f64, dense_pages),
                ),
                _ => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
            };
            writeln!(
                f,
                "{:<22} {:>12.3} {:>14} {:>11} {:>14} {:>16} {:>19} {:>17}",
                r.name,
                r.wall_ms,
                virt,
                pages,
                engine,
                ratio(r.wall_ms, host_wall),
                vr,
                pr
            )?;
        }
        write!(
            f,
            "wall = host clock (median); virtual = simulated device time (median)"
        )
    }
}

fn check(p: &BenchParams) -> Result<(), RunError> {
    check_page_size(p.page_size)?;
    if p.s == 0 || p.kv_heads == 0 || p.group == 0 || p.reps == 0 || p.devices == 0 {
        return Err(input(
            "--s, --kv-heads, --group, --reps and --devices must be at least 1",
        ));
    }
    if p.d == 0 || !p.d.is_multiple_of(2) || p.d > 256 {
        return Err(input(format!("--d {} must be even and in 2..=256", p.d)));
    }
    if p.kv_heads > 255 || p.group > 255 || u32::try_from(p.s).is_err() {
        return Err(input("--kv-heads and --group at most 255, --s within u32"));
    }
    Ok(())
}

/// Runs the bench.
pub fn run_bench(p: &BenchParams) -> Result<BenchReport, RunError> {
    check(p)?;
    let q_heads = p.kv_heads * p.group;
    let (k, v) = structured_kv(p.seed, p.kv_heads, p.s, p.d);
    let q = structured_query(p.seed, q_heads, p.d, p.kv_heads);
    let mut rows = Vec::new();

    let mut walls = Vec::with_capacity(p.reps);
    for _ in 0..p.reps {
        let t = Instant::now();
        let out = reference::attend_heads(Method::Dense, &q, &k, &v, q_heads, p.kv_heads, p.s, p.d)
            .map_err(host_driver::backend::BackendError::from)?;
        std::hint::black_box(out);
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    rows.push(BenchRow {
        name: "host-dense".into(),
        wall_ms: median(walls),
        virtual_us: None,
        counters: None,
    });

    // Dense once; SparF for every dim group m (dims per dim page) that
    // divides d: m trades dim-page skipping (small m) against DRAM held
    // for unfinished dim pages (N = page / 2m tokens per page).
    let mut array = sim_array(p.devices, p.page_size)?;
    let (kb, vb, qb) = (to_f16_bits(&k), to_f16_bits(&v), to_f16_bits(&q));
    let mut runs = vec![("in-storage dense".to_string(), MethodChoice::Dense, 1u8)];
    for m in [1u8, 2, 4, 8] {
        if p.d.is_multiple_of(usize::from(m)) {
            runs.push((format!("in-storage sparf m={m}"), MethodChoice::SparF, m));
        }
    }
    for (seq, (name, choice, dim_group)) in runs.into_iter().enumerate() {
        let seq = seq as u32;
        let shape = SeqShape {
            layers: 1,
            kv_heads: p.kv_heads as u8,
            group: p.group as u8,
            head_dim: p.d as u16,
            dim_group,
            rotated: false,
            placement: proto::Placement::TIME,
        };
        array.open(seq, shape).map_err(super::open_error)?;
        array.append(seq, 0, 0, &kb, &vb)?;
        let method = resolve_method(choice, SparseChoice::default(), p.s, p.d)?;
        let (mut walls, mut virts, mut last) = (Vec::new(), Vec::new(), PhaseCounters::default());
        for _ in 0..p.reps {
            let phase = Phase::begin(&mut array)?;
            let req = ArrayDecode {
                seq,
                layer: 0,
                position: (p.s - 1) as u32,
                q: &qb,
                kv_new: None,
                approx: None,
                method,
            };
            std::hint::black_box(array.decode_batch(&[req])?);
            let (wall, c) = phase.end(&mut array)?;
            walls.push(wall);
            virts.push(c.virtual_ns as f64 / 1e3);
            last = c;
        }
        rows.push(BenchRow {
            name,
            wall_ms: median(walls),
            virtual_us: Some(median(virts)),
            counters: Some(last),
        });
        array.close(seq)?;
    }
    Ok(BenchReport { params: *p, rows })
}
