//! The table of simulated CSD points behind `bench paper`: for every
//! method at every point of every board, each resource's busy fraction,
//! the bound set by the busiest one (`cost::bound`) and the decode's time
//! over it; for SparF and the page selection also its page reads as a
//! share of dense's at the same point and its time over that share of
//! dense's time. Written to
//! `points.csv` and `utilisation.png` and printed. Every time here is
//! virtual (the simulated board).

use std::fmt::Write as _;
use std::path::Path;

use super::RunError;
use super::bench_paper::{Board, method_name};
use super::plot::{BarSeries, bars};
use crate::cost::{CsdPoint, Resource};
use host_driver::policy::Selection;

/// A sparse point against dense at the same heads, context and board.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VsDense {
    /// Flash pages read over dense's.
    pub page_fraction: f64,
    /// Decode time over (`page_fraction` × dense's decode time): 1.0 when
    /// SparF costs exactly the pages it reads.
    pub time_over_fraction: f64,
}

/// [`VsDense`] of `p` among `points`; `None` for dense points and where
/// no dense point (or no dense page read) matches.
pub fn vs_dense(points: &[CsdPoint], p: &CsdPoint) -> Option<VsDense> {
    if p.selection == Selection::Dense {
        return None;
    }
    let dense = points
        .iter()
        .find(|d| d.selection == Selection::Dense && d.heads == p.heads && d.s == p.s)?;
    if dense.pages_read == 0 || dense.decode_ns == 0 {
        return None;
    }
    let page_fraction = p.pages_read as f64 / dense.pages_read as f64;
    Some(VsDense {
        page_fraction,
        time_over_fraction: p.decode_ns as f64
            / (page_fraction * dense.decode_ns as f64).max(f64::MIN_POSITIVE),
    })
}

