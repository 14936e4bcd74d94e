//! Executing a parsed command.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::backends::{PoolSettings, host_capacity, replay_on};
use super::input::{load_input, load_layout, warn_about};
use super::{BackendKind, Cli, Command, MAX_DEVICE_GIB, RecordArgs, ReplayArgs};
use crate::error::{CliError, Result};
use crate::plot::plot_timeline;
use crate::replay::{Program, ReplayOptions};
use crate::report::human_bytes;
use crate::trace::write_jsonl;
use crate::workload::WorkloadSpec;

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
        Command::Record(args) => run_record(&args, out),
        Command::Plan(args) => crate::plan::run_plan(&args, out, err),
    }
}

/// Device bytes for `--device-gib`, refusing 0 and absurd sizes.
pub fn device_bytes(gib: u64) -> Result<u64> {
    if gib == 0 || gib > MAX_DEVICE_GIB {
        return Err(CliError::InvalidArgument {
            option: "--device-gib",
            value: gib.to_string(),
            reason: format!("must be between 1 and {MAX_DEVICE_GIB}"),
        });
    }
    Ok(gib << 30)
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
    let config = load_layout(&args.config)?;
    let mut capacity = device_bytes(args.device_gib)?;
    if args.backend == BackendKind::Host {
        let (capped, was_capped) = host_capacity(capacity);
        if was_capped {
            writeln!(
                err,
                "note: the host backend holds real memory; device capped at {} \
                 (half of this machine's available memory)",
                human_bytes(capped)
            )
            .map_err(io_err("stderr"))?;
        }
        capacity = capped;
    }
    let (trace, source) = load_input(&args.input)?;
    warn_about(&trace, err).map_err(io_err("stderr"))?;
    let program = Program::compile(&trace.events)?;
    drop(trace);
    let options = ReplayOptions {
        timeline_points: if args.plot.is_some() { PLOT_POINTS } else { 0 },
        progress: progress_bar(args.json),
    };
    let settings = PoolSettings {
        config,
        relocate: args.relocate,
        streams: args.streams,
    };
    let run = replay_on(
        args.backend,
        capacity,
        &settings,
        &source,
        &program,
        &options,
    )?;
    if args.json {
        let text = serde_json::to_string(&run.report).map_err(|e| CliError::Io {
            what: "JSON report".to_string(),
            source: e.into(),
        })?;
        writeln!(out, "{text}").map_err(io_err("stdout"))?;
    } else {
        write!(out, "{}", run.report).map_err(io_err("stdout"))?;
    }
    if let Some(path) = &args.plot {
        plot_timeline(path, &run.report, &run.timeline)?;
        writeln!(err, "plot written to {}", path.display()).map_err(io_err("stderr"))?;
    }
    Ok(())
}

fn run_record(args: &RecordArgs, out: &mut dyn Write) -> Result<()> {
    let spec = WorkloadSpec {
        seed: args.seed,
        scale: args.scale,
    };
    let events = args.workload.generate(&spec)?;
    write_trace_file(&args.output, &events)?;
    writeln!(
        out,
        "wrote {} events of workload {} (seed {}, scale {}) to {}",
        events.len(),
        args.workload.name(),
        args.seed,
        args.scale,
        args.output.display()
    )
    .map_err(io_err("stdout"))
}

fn write_trace_file(path: &Path, events: &[crate::trace::Event]) -> Result<()> {
    let file = File::create(path).map_err(|source| CliError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    write_jsonl(BufWriter::new(file), events).map_err(|source| CliError::Io {
        what: path.display().to_string(),
        source,
    })
}
