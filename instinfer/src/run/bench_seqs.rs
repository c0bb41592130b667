//! `bench paper --figure seqs`: many sequences in flight on one CSD. The
//! same layer (OPT-13B's 40 KV heads, 1024 tokens) of 1, 2, 4 and 8
//! sequences is decoded at once, dense and SparF 1/8, on each board; the
//! table gives the virtual time per sequence, the busiest resource and how
//! busy it is, and says where the time per sequence stops falling (a
//! resource is saturated). Every time here is virtual (the simulated
//! board).

use std::fmt::Write as _;
use std::path::Path;

use super::RunError;
use super::bench_paper::method_name;
use super::plot::{Series, lines};
use crate::cost::csd::{CsdSpec, Sample, profile_csd};
use crate::cost::{CsdPoint, KvSource, ModelShape};

/// Sequence counts of the sweep.
pub const SEQS: [usize; 4] = [1, 2, 4, 8];
/// The context of the sweep.
const CONTEXT: usize = 1024;
/// SparF's compression in the sweep.
const SPARSE: f64 = 0.125;
/// Per-sequence time that falls by less than this fraction from one count
/// to the next is flat: the bound resource is saturated.
const FLAT: f64 = 0.03;

/// Runs the sweep on every page size; writes `seqs.csv` and `seqs.png`
/// into `out` and returns the report lines.
pub fn run(
    m: &ModelShape,
    source: &KvSource,
    page_sizes: &[u32],
    out: &Path,
) -> Result<String, RunError> {
    let mut csv = String::from(
        "page_size,method,seqs,decode_virtual_us,per_seq_virtual_us,bound_resource,bound_us,decode_over_bound,bound_resource_busy\n",
    );
    let mut report = String::from(
        "sequences in flight (seqs.csv; virtual time per sequence, the busiest resource, where the time stops falling):\n",
    );
    let mut series: Vec<Series> = Vec::new();
    for &page_size in page_sizes {
        for compression in [None, Some(SPARSE)] {
            let spec = CsdSpec::new(m.heads, CONTEXT, compression);
            let mut points: Vec<CsdPoint> = Vec::new();
            for n in SEQS {
                let sample = Sample::paper(page_size, n);
                let profile = profile_csd(m, source, &[spec], &sample)?;
                points.extend(profile.points);
            }
            let method = method_name(spec.selection, compression);
            let mut line = format!("  {} KiB {method}:", page_size / 1024);
            for p in &points {
                let b = p.bound();
                let busy = busy_fraction(p);
                let per_seq = p.decode_ns as f64 / 1e3 / p.seqs as f64;
                let _ = writeln!(
                    csv,
                    "{page_size},{method},{},{:.1},{per_seq:.1},{},{:.1},{:.3},{busy:.3}",
                    p.seqs,
                    p.decode_ns as f64 / 1e3,
                    b.resource.name(),
                    b.ns as f64 / 1e3,
                    b.ratio(p.decode_ns),
                );
                let _ = write!(line, " {} seqs {per_seq:.0} us/seq;", p.seqs);
            }
            let _ = writeln!(report, "{line} {}", saturation(&points));
            series.push((
                format!("{method} {} KiB", page_size / 1024),
                points
                    .iter()
                    .map(|p| (p.seqs as f64, p.decode_ns as f64 / 1e3 / p.seqs as f64))
                    .collect(),
            ));
        }
    }
    lines(
        &out.join("seqs.png"),
        "Virtual decode time per sequence vs sequences in flight (40 heads, 1024 tokens)",
        "sequences decoded together (log2)",
        "us per sequence (virtual)",
        &series,
        true,
        false,
    )?;
    let path = out.join("seqs.csv");
    std::fs::write(&path, csv).map_err(|e| RunError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(report)
}

/// How busy the bound resource of `p` was during its decode.
fn busy_fraction(p: &CsdPoint) -> f64 {
    let b = p.bound();
    b.ns as f64 / p.decode_ns.max(1) as f64
}

/// Where the per-sequence time of `points` (in sweep order) stops falling,
/// and the resource that stops it.
fn saturation(points: &[CsdPoint]) -> String {
    let per_seq = |p: &CsdPoint| p.decode_ns as f64 / p.seqs.max(1) as f64;
    for w in points.windows(2) {
        if per_seq(&w[1]) > per_seq(&w[0]) * (1.0 - FLAT) {
            let b = w[0].bound();
            return format!(
                "flat from {} seqs; busiest resource {} at {:.0}% busy",
                w[0].seqs,
                b.resource.name(),
                100.0 * busy_fraction(&w[0])
            );
        }
    }
    match points.last() {
        Some(p) => format!(
            "still falling at {} seqs; busiest resource {} at {:.0}% busy",
            p.seqs,
            p.bound().resource.name(),
            100.0 * busy_fraction(p)
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(seqs: usize, decode_ns: u64) -> CsdPoint {
        CsdPoint {
            seqs,
            engine_busy_ns: decode_ns / 4,
            flash_busy_ns: 64 * decode_ns * 9 / 10,
            ..CsdPoint::idle(decode_ns)
        }
    }

    #[test]
    fn saturation_is_where_the_time_per_sequence_stops_falling() {
        let pts = [
            point(1, 1000),
            point(2, 1500),
            point(4, 2960),
            point(8, 5900),
        ];
        let s = saturation(&pts);
        assert!(
            s.starts_with("flat from 2 seqs; busiest resource arrays at 90% busy"),
            "{s}"
        );
        let falling = [point(1, 1000), point(2, 1500), point(4, 2000)];
        assert!(saturation(&falling).starts_with("still falling at 4 seqs"));
    }
}