fn out_err(path: &Path, e: impl std::fmt::Display) -> RunError {
    RunError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// A short label of a point for the chart's x axis: `4K D 1024`,
/// `16K S8 2048/20h`, `4K P8 1024` (heads shown when not the board's most).
fn label(page_size: u32, p: &CsdPoint, max_heads: usize) -> String {
    let letter = match p.selection {
        Selection::Pages => "P",
        Selection::Quest => "Q",
        Selection::SparFGuard => "G",
        _ => "S",
    };
    let m = p.compression.map_or("D".to_string(), |c| {
        format!("{letter}{}", (1.0 / c).round())
    });
    let heads = if p.heads == max_heads {
        String::new()
    } else {
        format!("/{}h", p.heads)
    };
    format!("{}K {m} {}{heads}", page_size / 1024, p.s)
}

/// Writes `points.csv` and `utilisation.png` into `out` and appends one
/// line per point to `report`; `head_dim` is the model's, which sets each
/// board's dim group and DRAM budget.
pub fn write_points(
    boards: &[Board],
    head_dim: u16,
    out: &Path,
    report: &mut String,
) -> Result<(), RunError> {
    let mut csv = String::from(
        "page_size,dim_group,dram_budget_bytes,heads,s,method,seqs,decode_virtual_us,pages_read,\
         arrays,buses,engine,pcie,bound,bound_virtual_us,decode_over_bound,busiest_die_virtual_us,decode_over_busiest_die,page_read_fraction,time_over_fraction_dense\n",
    );
    let mut categories = Vec::new();
    let mut util: Vec<Vec<f64>> = vec![Vec::new(); Resource::ALL.len()];
    let _ = writeln!(
        report,
        "CSD points, virtual time (points.csv, utilisation.png): decode, the bound of the busiest resource, decode / bound, busy fractions"
    );
    for b in boards {
        let d = head_dim;
        let (page, dim_group, budget) = (
            b.sample.page_size,
            b.sample.dim_group(d),
            b.sample.dram_budget(d),
        );
        let max_heads = b.profile.points.iter().map(|p| p.heads).max().unwrap_or(0);
        for p in &b.profile.points {
            let method = method_name(p.selection, p.compression);
            let bound = p.bound();
            let ratio = bound.ratio(p.decode_ns);
            let u = p.utilisation();
            let vs = vs_dense(&b.profile.points, p);
            let _ = write!(
                csv,
                "{page},{dim_group},{budget},{},{},{method},{},{:.1},{},",
                p.heads,
                p.s,
                p.seqs,
                p.decode_ns as f64 / 1e3,
                p.pages_read
            );
            for (_, f) in u {
                let _ = write!(csv, "{f:.4},");
            }
            let die_ratio = p.decode_ns as f64 / p.busiest_die_ns.max(1) as f64;
            let _ = writeln!(
                csv,
                "{},{:.1},{ratio:.3},{:.1},{die_ratio:.3},{},{}",
                bound.resource.name(),
                bound.ns as f64 / 1e3,
                p.busiest_die_ns as f64 / 1e3,
                vs.map_or(String::new(), |v| format!("{:.4}", v.page_fraction)),
                vs.map_or(String::new(), |v| format!("{:.3}", v.time_over_fraction)),
            );
            let busy: Vec<String> = u
                .iter()
                .map(|(r, f)| format!("{} {:.0}%", r.name(), 100.0 * f))
                .collect();
            let _ = write!(
                report,
                "  {} KiB {method} {} heads {} tokens: decode {:.1} us, bound {:.1} us ({}), x{ratio:.2}; busiest die's reads {:.1} us, x{die_ratio:.2}; {}",
                page / 1024,
                p.heads,
                p.s,
                p.decode_ns as f64 / 1e3,
                bound.ns as f64 / 1e3,
                bound.resource.name(),
                p.busiest_die_ns as f64 / 1e3,
                busy.join(", ")
            );
            if let Some(v) = vs {
                let _ = write!(
                    report,
                    "; pages read {:.3} of dense's, time / (that x dense's) {:.2}",
                    v.page_fraction, v.time_over_fraction
                );
            }
            report.push('\n');
            categories.push(label(page, p, max_heads));
            for (col, (_, f)) in util.iter_mut().zip(u) {
                col.push(f);
            }
        }
    }
    let path = out.join("points.csv");
    std::fs::write(&path, csv).map_err(|e| out_err(&path, e))?;
    let series: Vec<BarSeries> = Resource::ALL
        .iter()
        .zip(util)
        .map(|(r, v)| (r.name().to_string(), v))
        .collect();
    bars(
        &out.join("utilisation.png"),
        "Busy fraction of each CSD resource during decode (simulated)",
        "point: page size, D dense / S8 SparF 1/8 / P8 pages 1/8, context tokens (/heads when fewer)",
        "busy fraction of the decode's virtual time",
        &categories,
        &series,
        1.05,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(compression: Option<f64>, pages_read: u64, decode_ns: u64) -> CsdPoint {
        CsdPoint {
            compression,
            selection: crate::cost::csd::instinfer_selection(compression),
            pages_read,
            ..CsdPoint::idle(decode_ns)
        }
    }

    #[test]
    fn sparf_is_compared_with_dense_at_the_same_point() {
        let pts = [point(None, 1000, 4000), point(Some(0.125), 250, 2000)];
        let v = vs_dense(&pts, &pts[1]).unwrap();
        assert!((v.page_fraction - 0.25).abs() < 1e-12);
        // 2000 / (0.25 × 4000) = 2.
        assert!((v.time_over_fraction - 2.0).abs() < 1e-12);
        assert_eq!(vs_dense(&pts, &pts[0]), None);
        let other = CsdPoint { s: 2048, ..pts[1] };
        assert_eq!(vs_dense(&pts, &other), None);
        // The page selection at the same point is compared the same way.
        let pages = CsdPoint {
            selection: Selection::Pages,
            ..point(Some(0.125), 125, 1000)
        };
        let v = vs_dense(&pts, &pages).unwrap();
        assert!((v.page_fraction - 0.125).abs() < 1e-12);
        assert!((v.time_over_fraction - 2.0).abs() < 1e-12);
        assert_eq!(label(4096, &pages, 40), "4K P8 1024");
        assert_eq!(label(4096, &pts[1], 40), "4K S8 1024");
    }
}
