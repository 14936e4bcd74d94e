//! What the examples print, run as a new user runs them: byte counts in
//! human units (`64.00 GiB`, never `68719476736 B`), reports that say what
//! is true when nothing is reserved or free, and errors by their message,
//! not their `Debug` form.
//!
//! `cargo test` builds the examples beside the test binaries
//! (`target/<profile>/examples/`); a run that did not build them (`--test
//! examples_output` alone) says it skipped.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The example binary `name` of this build, when it was built.
fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    path.exists().then_some(path)
}

fn run(name: &str, conf: Option<&str>) -> Option<Output> {
    let Some(path) = example(name) else {
        println!("skipping: the example `{name}` is not built (`cargo test -p gpumem` builds it)");
        return None;
    };
    let mut command = Command::new(path);
    command.env_remove("GPUMEM_CONF");
    if let Some(conf) = conf {
        command.env("GPUMEM_CONF", conf);
    }
    Some(command.output().expect("the example runs"))
}

/// A raw byte count: five or more digits followed by ` B`, ` bytes` or
/// `-byte`.
fn raw_byte_count(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let rest = &line[i..];
            let unit = rest.starts_with(" B")
                && !rest[2..].starts_with(|c: char| c.is_alphanumeric())
                || rest.starts_with(" bytes")
                || rest.starts_with("-byte");
            if i - start >= 5 && unit {
                return Some(&line[start..]);
            }
        } else {
            i += 1;
        }
    }
    None
}

#[test]
fn the_raw_byte_count_finder_finds_what_the_examples_used_to_print() {
    assert!(raw_byte_count("pool 0 arena(range 68719476736 B, max slice").is_some());
    assert!(raw_byte_count("allocation of 67108864 bytes inside").is_some());
    assert!(raw_byte_count("a new 67108864-byte page").is_some());
    assert!(raw_byte_count("range 64.00 GiB, 0 B cached, 1000000 ops").is_none());
    assert!(raw_byte_count("pair ops=1000000 ns/op=10968.0").is_none());
}

#[test]
fn the_examples_print_human_units_and_true_reports() {
    for name in [
        "budget",
        "capture",
        "runtime_integration",
        "shared_kv_cache",
    ] {
        let Some(out) = run(name, None) else { continue };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in stdout.lines() {
            assert_eq!(raw_byte_count(line), None, "{name}: {line}");
            assert!(!line.contains("0 B virtual"), "{name}: {line}");
            assert!(!line.contains("of 0 B free"), "{name}: {line}");
            assert!(!line.contains("DeviceBudget"), "{name}: {line}");
        }
        if name == "runtime_integration" {
            assert!(
                stdout.contains("arena(range of 64.00 GiB while in use"),
                "{stdout}"
            );
            assert!(stdout.contains("no address range reserved"), "{stdout}");
            assert!(stdout.contains("= 0 B unused; no free block"), "{stdout}");
        }
        if name == "shared_kv_cache" {
            assert!(
                stdout.contains(
                    "reader: all 4 layers hold the writer's bytes after the writer let go"
                ),
                "{stdout}"
            );
        }
        if name == "budget" {
            assert!(stdout.contains("refused by: the device budget"), "{stdout}");
            assert!(
                stdout.contains("a 0.5 budget of 1 GiB is 512.00 MiB"),
                "{stdout}"
            );
        }
    }
}

#[test]
fn an_example_prints_a_bad_gpumem_conf_by_its_message_not_its_debug_form() {
    for name in ["budget", "capture", "runtime_integration"] {
        let Some(out) = run(name, Some("garbage!!")) else {
            continue;
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains("error: malformed GPUMEM_CONF item `garbage!!`"),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains("MalformedConf"), "{name}: {stderr}");
    }
}
