//! `bench paper --figure pages`: the flash-aware page selection (`pages`)
//! beside SparF, SparF+ (its guardrail: `sparf-guard`) and the
//! Quest-style page selection on the paper's board, at 1/4, 1/8, 1/16 and
//! 1/32, at the shortest and longest context, with dense measured in the
//! same run (`pages.csv`, `pages.png`). Per point: the virtual time of one
//! layer's decode step of the sample's sequences × the model's KV heads
//! on one CSD and its ratio to dense's, the flash pages read and the bytes
//! over the channel buses, each with its fraction of dense's. Every time
//! here is virtual (the simulated board).

use std::fmt::Write as _;

use host_driver::policy::Selection;

use super::{Ctx, PaperParams, RunError, input, method_name, write};
use crate::cost::csd::CsdSpec;
use crate::cost::{CsdPoint, ModelShape};
use crate::run::plot::{Series, lines};

/// The compressions of the figure: 1/32 too, where SparF's flash page
/// reads come nearest the page selections' at 1/8 (equal flash reads).
const COMPRESSIONS: [f64; 4] = [0.25, 0.125, 0.0625, 0.03125];

/// The sparse methods compared, in the figure's order.
const METHODS: [Selection; 4] = [
    Selection::SparF,
    Selection::SparFGuard,
    Selection::Quest,
    Selection::Pages,
];

/// The contexts of the figure: the shortest and the longest simulated.
fn contexts(p: &PaperParams) -> Vec<usize> {
    let mut v: Vec<usize> = p
        .contexts
        .first()
        .into_iter()
        .chain(p.contexts.last())
        .copied()
        .collect();
    v.dedup();
    v
}

/// The CSD points the figure needs: dense, and every method at every
/// compression, with the model's KV heads on one CSD.
pub(super) fn specs(p: &PaperParams, m: &ModelShape) -> Vec<CsdSpec> {
    let mut v = Vec::new();
    for s in contexts(p) {
        v.push(CsdSpec::new(m.heads, s, None));
        for c in COMPRESSIONS {
            for selection in METHODS {
                v.push(CsdSpec::sparse(selection, m.heads, s, c));
            }
        }
    }
    v
}

/// A point against dense's at the same context.
struct Row<'a> {
    point: &'a CsdPoint,
    time: f64,
    pages: f64,
    bus: f64,
}

impl<'a> Row<'a> {
    fn new(point: &'a CsdPoint, dense: &CsdPoint) -> Self {
        let over = |a: u64, b: u64| a as f64 / b.max(1) as f64;
        Self {
            point,
            time: over(point.decode_ns, dense.decode_ns),
            pages: over(point.pages_read, dense.pages_read),
            bus: over(point.channel_bus_bytes, dense.channel_bus_bytes),
        }
    }

    fn us(&self) -> f64 {
        self.point.decode_ns as f64 / 1e3
    }
}

/// The one point of `selection` at `compression` and context `s`.
fn point<'c>(
    c: &'c Ctx<'_>,
    selection: Selection,
    s: usize,
    compression: Option<f64>,
) -> Result<&'c CsdPoint, RunError> {
    c.csd
        .points_of(selection, c.m.heads, compression)
        .into_iter()
        .find(|p| p.s == s)
        .ok_or_else(|| {
            input(format!(
                "no simulated CSD point for {} at {s} tokens",
                method_name(selection, compression)
            ))
        })
}

/// Writes `pages.csv` and `pages.png` and the figure's lines of the report.
pub(super) fn figure(c: &mut Ctx<'_>, p: &PaperParams) -> Result<(), RunError> {
    let page_size = c.boards.first().map_or(0, |b| b.sample.page_size);
    let mut csv = String::from(
        "page_size,heads,s,seqs,method,compression,decode_virtual_us,decode_over_dense,\
         pages_read,pages_read_over_dense,channel_bus_bytes,channel_bus_bytes_over_dense\n",
    );
    let mut report = String::new();
    let mut series: Vec<Series> = Vec::new();
    for s in contexts(p) {
        let dense = point(c, Selection::Dense, s, None)?;
        let mut rows = vec![("dense".to_string(), 1.0, Row::new(dense, dense))];
        for selection in METHODS {
            for comp in COMPRESSIONS {
                let pt = point(c, selection, s, Some(comp))?;
                rows.push((
                    method_name(selection, Some(comp)),
                    comp,
                    Row::new(pt, dense),
                ));
            }
        }
        let _ = writeln!(
            report,
            "  {s} tokens: dense {:.1} us virtual, {} pages read, {:.2} MB over the channel buses",
            dense.decode_ns as f64 / 1e3,
            dense.pages_read,
            dense.channel_bus_bytes as f64 / 1e6
        );
        for (name, comp, r) in &rows {
            let pt = r.point;
            let _ = writeln!(
                csv,
                "{page_size},{},{s},{},{name},{comp},{:.1},{:.4},{},{:.4},{},{:.4}",
                pt.heads,
                pt.seqs,
                r.us(),
                r.time,
                pt.pages_read,
                r.pages,
                pt.channel_bus_bytes,
                r.bus
            );
            if pt.selection != Selection::Dense {
                let _ = writeln!(
                    report,
                    "    {name:<11} {:>8.1} us virtual (x{:.3} of dense), pages read {:>6} ({:.3} of dense's), channel bytes {:.2} MB ({:.3})",
                    r.us(),
                    r.time,
                    pt.pages_read,
                    r.pages,
                    pt.channel_bus_bytes as f64 / 1e6,
                    r.bus
                );
            }
        }
        let dense_us = rows[0].2.us();
        let last = 1.0 / COMPRESSIONS[COMPRESSIONS.len() - 1];
        series.push((
            format!("dense {s}"),
            vec![(1.0, dense_us), (last, dense_us)],
        ));
        for selection in METHODS {
            let mut pts = vec![(1.0, dense_us)];
            pts.extend(
                rows.iter()
                    .filter(|(_, _, r)| r.point.selection == selection)
                    .map(|(_, comp, r)| (1.0 / comp, r.us())),
            );
            series.push((format!("{} {s}", selection.name()), pts));
        }
    }
    write(&c.out.join("pages.csv"), &csv)?;
    lines(
        &c.out.join("pages.png"),
        &format!(
            "One layer's decode on one CSD, {} seqs x {} heads, {} KiB pages (virtual)",
            p.seqs,
            c.m.heads,
            page_size / 1024
        ),
        "1 / compression (1 = dense); lines by method and context tokens",
        "decode step, virtual us",
        &series,
        true,
        false,
    )?;
    let _ = writeln!(
        c.report,
        "flash-aware pages beside SparF (pages.csv, pages.png): one layer's decode step of {} sequences x {} KV heads on one CSD, \
         {} KiB pages, virtual time; ratios to dense at the same context in this run:",
        p.seqs,
        c.m.heads,
        page_size / 1024
    );
    c.report.push_str(&report);
    Ok(())
}
