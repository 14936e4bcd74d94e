//! Modeled driver time beside host time: `gpumem replay` and `gpumem
//! compare` print it, and `--json` carries it.

mod common;

use common::*;

fn json(args: &[&str]) -> serde_json::Value {
    let out = gpumem(args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_replay_reports_modeled_driver_time_as_host_plus_driver() {
    let v = json(&["replay", "--workload", "devlog", "--json"]);
    let d = &v["driver"];
    let ops = v["ops"].as_f64().unwrap();
    let driver_ns = d["driver_ns"].as_f64().unwrap();
    assert!(driver_ns > 0.0, "{v}");
    let per_op = d["driver_ns_per_op"].as_f64().unwrap();
    assert!((per_op - driver_ns / ops).abs() < 1e-6);
    let host = v["ns_per_op"].as_f64().unwrap();
    assert!((d["modeled_ns_per_op"].as_f64().unwrap() - (host + per_op)).abs() < 1e-6);
    // Every chunk create is one cuMemCreate; every map one cuMemMap and
    // one cuMemSetAccess.
    let call = |name: &str| {
        d["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["call"] == name)
            .map_or(0, |c| c["calls"].as_u64().unwrap())
    };
    assert_eq!(
        call("cuMemCreate"),
        v["arenas"]["chunk_creates"].as_u64().unwrap()
    );
    assert_eq!(
        call("cuMemMap"),
        v["arenas"]["chunk_maps"].as_u64().unwrap()
    );
    assert_eq!(call("cuMemSetAccess"), call("cuMemMap"));
    let w = &d["waits"];
    let sources: u64 = ["synchronize", "sleep", "relocation", "oom_retry", "backend"]
        .iter()
        .map(|k| w[k].as_u64().unwrap())
        .sum();
    assert_eq!(w["device_waits"].as_u64().unwrap(), sources);
}

#[test]
fn the_text_report_prints_driver_time_calls_and_waits() {
    let out = gpumem(&["replay", "--workload", "devlog"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for line in [
        "driver (modeled)",
        "host + driver =",
        "driver calls",
        "device-wide waits",
    ] {
        assert!(stdout.contains(line), "{line:?} missing:\n{stdout}");
    }
}

#[test]
fn a_zero_driver_table_from_gpumem_conf_models_no_driver_time() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .args(["replay", "--workload", "devlog", "--json"])
        .env("GPUMEM_CONF", "driver_cost:zero")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["driver"]["driver_ns"].as_u64(), Some(0), "{v}");
    assert!(v["driver"]["driver_calls"].as_u64().unwrap() > 0);
}

#[test]
fn compare_shows_driver_and_modeled_ns_per_op_for_gpumem_rows_only() {
    let v = json(&[
        "compare",
        "--workload",
        "serving",
        "--scale",
        "0.02",
        "--json",
    ]);
    let rows = v["rows"].as_array().unwrap();
    for row in rows {
        let gpumem_row = !matches!(
            row["allocator"].as_str(),
            Some("system" | "offset-allocator")
        );
        assert_eq!(row["modeled_ns_per_op"].is_number(), gpumem_row, "{row}");
        if gpumem_row {
            let sum =
                row["ns_per_op"].as_f64().unwrap() + row["driver_ns_per_op"].as_f64().unwrap();
            assert!((row["modeled_ns_per_op"].as_f64().unwrap() - sum).abs() < 1e-6);
        }
    }
    let out = gpumem(&["compare", "--workload", "serving", "--scale", "0.02"]);
    let table = text(&out.stdout);
    assert!(
        table.contains("modeled ns/op") && table.contains("driver ns/op"),
        "{table}"
    );
}
