//! The evaluation chart: perplexity against the flash pages read per step
//! (over dense's; the nominal KV compression for rows without a flash
//! count), one line per method, dense as a horizontal reference line. PNG via `plotters`; the
//! text needs a TrueType font, looked up at run time (DejaVu Sans or
//! Liberation Sans from the usual system folders, or `INSTINFER_FONT`).

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use super::RunError;
use super::eval::EvalRow;
use host_driver::policy::Selection;

/// Line and bar colours, distinct for up to 13 series (every method of
/// the eval chart; a figure's methods × contexts), black last.
const PALETTE: [RGBColor; 13] = [
    RED,
    BLUE,
    GREEN,
    MAGENTA,
    CYAN,
    RGBColor(230, 140, 0),
    RGBColor(120, 60, 180),
    RGBColor(140, 90, 40),
    RGBColor(128, 128, 128),
    RGBColor(110, 140, 0),
    RGBColor(0, 60, 110),
    RGBColor(0, 140, 140),
    BLACK,
];

const FONT_CANDIDATES: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

fn font_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INSTINFER_FONT") {
        return Some(PathBuf::from(p));
    }
    FONT_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn out_err(path: &Path, e: impl std::fmt::Display) -> RunError {
    RunError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// Loads a font for the chart's text.
fn load_font(path: &Path) -> Result<(), RunError> {
    let font = font_path().ok_or_else(|| {
        out_err(
            path,
            "no TrueType font found for the chart (install fonts-dejavu-core or set INSTINFER_FONT)",
        )
    })?;
    let bytes = std::fs::read(&font).map_err(|e| out_err(&font, e))?;
    // plotters keeps the font for the life of the process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| out_err(&font, "not a usable TrueType font"))
}

/// Draws `rows` into a PNG at `path`.
pub fn plot(rows: &[EvalRow], path: &Path) -> Result<(), RunError> {
    load_font(path)?;
    let dense = rows
        .iter()
        .find(|r| r.policy.selection == Selection::Dense)
        .map(|r| r.ppl);
    let sparse: Vec<&EvalRow> = rows
        .iter()
        .filter(|r| r.policy.selection != Selection::Dense)
        .collect();
    // log2(dense / read): 0 is dense's cost, 3 an eighth of it.
    let pages = sparse
        .iter()
        .all(|r| r.page_fraction.is_some_and(|x| x > 0.0));
    let xs: Vec<f64> = sparse
        .iter()
        .map(|r| match r.page_fraction {
            Some(x) if pages => (1.0 / x).log2(),
            _ => (1.0 / r.policy.compression.get()).log2(),
        })
        .collect();
    let (caption, x_desc) = if pages {
        (
            "Perplexity vs flash pages read",
            "flash pages read per step / dense's",
        )
    } else {
        (
            "Perplexity vs KV compression",
            "compression (KV read / dense)",
        )
    };
    let (x_lo, x_hi) = xs
        .iter()
        .fold((0.0f64, 1.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let ppl_max = rows.iter().map(|r| r.ppl).fold(0.0f64, f64::max);
    let ppl_min = rows.iter().map(|r| r.ppl).fold(f64::MAX, f64::min);
    let (y_lo, y_hi) = ((ppl_min * 0.9).ln(), (ppl_max * 1.1).ln());

    let root = BitMapBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| out_err(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x_lo - 0.2..x_hi + 0.2, y_lo..y_hi)
        .map_err(|e| out_err(path, e))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("perplexity (log scale)")
        .x_labels(((x_hi - x_lo).round() as usize + 1) * 4 + 1)
        .x_label_formatter(&|x| {
            // Ticks only at powers of two: …, 2, 1/1, 1/2, 1/4, …
            if (x - x.round()).abs() >= 1e-6 {
                String::new()
            } else if x.round() < 0.0 {
                format!("{}", 2f64.powf(-x.round()))
            } else {
                format!("1/{}", 2f64.powf(x.round()))
            }
        })
        .y_label_formatter(&|y| format!("{:.1}", y.exp()))
        .draw()
        .map_err(|e| out_err(path, e))?;
    if let Some(d) = dense {
        chart
            .draw_series(LineSeries::new(
                [(x_lo - 0.2, d.ln()), (x_hi + 0.2, d.ln())],
                BLACK.stroke_width(2),
            ))
            .map_err(|e| out_err(path, e))?
            .label(format!("dense ({d:.2})"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(3)));
    }
    // Black is dense's; every other method has a colour of its own.
    let colors = &PALETTE[..PALETTE.len() - 1];
    for (i, sel) in Selection::ALL
        .iter()
        .filter(|&&s| s != Selection::Dense)
        .enumerate()
    {
        let mut pts: Vec<(f64, f64)> = sparse
            .iter()
            .zip(&xs)
            .filter(|(r, _)| r.policy.selection == *sel)
            .map(|(r, &x)| (x, r.ppl.ln()))
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = colors[i % colors.len()];
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| out_err(path, e))?
            .label(sel.name())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(3)));
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(|e| out_err(path, e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| out_err(path, e))?;
    root.present().map_err(|e| out_err(path, e))?;
    Ok(())
}

/// One line of a [`lines`] chart: its name and points.
pub type Series = (String, Vec<(f64, f64)>);

/// A line chart of `series` into a PNG at `path`, with a log₂ x axis when
/// `log2_x` and a log₁₀ y axis when `log10_y`.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log2_x: bool,
    log10_y: bool,
) -> Result<(), RunError> {
    load_font(path)?;
    let tx = |x: f64| if log2_x { x.log2() } else { x };
    let ty = |y: f64| if log10_y { y.max(1e-12).log10() } else { y };
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(tx(x));
        x1 = x1.max(tx(x));
        y0 = y0.min(ty(y));
        y1 = y1.max(ty(y));
    }
    if x0 > x1 {
        return Err(out_err(path, "nothing to plot"));
    }
    let (xpad, ypad) = ((x1 - x0).max(1e-9) * 0.05, (y1 - y0).max(1e-9) * 0.1);
    let y_base = if log10_y { y0 - ypad } else { y0.min(0.0) };
    let root = BitMapBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| out_err(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x0 - xpad..x1 + xpad, y_base..y1 + ypad)
        .map_err(|e| out_err(path, e))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| {
            if log2_x {
                format!("{:.0}", 2f64.powf(*x))
            } else {
                format!("{x:.0}")
            }
        })
        .y_label_formatter(&|y| {
            let v = if log10_y { 10f64.powf(*y) } else { *y };
            if v.abs() >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .draw()
        .map_err(|e| out_err(path, e))?;
    let colors = PALETTE;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        let p: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (tx(x), ty(y))).collect();
        chart
            .draw_series(LineSeries::new(p.clone(), c.stroke_width(2)))
            .map_err(|e| out_err(path, e))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(3)));
        chart
            .draw_series(p.iter().map(|&xy| Circle::new(xy, 4, c.filled())))
            .map_err(|e| out_err(path, e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| out_err(path, e))?;
    root.present().map_err(|e| out_err(path, e))
}

