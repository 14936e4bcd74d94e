//! `cargo xtask fault-sweep [--max-runs N]`: the full fault-injection sweep.
//!
//! Every scenario of mem-reliability (growth, relocation, capture, budget
//! overlay, install_pools) and every corpus program, every device call
//! failing once, then every call failing from that point on; the sweep
//! example prints one line per program and mode and exits non-zero if any
//! run broke a promise. `cargo test -p mem-reliability` runs only a
//! bounded part of it (one pass per scenario, at most 40 `k`s per corpus
//! program), so a violation at one fault position can hide there: `cargo
//! xtask ci` runs this full sweep too ([`fault_sweep_in_ci`]).

use crate::{cargo, run};

/// Run the sweep (release build); extra arguments go to the sweep program.
pub fn fault_sweep(args: &[String]) -> Result<(), String> {
    sweep_with_profile("release", args)
}

/// The full sweep as a CI step: built with the test profile, whose
/// artifacts `cargo test --workspace --all-targets` has just built (the
/// example included), so the step costs the sweep's seconds, not a
/// release build.
pub fn fault_sweep_in_ci() -> Result<(), String> {
    sweep_with_profile("test", &[])
}

fn sweep_with_profile(profile: &str, args: &[String]) -> Result<(), String> {
    let mut cmd = cargo(&[
        "run",
        "--profile",
        profile,
        "-p",
        "mem-reliability",
        "--example",
        "fault_sweep",
        "--",
    ]);
    cmd.args(args);
    run(&mut cmd).map_err(|e| {
        format!("the full fault sweep found violations or did not run (listed above): {e}")
    })
}
