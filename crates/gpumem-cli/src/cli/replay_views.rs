//! What `replay` adds around the timed run: attribution (who holds memory
//! at the peaks), the recorded allocator beside gpumem, and the two views
//! of the timeline (`--plot`, `--html`) on the x axis the user chose.
//!
//! Attribution at peak reserved needs the op at which reserved bytes
//! peaked, and the views need reserved bytes after every op: only a
//! statistics read per op finds them, which would be timed with the
//! allocator. So the command replays twice: a timed pass that reads
//! nothing, and one untimed *observed* pass of the same replay that keeps
//! the timeline and finds that op (`find_peak_reserved_op`).

use std::io::Write;
use std::path::Path;

use super::XAxisArg;
use crate::html::{Curve, HtmlReport, XAxis, write_html};
use crate::plot::{PlotLine, plot_lines};
use crate::{CliError, Result};
use gpumem::storage::units::format_bytes;
use gpumem_replay::attribution::{Attribution, live_at, peak_live_event};
use gpumem_replay::replay::{Program, ReplayRun, Sample};
use gpumem_replay::side_by_side::{recorded_allocator, recorded_curve};
use gpumem_replay::trace::Trace;

/// Points of the recorded allocator's curve.
const RECORDED_POINTS: usize = 2000;

/// Fill the report's device, recorded allocator and (with `top > 0`)
/// attribution; `observed` is the untimed pass that found the op of peak
/// reserved.
pub(crate) fn complete_report(
    run: &mut ReplayRun,
    trace: &Trace,
    program: &Program,
    top: usize,
    observed: Option<&ReplayRun>,
) {
    let report = &mut run.report;
    report.device = trace.stats.device;
    report.recorded = recorded_allocator(
        trace,
        program,
        report.peak_reserved_bytes,
        report.failed_allocs,
    );
    report.pre_existing.clone_from(&trace.stats.pre_existing);
    if top == 0 {
        return;
    }
    let Some(event) = peak_live_event(trace) else {
        return;
    };
    let mut peak_live = live_at(trace, event, top);
    peak_live.op = program.op_of_event(event) as u64 + 1;
    let peak_reserved = observed.and_then(|o| o.peak_reserved_op).map(|op| {
        let mut at = live_at(trace, program.event_of_op(op), top);
        at.op = op as u64 + 1;
        at
    });
    run.report.attribution = Some(Attribution {
        peak_live,
        peak_reserved,
    });
}

/// The x axis to draw on: time only when the trace has times.
pub(crate) fn x_axis(arg: XAxisArg, trace: &Trace, err: &mut dyn Write) -> std::io::Result<XAxis> {
    match arg {
        XAxisArg::Ops => Ok(XAxis::Ops),
        XAxisArg::Time if trace.origins.has_times() => Ok(XAxis::Time),
        XAxisArg::Time => {
            writeln!(
                err,
                "note: the trace has no times (time_us); --x time draws ops"
            )?;
            Ok(XAxis::Ops)
        }
    }
}

/// The x of op `op` (from 0).
fn x_of_op(trace: &Trace, program: &Program, x: XAxis, op: u64) -> u64 {
    match x {
        XAxis::Ops => op + 1,
        XAxis::Time => trace
            .origins
            .time_us(program.event_of_op(op as usize))
            .unwrap_or(op + 1),
    }
}

/// The lines both views draw: live, reserved, and the recorded
/// allocator's reserved bytes when the trace has them.
fn lines(trace: &Trace, program: &Program, samples: &[Sample], x: XAxis) -> Vec<Curve> {
    let at = |op| x_of_op(trace, program, x, op);
    let mut curves = vec![
        Curve {
            name: "reserved (held from the device)".into(),
            points: samples.iter().map(|s| (at(s.op), s.reserved)).collect(),
        },
        Curve {
            name: "live (requested by the program)".into(),
            points: samples.iter().map(|s| (at(s.op), s.live)).collect(),
        },
    ];
    if let Some((name, _)) = trace.origins.source_reserved() {
        curves.push(Curve {
            name: format!("{name} reserved (recorded)"),
            points: recorded_curve(trace, program, RECORDED_POINTS)
                .into_iter()
                .map(|(op, bytes)| (at(op), bytes))
                .collect(),
        });
    }
    curves
}

