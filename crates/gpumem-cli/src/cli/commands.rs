//! Executing a parsed command.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::replay_views::{complete_report, write_page, write_plot, x_axis};
use super::{Cli, Command, RecordArgs, ReplayArgs};
use crate::input::{load_input, write_notes};
use crate::{CliError, Result};
use gpumem::storage::units::format_bytes;
use gpumem_replay::replay::{Program, ReplayOptions};
use gpumem_replay::setup::{
    BackendKind, PoolSettings, base_config, device_bytes, host_capacity, load_config, replay_on,
};
use gpumem_replay::trace::{input_notes, write_trace_jsonl};
use gpumem_replay::workload::WorkloadSpec;

/// Timeline samples kept for `--plot`.
pub const PLOT_POINTS: usize = 2000;

fn io_err(what: &str) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        what: what.to_string(),
        source,
    }
}

/// Runs `cli`, writing results to `out` and warnings and notes to `err`.
pub fn run(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    match cli.command {
        Command::Replay(args) => run_replay(&args, out, err),
        Command::Record(args) => run_record(&args, out, err),
        Command::Plan(args) => crate::plan::run_plan(&args, out, err),
        Command::Compare(args) => crate::compare::run_compare(&args, out, err),
    }
}

fn progress_bar(json: bool) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("replaying {bar:40} {human_pos}/{human_len} ops ({eta})")
    {
        bar.set_style(style);
    }
    Some(bar)
}

fn run_replay(args: &ReplayArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let base = base_config()?;
    let config = match &args.config {
        Some(value) => load_config(value, &base)?,
        None => base,
    };
    let mut capacity = device_bytes(args.device_gib)?;
    if args.backend == BackendKind::Host {
        let (capped, was_capped) = host_capacity(capacity);
        if was_capped {
            writeln!(
                err,
                "note: the host backend holds real memory; device capped at {} \
                 (half of this machine's available memory)",
                format_bytes(capped)
            )
            .map_err(io_err("stderr"))?;
        }
        capacity = capped;
    }
    let (mut trace, source) = load_input(&args.input)?;
    trace.origins.group_by(args.group_by);
    let notes = input_notes(&trace, &source);
    write_notes(&notes, err).map_err(io_err("stderr"))?;
    let program = Program::compile(&trace.events)?;
    let views = args.plot.is_some() || args.html.is_some();
    // The timed pass reads no statistics beyond the allocator's calls; the
    // timeline and the op of peak reserved come from one untimed pass.
    let timed = ReplayOptions {
        progress: progress_bar(args.json),
        ..ReplayOptions::default()
    };
    let settings = PoolSettings {
        config,
        relocate: args.relocate,
        streams: args.streams,
    };
    let replay = |options: &ReplayOptions| {
        replay_on(
            args.backend,
            capacity,
            &settings,
            &source,
            &program,
            options,
        )
    };
    let mut run = replay(&timed)?;
    let observed = (views || args.top > 0)
        .then(|| {
            replay(&ReplayOptions {
                timeline_points: if views { PLOT_POINTS } else { 0 },
                find_peak_reserved_op: args.top > 0,
                ..ReplayOptions::default()
            })
        })
        .transpose()?;
    if let Some(observed) = &observed {
        run.timeline.clone_from(&observed.timeline);
        run.pool_timeline.clone_from(&observed.pool_timeline);
    }
    complete_report(&mut run, &trace, &program, args.top, observed.as_ref());
    run.report.input_notes = notes;
    if args.json {
        let text = serde_json::to_string(&run.report).map_err(|e| CliError::Io {
            what: "JSON report".to_string(),
            source: e.into(),
        })?;
        writeln!(out, "{text}").map_err(io_err("stdout"))?;
    } else {
        write!(out, "{}", run.report).map_err(io_err("stdout"))?;
    }
    out.flush().map_err(io_err("stdout"))?;
    let x = x_axis(args.x_axis, &trace, err).map_err(io_err("stderr"))?;
    if let Some(path) = &args.plot {
        write_plot(path, &run, &trace, &program, x)?;
        writeln!(err, "plot written to {}", path.display()).map_err(io_err("stderr"))?;
    }
    if let Some(path) = &args.html {
        write_page(path, &run, &trace, &program, x)?;
        writeln!(err, "report page written to {}", path.display()).map_err(io_err("stderr"))?;
    }
    let report = &run.report;
    if report.failed_allocs > 0 && !args.allow_failures {
        let first = report.first_failure.as_deref().unwrap_or("no message");
        return Err(CliError::FailedAllocations {
            failed: report.failed_allocs,
            attempted: report.allocs + report.failed_allocs,
            first: first.split_whitespace().collect::<Vec<_>>().join(" "),
        });
    }
    Ok(())
}

/// `-o` value that writes the trace to stdout.
const STDOUT_PATH: &str = "-";

fn run_record(args: &RecordArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let spec = WorkloadSpec {
        seed: args.seed,
        scale: args.scale,
    };
    let trace = args.workload.generate_trace(&spec)?;
    let to_stdout = args.output.as_os_str() == STDOUT_PATH;
    if to_stdout {
        write_trace_jsonl(BufWriter::with_capacity(1 << 16, &mut *out), &trace)
            .map_err(io_err("stdout"))?;
    } else {
        write_trace_file(&args.output, &trace)?;
    }
    // With the trace on stdout, the note goes to stderr.
    let note: &mut dyn Write = if to_stdout { err } else { out };
    let target = match to_stdout {
        true => "stdout".to_string(),
        false => args.output.display().to_string(),
    };
    writeln!(
        note,
        "wrote {} events of workload {} (seed {}, scale {}) to {target}",
        trace.events.len(),
        args.workload.name(),
        args.seed,
        args.scale,
    )
    .map_err(io_err(if to_stdout { "stderr" } else { "stdout" }))
}

fn write_trace_file(path: &Path, trace: &gpumem_replay::trace::Trace) -> Result<()> {
    let file = File::create(path).map_err(|source| CliError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    write_trace_jsonl(BufWriter::new(file), trace).map_err(|source| CliError::Io {
        what: path.display().to_string(),
        source,
    })
}
