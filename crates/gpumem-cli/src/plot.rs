//! `--plot`: an SVG timeline of live and reserved bytes over op index.
//!
//! The picture has to stand alone: the title names the trace, backend and
//! the peaks with their ratio, axes carry units, and a legend says which
//! line is which. The gap between the lines is the memory the allocator
//! holds but the program cannot use.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{CliError, Result};
use crate::replay::Sample;
use crate::report::{ReplayReport, human_bytes};

const SIZE: (u32, u32) = (1280, 720);

fn unit_for(max: u64) -> (f64, &'static str) {
    if max >= 1 << 30 {
        ((1u64 << 30) as f64, "GiB")
    } else if max >= 1 << 20 {
        ((1u64 << 20) as f64, "MiB")
    } else {
        (1024.0, "KiB")
    }
}

/// Draws `samples` of `report`'s replay into an SVG file at `path`.
pub fn plot_timeline(path: &Path, report: &ReplayReport, samples: &[Sample]) -> Result<()> {
    draw(path, report, samples).map_err(|message| CliError::Plot {
        path: path.to_path_buf(),
        message,
    })
}

fn draw(path: &Path, report: &ReplayReport, samples: &[Sample]) -> Result<(), String> {
    let max_bytes = samples
        .iter()
        .map(|s| s.reserved.max(s.live))
        .max()
        .unwrap_or(0)
        .max(1);
    let (scale, unit) = unit_for(max_bytes);
    let max_op = samples.last().map_or(1, |s| s.op.max(1));
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
        human_bytes(report.peak_live_bytes),
        human_bytes(report.peak_reserved_bytes),
        ratio
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0u64..max_op, 0f64..y_top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("operation index")
        .y_desc(format!("bytes ({unit})"))
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())?;

    let reserved = RGBColor(214, 39, 40);
    let live = RGBColor(31, 119, 180);
    chart
        .draw_series(LineSeries::new(
            samples.iter().map(|s| (s.op, s.reserved as f64 / scale)),
            reserved.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?
        .label("reserved (held from the device)")
        .legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 24, y)], reserved.stroke_width(3))
        });
    chart
        .draw_series(LineSeries::new(
            samples.iter().map(|s| (s.op, s.live as f64 / scale)),
            live.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?
        .label("live (requested by the program)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], live.stroke_width(3)));
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
