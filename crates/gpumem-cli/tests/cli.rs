//! The `gpumem` binary end to end: exit codes, JSON, plots, record → replay,
//! and clear errors (never a panic) on bad input.

mod common;

use common::*;

use std::path::PathBuf;
use std::process::Output;

fn assert_clean_failure(out: &Output, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn replay_json_prints_one_object_with_the_documented_fields() {
    let out = gpumem(&["replay", "--workload", "devlog", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for field in [
        "ops",
        "peak_live_bytes",
        "peak_reserved_bytes",
        "final_reserved_bytes",
        "storage_allocs",
        "wall_ns",
        "ns_per_op",
        "unknown_frees",
        "failed_allocs",
    ] {
        assert!(v.get(field).is_some(), "missing {field} in {stdout}");
    }
    assert_eq!(v["backend"], "sim");
    assert_eq!(v["peak_live_bytes"], 128u64 << 20);
    let ns = v["ns_per_op"].as_f64().unwrap();
    let expected = v["wall_ns"].as_f64().unwrap() / v["ops"].as_f64().unwrap();
    assert!((ns - expected).abs() < 1e-6 * expected.max(1.0));
    assert!(v["fragmentation"]["peak"].as_f64().unwrap() >= 1.0);
    assert!(
        !text(&out.stderr).contains("replaying"),
        "no progress bar off a terminal"
    );
}

#[test]
fn replay_plot_writes_a_readable_svg() {
    let path = scratch("serving.svg");
    let out = gpumem(&[
        "replay",
        "--workload",
        "serving",
        "--scale",
        "0.02",
        "--plot",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("peak reserved"));
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"));
    for label in [
        "live (requested by the program)",
        "reserved (held from the device)",
        "operation index",
        "serving on sim",
    ] {
        assert!(svg.contains(label), "missing {label:?}");
    }
    assert!(
        svg.matches("<polyline").count() >= 2,
        "two series are drawn"
    );
}

#[test]
fn a_recorded_workload_replays_from_its_file() {
    let path = scratch("random.jsonl");
    let out = gpumem(&[
        "record",
        "--workload",
        "random",
        "--scale",
        "0.02",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
    let out = gpumem(&[
        "replay",
        path.to_str().unwrap(),
        "--backend",
        "system",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["ops"].as_u64(),
        Some(lines - 1),
        "every line but the header is an op"
    );
    assert_eq!(v["peak_live_bytes"], v["peak_reserved_bytes"]);
}

#[test]
fn the_rmm_fixture_reports_its_unknown_free_and_the_snapshot_its_pre_existing_block() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let rmm_log = manifest.join("../gpumem-replay/tests/data/rmm_log.csv");
    let out = gpumem(&["replay", rmm_log.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unknown_frees"], 1);
    assert!(
        text(&out.stderr).contains("warning"),
        "the unknown free is reported"
    );

    // The snapshot frees a block it never saw allocated: it was live
    // before recording began, so it is allocated first, not skipped.
    let snap = library_fixture("snapshot.pickle");
    let out = gpumem(&["replay", snap.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unknown_frees"], 0);
    assert_eq!(v["pre_existing"]["freed_blocks"], 1);
    assert_eq!(v["pre_existing"]["bytes"], 4 << 20);
    assert!(
        text(&out.stderr).contains("free_requested ×2 (the block is freed at its free_completed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_malformed_trace_is_a_clear_error_naming_its_line() {
    let path = scratch("bad.jsonl");
    std::fs::write(&path, "{\"op\":\"alloc\",\"id\":1,\"size\":8}\n{\"op\":\"free\",\"id\":1}\n{\"op\":\"alloc\",\"id\":2,\"size\":-3}\n").unwrap();
    assert_clean_failure(&gpumem(&["replay", path.to_str().unwrap()]), "line 3");
}

#[test]
fn a_missing_file_and_bad_options_are_clear_errors() {
    assert_clean_failure(
        &gpumem(&["replay", "/nonexistent/trace.jsonl"]),
        "cannot open",
    );
    assert_clean_failure(
        &gpumem(&["replay", "--workload", "devlog", "--device-gib", "0"]),
        "--device-gib",
    );
    assert_clean_failure(
        &gpumem(&["replay", "--workload", "devlog", "--scale", "0"]),
        "--scale",
    );
    assert_clean_failure(
        &gpumem(&[
            "record",
            "--workload",
            "devlog",
            "-o",
            "/nonexistent/dir/t.jsonl",
        ]),
        "cannot open",
    );
    let unknown = scratch("unknown.trace");
    std::fs::write(&unknown, "hello\n").unwrap();
    assert_clean_failure(&gpumem(&["replay", unknown.to_str().unwrap()]), "--format");
}

#[test]
fn usage_errors_exit_with_clap_status_two() {
    assert_eq!(
        gpumem(&["replay"]).status.code(),
        Some(2),
        "a trace or a workload is required"
    );
    assert_eq!(
        gpumem(&["replay", "x.jsonl", "--workload", "random"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        gpumem(&["replay", "--workload", "nope"]).status.code(),
        Some(2)
    );
}

#[test]
fn the_cuda_backend_fails_cleanly_without_a_driver() {
    if gpumem::storage::cuda_available() {
        println!("skipping: a CUDA driver is present");
        return;
    }
    assert_clean_failure(
        &gpumem(&["replay", "--workload", "devlog", "--backend", "cuda"]),
        "no CUDA driver",
    );
}

#[test]
fn plan_json_suggests_a_layout_and_measures_it() {
    let out = gpumem(&["plan", "--workload", "devlog", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!v["suggested"].as_array().unwrap().is_empty());
    assert!(v["verified"]["peak_reserved_bytes"].as_u64().unwrap() >= 128 << 20);
    let out = gpumem(&["plan", "--workload", "devlog"]);
    assert!(text(&out.stdout).contains("MemoryConfiguration::Custom"));
}

#[test]
fn plan_text_names_the_default_and_says_to_keep_it_when_the_plan_reserves_more() {
    // On `serving` the arenas hold 1.03 × live where sized pages hold 1.19 ×.
    let out = gpumem(&["plan", "--workload", "serving", "--scale", "0.1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = text(&out.stdout);
    assert!(v.contains("the default layout (arenas) reserves "), "{v}");
    assert!(
        v.contains("more than the default: keep the default (no --config)"),
        "{v}"
    );
    // A small PyTorch snapshot: sized pages fit its few MiB tighter than
    // 2 MiB chunks do.
    let snapshot = library_fixture("snapshot.pickle");
    let out = gpumem(&["plan", snapshot.to_str().unwrap()]);
    let v = text(&out.stdout);
    assert!(v.contains("less than the default at its peak"), "{v}");
    assert!(!v.contains("keep the default"), "{v}");
}

#[test]
fn the_workloads_the_command_takes_are_the_librarys_list_in_its_order() {
    use gpumem_replay::workload::Workload;
    assert_eq!(
        <Workload as clap::ValueEnum>::value_variants(),
        &Workload::ALL
    );
}
