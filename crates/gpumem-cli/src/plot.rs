//! `--plot`: an SVG timeline of live and reserved bytes over op index (or
//! the trace's time), with the recorded allocator's line when it has one.
//!
//! The picture has to stand alone: the title names the trace, backend and
//! the peaks with their ratio, axes carry units, and a legend says which
//! line is which. The gap between the lines is the memory the allocator
//! holds but the program cannot use.

use std::path::Path;

use plotters::prelude::*;

use crate::{CliError, Result};
use gpumem::storage::units::{GIB, KIB, binary_unit, format_bytes};
use gpumem_replay::replay::Sample;
use gpumem_replay::report::ReplayReport;

const SIZE: (u32, u32) = (1280, 720);

/// The axis unit: the byte formatter's, KiB at least and GiB at most.
fn unit_for(max: u64) -> (f64, &'static str) {
    let (unit, scale) = binary_unit(max.max(KIB), GIB);
    (scale as f64, unit)
}

/// One line of the plot: a legend name and `(x, bytes)` points.
#[derive(Debug, Clone, Copy)]
pub struct PlotLine<'a> {
    /// Legend name.
    pub name: &'a str,
    /// The points, in x order.
    pub points: &'a [(u64, u64)],
}

/// Colors of the lines, in order: reserved, live, the recorded allocator.
const COLORS: [RGBColor; 4] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Draws `samples` of `report`'s replay into an SVG file at `path`, over
/// op index: reserved and live.
pub fn plot_timeline(path: &Path, report: &ReplayReport, samples: &[Sample]) -> Result<()> {
    let reserved: Vec<(u64, u64)> = samples.iter().map(|s| (s.op, s.reserved)).collect();
    let live: Vec<(u64, u64)> = samples.iter().map(|s| (s.op, s.live)).collect();
    let lines = [
        PlotLine {
            name: "reserved (held from the device)",
            points: &reserved,
        },
        PlotLine {
            name: "live (requested by the program)",
            points: &live,
        },
    ];
    plot_lines(path, report, &lines, "operation index")
}

/// Draws `lines` into an SVG file at `path`, titled with `report`'s peaks,
/// the x axis described as `x_desc`.
pub fn plot_lines(
    path: &Path,
    report: &ReplayReport,
    lines: &[PlotLine<'_>],
    x_desc: &str,
) -> Result<()> {
    draw(path, report, lines, x_desc).map_err(|message| CliError::Plot {
        path: path.to_path_buf(),
        message,
    })
}

fn draw(
    path: &Path,
    report: &ReplayReport,
    lines: &[PlotLine<'_>],
    x_desc: &str,
) -> Result<(), String> {
    let points = || lines.iter().flat_map(|l| l.points.iter());
    let max_bytes = points().map(|p| p.1).max().unwrap_or(0).max(1);
    let (scale, unit) = unit_for(max_bytes);
    let min_x = points().map(|p| p.0).min().unwrap_or(0);
    let max_x = points().map(|p| p.0).max().unwrap_or(1).max(min_x + 1);
    // Headroom above the highest line keeps the legend (upper left) off the data.
    let y_top = max_bytes as f64 / scale * 1.22;

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let ratio = report
        .fragmentation
        .peak
        .map_or_else(String::new, |r| format!(" (×{r:.2})"));
    let title = format!(
        "{} on {}: peak live {}, peak reserved {}{}",
        report.source,
        report.backend,
        format_bytes(report.peak_live_bytes),
        format_bytes(report.peak_reserved_bytes),
        ratio
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(min_x..max_x, 0f64..y_top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(format!("bytes ({unit})"))
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, line) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                line.points.iter().map(|&(x, y)| (x, y as f64 / scale)),
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(line.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
