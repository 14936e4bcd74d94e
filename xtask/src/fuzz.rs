//! `cargo xtask fuzz [--seconds N]`: run the cargo-fuzz target for N seconds.
//!
//! The target (`fuzz/fuzz_targets/program.rs`) decodes bytes into a program
//! of pool, capture, relocation and budget ops and checks the model after
//! every step. It needs a nightly toolchain with `cargo-fuzz`; without
//! them the task says why and succeeds, because stable CI already replays
//! the committed corpus (`cargo test -p mem-reliability --test corpus`).
//! New inputs go to `fuzz/target/corpus-work`, never into the committed
//! seeds; a crash lands in `fuzz/artifacts/program/`.

use std::process::Command;

use crate::run;

/// Default run length.
const DEFAULT_SECONDS: u64 = 60;

/// Run the fuzz target, or skip with a reason when cargo-fuzz is missing.
pub fn fuzz(args: &[String]) -> Result<(), String> {
    let seconds = match args {
        [] => DEFAULT_SECONDS,
        [flag, value] if flag == "--seconds" => value
            .parse::<u64>()
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| format!("--seconds wants a positive whole number, got {value:?}"))?,
        other => {
            return Err(format!(
                "unexpected arguments {other:?}; usage: cargo xtask fuzz [--seconds N]"
            ));
        }
    };
    if let Some(reason) = missing_tools() {
        eprintln!("skipping fuzz: {reason}");
        return Ok(());
    }
    let work = "target/corpus-work";
    std::fs::create_dir_all(format!("fuzz/{work}"))
        .map_err(|e| format!("cannot create fuzz/{work}: {e}"))?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir("fuzz")
        .env_remove("RUSTUP_TOOLCHAIN")
        .args([
            "+nightly",
            "fuzz",
            "run",
            "program",
            work,
            "corpus/program",
            "--",
        ])
        .arg(format!("-max_total_time={seconds}"))
        .arg("-max_len=2048");
    run(&mut cmd)
}

/// Why the fuzzer cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    let probe = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output();
    match probe {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "`cargo +nightly fuzz` is unavailable ({}); install a nightly toolchain and \
             `cargo install cargo-fuzz`",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("no message")
        )),
        Err(e) => Some(format!("cannot run cargo: {e}")),
    }
}
