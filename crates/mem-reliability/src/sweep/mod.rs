//! The fault sweep: count a scenario's device calls, then fail each in turn.
//!
//! Run `k` arms the device to fail its k-th counted call (allocate, free,
//! write, read, copy, synchronize, ...) — or, with [`FaultMode::From`],
//! that call and every later one, as a device that went away. The program
//! runs without the per-step invariant pass (whose reads would shift the
//! count); each op still judges its own outcome. Then, disarmed, the full
//! invariant pass and the teardown run: contents intact, usage equal to the
//! model, ledgers consistent, nothing outstanding.

use crate::error::Violation;
use crate::program::{Op, Program};
use crate::sweep::scenario::Scenario;
use crate::world::{Limits, RunSummary, World};

mod arena_scenarios;
pub(crate) mod scenario;
mod steps;

/// How the k-th call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultMode {
    /// Only the k-th call.
    Nth,
    /// The k-th call and every one after it.
    From,
}

/// A sweep, in figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// What was swept (a scenario's or a corpus file's name).
    pub name: String,
    /// How calls failed.
    pub mode: FaultMode,
    /// Device calls of the fault-free run.
    pub calls: u64,
    /// Runs made (one per `k` tried).
    pub runs: u64,
    /// Faults injected over every run.
    pub faults: u64,
    /// Typed refusals observed over every run.
    pub refusals: u64,
    /// Refused reservations that had given empty pages back first (the
    /// growth's documented give-back; docs/reliability.md says why it is
    /// harmless).
    pub released_on_refusal: u64,
    /// Refused arena reservations that changed the idle chunks, their undo
    /// refused too ([`RunSummary::idle_on_refusal`]).
    pub idle_on_refusal: u64,
    /// Refused arena reservations that had shed idle chunks first
    /// ([`RunSummary::shed_on_refusal`]).
    pub shed_on_refusal: u64,
    /// Unmaps the reclamation oracle checked over every run
    /// ([`RunSummary::unmaps_checked`]).
    pub unmaps_checked: u64,
    /// Runs that broke a promise, with their `k`.
    pub violations: Vec<(u64, Violation)>,
}

/// Run `program` without faults; return its device-call count and summary.
pub fn count_calls(program: &Program) -> Result<(u64, RunSummary), Violation> {
    let mut world = World::for_program(program, Limits::default());
    world.device().reset_count();
    for &op in &program.ops {
        world.apply(op)?;
    }
    let calls = world.device().calls();
    let step = program.len();
    world.check(step)?;
    Ok((calls, world.finish()?))
}

/// Run `program` with call `k` failing (see [`FaultMode`]), then check everything.
pub fn run_with_fault(program: &Program, k: u64, mode: FaultMode) -> Result<RunSummary, Violation> {
    let mut world = World::for_program(program, Limits::default());
    world.device().reset_count();
    match mode {
        FaultMode::Nth => world.device().arm(k),
        FaultMode::From => world.device().arm_from(k),
    }
    for &op in &program.ops {
        world.apply(op)?;
    }
    world.device().disarm();
    world.check(program.len())?;
    world.finish()
}

/// Sweep `scenario`: every `k` in `1..=calls`, or at most `max_runs` of
/// them spread evenly (always including the first and the last).
pub fn sweep(scenario: Scenario, mode: FaultMode, max_runs: Option<u64>) -> SweepReport {
    sweep_program(scenario.name(), &scenario.program(), mode, max_runs)
}

/// Sweep any program (a decoded corpus file, say) like a scenario. Its own
/// [`Op::FailNext`] ops are left out: the sweep decides which call fails.
pub fn sweep_program(
    name: &str,
    program: &Program,
    mode: FaultMode,
    max_runs: Option<u64>,
) -> SweepReport {
    let program = Program {
        ops: program
            .ops
            .iter()
            .copied()
            .filter(|op| *op != Op::FailNext)
            .collect(),
        arenas: program.arenas,
        lazy_streams: program.lazy_streams,
    };
    let mut report = SweepReport {
        name: name.to_string(),
        mode,
        calls: 0,
        runs: 0,
        faults: 0,
        refusals: 0,
        released_on_refusal: 0,
        idle_on_refusal: 0,
        shed_on_refusal: 0,
        unmaps_checked: 0,
        violations: Vec::new(),
    };
    let calls = match count_calls(&program) {
        Ok((calls, summary)) => {
            report.refusals += summary.refusals;
            report.unmaps_checked += summary.unmaps_checked;
            calls
        }
        Err(v) => {
            report.violations.push((0, v));
            return report;
        }
    };
    report.calls = calls;
    let runs = max_runs.map_or(calls, |m| m.clamp(1, calls.max(1)));
    let mut ks: Vec<u64> = (0..runs)
        .map(|i| {
            if runs == 1 {
                1
            } else {
                1 + i * (calls.max(1) - 1) / (runs - 1)
            }
        })
        .collect();
    ks.dedup();
    for k in ks {
        report.runs += 1;
        match run_with_fault(&program, k, mode) {
            Ok(summary) => {
                report.faults += summary.faults;
                report.refusals += summary.refusals;
                report.released_on_refusal += summary.released_on_refusal;
                report.idle_on_refusal += summary.idle_on_refusal;
                report.shed_on_refusal += summary.shed_on_refusal;
                report.unmaps_checked += summary.unmaps_checked;
            }
            Err(v) => report.violations.push((k, v)),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Also the crate's miri test: every scenario drives the host device's
    /// unsafe paths (allocate, write, read, copy, free) through the pools
    /// and the budgets, clean and with one fault half-way.
    #[test]
    fn every_scenario_runs_clean_and_survives_a_fault_half_way() {
        // Arena scenarios map a memfd with mmap(MAP_FIXED), which miri
        // cannot run; they run everywhere else (and in tests/arena_sweep.rs).
        let runnable = Scenario::ALL
            .into_iter()
            .filter(|s| !(cfg!(miri) && s.arenas()));
        for scenario in runnable {
            let program = scenario.program();
            let (calls, _) = count_calls(&program)
                .unwrap_or_else(|v| panic!("{} without faults: {v}", scenario.name()));
            assert!(calls > 0, "{} made no device call", scenario.name());
            let summary = run_with_fault(&program, calls.div_ceil(2), FaultMode::Nth)
                .unwrap_or_else(|v| panic!("{} with a fault: {v}", scenario.name()));
            assert_eq!(summary.faults, 1, "{}", scenario.name());
        }
    }
}
