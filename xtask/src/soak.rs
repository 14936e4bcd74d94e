//! `cargo xtask soak [--secs N] [--seed S]`: the facade's stress test, long.
//!
//! gpumem's `tests/stress.rs` drives four worker threads on the four streams
//! of one host device (reserve, write, verify, drop, hand over, record a
//! use and submit, complete, bind, stamp) under a device thread that
//! relocates, reclaims and captures graphs, and checks throughout that no
//! memory another stream's unfinished work uses is handed out or moved and
//! that every buffer keeps its bytes, on paged pools and on the default
//! arenas side by side. `cargo test` (so `cargo xtask ci`) runs it for
//! 20 s in the test profile; this task runs it in release for
//! `--secs` (default 600) through `GPUMEM_STRESS_SECS`, and `--seed`
//! (decimal or `0x` hex) sets `GPUMEM_STRESS_SEED` to repeat a printed
//! seed. A run that does not end 30 s after its time aborts, naming every
//! thread's last op.

use crate::{cargo, run};

/// Default run length.
const DEFAULT_SECS: u64 = 600;

const USAGE: &str = "usage: cargo xtask soak [--secs N] [--seed S]";

/// A whole number, decimal or `0x` hex.
fn number(flag: &str, value: &str) -> Result<u64, String> {
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    parsed.map_err(|_| format!("{flag} wants a whole number (decimal or 0x hex), got {value:?}"))
}

/// Run the stress test in release for `--secs` seconds.
pub fn soak(args: &[String]) -> Result<(), String> {
    let (mut secs, mut seed) = (DEFAULT_SECS, None);
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .ok_or_else(|| format!("{flag} wants a value; {USAGE}"))?;
        match flag.as_str() {
            "--secs" => {
                secs = Some(number(flag, value)?)
                    .filter(|&s| s > 0)
                    .ok_or_else(|| format!("--secs wants a positive number, got {value:?}"))?;
            }
            "--seed" => seed = Some(number(flag, value)?),
            other => return Err(format!("unexpected argument {other:?}; {USAGE}")),
        }
    }
    let mut cmd = cargo(&[
        "test",
        "--release",
        "-p",
        "gpumem",
        "--test",
        "stress",
        "--",
        "--nocapture",
    ]);
    cmd.env("GPUMEM_STRESS_SECS", secs.to_string());
    // Without --seed, a GPUMEM_STRESS_SEED already set is kept.
    if let Some(seed) = seed {
        cmd.env("GPUMEM_STRESS_SEED", format!("{seed:#x}"));
    }
    run(&mut cmd)
}