/// Each pool's reserved bytes over the replay, named as the report names
/// the pool (pools that never reserved anything are left out).
fn bands(run: &ReplayRun, trace: &Trace, program: &Program, x: XAxis) -> Vec<Curve> {
    run.report
        .pools
        .iter()
        .enumerate()
        .map(|(i, line)| Curve {
            name: line.kind.to_string(),
            points: run
                .pool_timeline
                .iter()
                .map(|(op, pools)| {
                    (
                        x_of_op(trace, program, x, *op),
                        pools.get(i).copied().unwrap_or(0),
                    )
                })
                .collect(),
        })
        .filter(|c| c.points.iter().any(|&(_, bytes)| bytes > 0))
        .collect()
}

fn x_label(x: XAxis) -> &'static str {
    match x {
        XAxis::Ops => "operation index",
        XAxis::Time => "time (µs, from the trace)",
    }
}

/// `--plot`: the SVG timeline.
pub(crate) fn write_plot(
    path: &Path,
    run: &ReplayRun,
    trace: &Trace,
    program: &Program,
    x: XAxis,
) -> Result<()> {
    let curves = lines(trace, program, &run.timeline, x);
    let plotted: Vec<PlotLine<'_>> = curves
        .iter()
        .map(|c| PlotLine {
            name: &c.name,
            points: &c.points,
        })
        .collect();
    plot_lines(path, &run.report, &plotted, x_label(x))
}

/// Most `(op, time)` pairs a page's x axis reads times from.
const CLOCK_POINTS: usize = 512;

/// `(op, time_us)` of every so many events, when the trace has times.
fn clock(trace: &Trace, program: &Program) -> Vec<(u64, u64)> {
    if !trace.origins.has_times() {
        return Vec::new();
    }
    let events = trace.events.len();
    let step = events.div_ceil(CLOCK_POINTS).max(1);
    (0..events)
        .step_by(step)
        .chain(events.checked_sub(1))
        .filter_map(|e| {
            let time = trace.origins.time_us(e)?;
            Some((program.op_of_event(e) as u64 + 1, time))
        })
        .collect()
}

/// `--html`: the interactive page.
pub(crate) fn write_page(
    path: &Path,
    run: &ReplayRun,
    trace: &Trace,
    program: &Program,
    x: XAxis,
) -> Result<()> {
    let r = &run.report;
    let ratio = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"));
    let mut summary = vec![
        ("backend".to_string(), r.backend.clone()),
        (
            "ops".to_string(),
            format!("{} ({} allocs, {} frees)", r.ops, r.allocs, r.frees),
        ),
        ("peak live".to_string(), format_bytes(r.peak_live_bytes)),
        (
            "peak reserved".to_string(),
            format_bytes(r.peak_reserved_bytes),
        ),
        (
            "fragmentation at peak".to_string(),
            ratio(r.fragmentation.peak),
        ),
        (
            "final reserved".to_string(),
            format_bytes(r.final_reserved_bytes),
        ),
        ("storage allocs".to_string(), r.storage_allocs.to_string()),
        (
            "replay time".to_string(),
            format!("{:.1} ns/op", r.ns_per_op),
        ),
        ("failed allocs".to_string(), r.failed_allocs.to_string()),
    ];
    if let Some(rec) = &r.recorded {
        summary.push((
            format!("{} peak reserved", rec.name),
            format!(
                "{} (op {})",
                format_bytes(rec.peak_reserved_bytes),
                rec.peak_op
            ),
        ));
    }
    let x_of_event = |event: usize| x_of_op(trace, program, x, program.op_of_event(event) as u64);
    let page = HtmlReport {
        title: format!("{} on {}", r.source, r.backend),
        summary,
        curves: lines(trace, program, &run.timeline, x),
        bands: bands(run, trace, program, x),
        trace,
        x,
        x_of_event: &x_of_event,
        clock: clock(trace, program),
    };
    let io = |source| CliError::Io {
        what: path.display().to_string(),
        source,
    };
    let file = std::fs::File::create(path).map_err(|source| CliError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = std::io::BufWriter::new(file);
    write_html(&mut out, &page).map_err(io)
}
