//! `cargo xtask bench [--full] [ARGS…]`: the benchmark suite.
//!
//! - `bench`: the quick, deterministic table (`gpumem-benches`'s
//!   `bench-quick` binary, release build): a few seconds of measuring,
//!   one table of ns/op with ratios against `offset-allocator` and the
//!   system allocator, the fragmentation table, and the goals. Extra
//!   arguments go to the binary (`--depths 1000,100000`, `--runs N`,
//!   `--ops N`).
//! - `bench --full`: every criterion target of the workspace (`cargo bench
//!   --workspace`); extra arguments go to criterion (a filter, or
//!   `--warm-up-time 1 --measurement-time 3`).
//!
//! CI never times anything: `cargo xtask ci` runs the bench targets once in
//! test mode through `cargo test --all-targets`, so they cannot rot.

use crate::{cargo, run};

/// Runs the quick table, or the criterion suite with `--full`.
pub fn bench(args: &[String]) -> Result<(), String> {
    let full = args.iter().any(|a| a == "--full");
    let rest: Vec<&str> = args
        .iter()
        .filter(|a| *a != "--full")
        .map(String::as_str)
        .collect();
    if full {
        let mut cmd = cargo(&["bench", "--workspace", "--benches"]);
        if !rest.is_empty() {
            cmd.arg("--").args(&rest);
        }
        run(&mut cmd)
    } else {
        let mut cmd = cargo(&[
            "run",
            "--release",
            "-p",
            "gpumem-benches",
            "--bin",
            "bench-quick",
            "--",
        ]);
        cmd.args(&rest);
        run(&mut cmd)
    }
}
