//! `gpumem compare` through the binary: exit codes, the JSON object, and
//! the one-line error for an allocator it does not know.

mod common;

use common::text;

use std::process::{Command, Output};

fn gpumem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .arg("compare")
        .args(args)
        .output()
        .expect("the gpumem binary runs")
}

#[test]
fn compare_prints_one_json_object_with_a_row_per_allocator_and_exits_0() {
    let out = gpumem(&["--workload", "serving", "--scale", "0.02", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8, "{v}");
    for name in ["pytorch", "pytorch-expandable"] {
        let row = rows.iter().find(|r| r["allocator"] == name).unwrap();
        assert!(row["driver_ns_per_op"].as_f64().unwrap() > 0.0, "{row}");
    }
    let peak = &rows[0]["peak_live_bytes"];
    assert!(rows.iter().all(|r| &r["peak_live_bytes"] == peak), "{v}");
    assert!(rows.iter().all(|r| r["ns_per_op"].as_f64().unwrap() > 0.0));
}

#[test]
fn a_compare_with_failed_allocations_exits_1_after_the_table_unless_allowed() {
    let args = [
        "--workload",
        "devlog",
        "--device-gib",
        "0.1",
        "--against",
        "gpumem,system",
    ];
    let out = gpumem(&args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("gpumem") && stdout.contains("system"),
        "{stdout}"
    );
    let errors: Vec<_> = stderr
        .lines()
        .filter(|l| l.starts_with("gpumem: error"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("--allow-failures"), "{stderr}");

    let out = gpumem(&[&args[..], &["--allow-failures"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn an_unknown_allocator_exits_1_naming_the_valid_ones() {
    let out = gpumem(&["--workload", "devlog", "--against", "jemalloc"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for name in [
        "gpumem",
        "sub_slices",
        "exclusive",
        "sliced",
        "offset-allocator",
        "system",
    ] {
        assert!(stderr.contains(name), "{stderr}");
    }
    assert!(out.stdout.is_empty());
}

#[test]
fn threads_run_an_rmm_log_with_two_streams_on_two_threads() {
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gpumem-replay/tests/data/rmm_log.csv"
    );
    let out = gpumem(&[log, "--threads", "--json", "--against", "gpumem,system"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["threaded_streams"], 2, "{v}");
    assert_eq!(v["rows"][0]["threads"], 2, "{v}");
    assert_eq!(v["rows"][1]["threads"], 1, "{v}");
}

#[test]
fn the_host_backend_runs_gpumems_rows_on_real_memory() {
    let out = gpumem(&[
        "--workload",
        "devlog",
        "--scale",
        "0.1",
        "--backend",
        "host",
        "--device-gib",
        "0.5",
        "--against",
        "gpumem,sliced,offset-allocator",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("compare of devlog on backend host"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("128.00 MiB").count(), 6, "{stdout}");
}