/// One group of a [`bars`] chart: its name and one value per category.
pub type BarSeries = (String, Vec<f64>);

/// A grouped bar chart into a PNG at `path`: for each category (its name
/// under the x axis), one bar per series, y from 0 to `y_max`.
pub fn bars(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[BarSeries],
    y_max: f64,
) -> Result<(), RunError> {
    if categories.is_empty() || series.is_empty() {
        return Err(out_err(path, "nothing to plot"));
    }
    load_font(path)?;
    let n = categories.len();
    let width = (n as u32 * 95 + 160).max(900);
    let root = BitMapBackend::new(path, (width, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| out_err(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n as f64, 0.0..y_max)
        .map_err(|e| out_err(path, e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()
        .map_err(|e| out_err(path, e))?;
    let colors = PALETTE;
    let w = 0.8 / series.len() as f64;
    for (j, (name, values)) in series.iter().enumerate() {
        let c = colors[j % colors.len()];
        let x0 = 0.1 + j as f64 * w;
        chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let x = i as f64 + x0;
                Rectangle::new([(x, 0.0), (x + w, v.min(y_max))], c.filled())
            }))
            .map_err(|e| out_err(path, e))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| out_err(path, e))?;
    let style =
        ("sans-serif", 13)
            .into_font()
            .color(&BLACK)
            .pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ));
    for (i, name) in categories.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(name.clone(), (x, y + 6), style.clone()))
            .map_err(|e| out_err(path, e))?;
    }
    root.present().map_err(|e| out_err(path, e))
}
