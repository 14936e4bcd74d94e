//! The command as a memory debugger, end to end: who holds memory at the
//! peaks, PyTorch's own reserved bytes beside gpumem's, a device chosen
//! from a multi-GPU snapshot, the snapshot records it skipped, and the
//! HTML page.

mod common;

use common::*;

use std::collections::BTreeMap;
use std::path::PathBuf;

use gpumem::storage::units::MIB;
use serde_pickle::{HashableValue, SerOptions, Value};

/// Weights and activations tagged; the activations die before the end.
fn tagged_trace() -> PathBuf {
    let path = scratch("tagged.jsonl");
    let lines = [
        format!(
            r#"{{"op":"alloc","id":1,"size":{},"tag":"weights"}}"#,
            64 * MIB
        ),
        format!(
            r#"{{"op":"alloc","id":2,"size":{},"tag":"activations"}}"#,
            24 * MIB
        ),
        format!(
            r#"{{"op":"alloc","id":3,"size":{},"tag":"activations"}}"#,
            24 * MIB
        ),
        r#"{"op":"free","id":2}"#.to_string(),
        r#"{"op":"free","id":3}"#.to_string(),
        format!(
            r#"{{"op":"alloc","id":4,"size":{},"tag":"kv-cache"}}"#,
            8 * MIB
        ),
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[test]
fn replay_names_who_holds_memory_at_peak_live_in_text_and_json() {
    let trace = tagged_trace();
    let out = gpumem(&["replay", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("live at peak live (op 3): 112.00 MiB in 3 allocations"),
        "{stdout}"
    );
    let weights = stdout.lines().position(|l| l.ends_with("weights")).unwrap();
    let acts = stdout
        .lines()
        .position(|l| l.ends_with("activations"))
        .unwrap();
    assert!(weights < acts, "most bytes first: {stdout}");
    assert!(stdout.contains("live at peak reserved (op "), "{stdout}");

    let out = gpumem(&["replay", trace.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let holders = &v["attribution"]["peak_live"]["holders"];
    assert_eq!(holders[1]["origin"], "activations");
    assert_eq!(holders[1]["bytes"], 48 * MIB);
    assert_eq!(holders[1]["count"], 2);
    let out = gpumem(&["replay", trace.to_str().unwrap(), "--json", "--top", "0"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("attribution").is_none(), "--top 0 leaves it out");
}

fn key(k: &str) -> HashableValue {
    HashableValue::String(k.to_string())
}

fn event(action: &str, addr: i64, size: i64) -> Value {
    let mut d = BTreeMap::new();
    d.insert(key("action"), Value::String(action.to_string()));
    d.insert(key("addr"), Value::I64(addr));
    d.insert(key("size"), Value::I64(size));
    Value::Dict(d)
}

/// A snapshot of one trace per device, in this test binary's scratch folder.
fn write_snapshot(name: &str, devices: Vec<Vec<Value>>) -> PathBuf {
    let mut top = BTreeMap::new();
    top.insert(key("segments"), Value::List(vec![]));
    top.insert(
        key("device_traces"),
        Value::List(devices.into_iter().map(Value::List).collect()),
    );
    let path = scratch(name);
    std::fs::write(
        &path,
        serde_pickle::value_to_vec(&Value::Dict(top), SerOptions::new()).unwrap(),
    )
    .unwrap();
    path
}

/// Two busy devices; device 1 reserves a 32 MiB segment for 8 MiB.
fn two_device_snapshot() -> PathBuf {
    let m = MIB as i64;
    let device0 = vec![event("alloc", 0x100, m)];
    let device1 = vec![
        event("segment_alloc", 0x1000, 32 * m),
        event("alloc", 0x1000, 8 * m),
        event("free_completed", 0x1000, 8 * m),
    ];
    write_snapshot("two_devices.pickle", vec![device0, device1])
}

#[test]
fn replay_warns_of_the_snapshot_records_whose_actions_it_does_not_know_naming_them() {
    // `segment_alloc` is an action the reader knows (and skips); the other
    // two are new to it. The reader's own counts are tested in
    // crates/gpumem-replay/tests/read_pytorch.rs.
    let snap = write_snapshot(
        "unknown_actions.pickle",
        vec![vec![
            event("alloc", 1, 8),
            event("segment_alloc", 1, 8),
            event("workspace_snapshot", 1, 8),
            event("free_completed", 1, 8),
            event("workspace_snapshot", 1, 8),
            event("future_action", 1, 8),
        ]],
    );
    let out = gpumem(&["replay", snap.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: 3 record(s) with actions this reader does not know were skipped: \
             \"future_action\" ×1, \"workspace_snapshot\" ×2"
        ),
        "{stderr}"
    );
}

#[test]
fn a_multi_gpu_snapshot_needs_a_device_and_reports_pytorchs_reserved_beside_gpumems() {
    let snap = two_device_snapshot();
    let out = gpumem(&["replay", snap.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("device 0 (1 events), device 1 (3 events)") && stderr.contains("--device"),
        "{stderr}"
    );
    let out = gpumem(&["replay", snap.to_str().unwrap(), "--device", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["device"], 1);
    assert_eq!(v["recorded"]["name"], "PyTorch");
    assert_eq!(v["recorded"]["peak_reserved_bytes"], 32 * MIB);
    let out = gpumem(&["replay", snap.to_str().unwrap(), "--device", "1"]);
    assert!(text(&out.stdout).contains(
        "PyTorch reserved 32.00 MiB at its peak (op 1, 8.00 MiB live); gpumem would reserve"
    ));
}

#[test]
fn html_writes_one_offline_page_and_time_without_times_falls_back_to_ops() {
    let trace = tagged_trace();
    let page = scratch("tagged.html");
    let out = gpumem(&[
        "replay",
        trace.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
        "--x",
        "time",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no times"),
        "{}",
        text(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains(r#""origins":["weights","activations","kv-cache"]"#),
        "tags embedded"
    );
    assert!(!html.contains("src=") && !html.contains("href="));
}

#[test]
fn the_page_draws_one_band_per_pool_that_reserved_memory() {
    let page = scratch("bands.html");
    let out = gpumem(&[
        "replay",
        "--workload",
        "training",
        "--scale",
        "0.05",
        "--config",
        "pools:sliced:8MiB/64KiB,exclusive:20GiB,max_page:20GiB",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = html_data(&page);
    let names: Vec<&str> = data["bands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("sliced(")), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("exclusive(")),
        "{names:?}"
    );
    assert!(data["bands"][0]["points"].as_array().unwrap().len() > 10);
}

#[test]
fn built_in_workloads_carry_tags_that_record_writes_and_replay_groups_by() {
    let out = gpumem(&[
        "replay",
        "--workload",
        "serving",
        "--scale",
        "0.1",
        "--json",
        "--top",
        "3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let origins: Vec<&str> = v["attribution"]["peak_live"]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["origin"].as_str().unwrap())
        .collect();
    assert!(
        origins.contains(&"kv-cache") && origins.contains(&"weights"),
        "{origins:?}"
    );
    let path = scratch("training.jsonl");
    let out = gpumem(&[
        "record",
        "--workload",
        "training",
        "--scale",
        "0.01",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&path).unwrap();
    for tag in ["weights", "optimizer state", "activations", "gradients"] {
        assert!(
            written.contains(&format!(r#""tag":"{tag}""#)),
            "{tag} in the recorded trace"
        );
    }
}
