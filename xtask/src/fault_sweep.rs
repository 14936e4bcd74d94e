//! `cargo xtask fault-sweep [--max-runs N]`: the full fault-injection sweep.
//!
//! Every scenario of mem-reliability (growth, relocation, capture, budget
//! overlay, install_pools), every device call failing once, then every
//! call failing from that point on; a release build of the sweep example
//! prints one line per scenario and mode and fails if any run broke a
//! promise. `cargo test -p mem-reliability` runs the same sweep in debug.

use crate::{cargo, run};

/// Run the sweep; extra arguments go to the sweep program.
pub fn fault_sweep(args: &[String]) -> Result<(), String> {
    let mut cmd = cargo(&[
        "run",
        "--release",
        "-p",
        "mem-reliability",
        "--example",
        "fault_sweep",
        "--",
    ]);
    cmd.args(args);
    run(&mut cmd)
}
