//! The `gpumem` binary with `--config`, `--relocate` and `--streams`: the
//! measured-plan cycle through files, and clear errors on bad layouts.

mod common;

use common::*;

use std::process::Output;

fn json(out: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A trace where the plan's sized pages beat sub_slices (see gpumem-replay's tests/plan.rs).
const RANDOM: [&str; 4] = ["--workload", "random", "--scale", "0.1"];

#[test]
fn plan_json_written_to_a_file_is_accepted_by_replay_config_and_shows_the_improvement() {
    let plan = gpumem(&[&["plan", "--json"][..], &RANDOM].concat());
    let plan_json = json(&plan);
    let path = scratch("plan.json");
    std::fs::write(&path, &plan.stdout).unwrap();
    let path = path.to_str().unwrap();

    let replay = |config: &str| {
        json(&gpumem(
            &[&["replay", "--json", "--config", config][..], &RANDOM].concat(),
        ))
    };
    let planned = replay(path);
    let default = replay(plan_json["measured_config"].as_str().unwrap());
    let inline = replay(plan_json["config"].as_str().unwrap());
    assert_eq!(
        planned["peak_reserved_bytes"],
        plan_json["verified"]["peak_reserved_bytes"]
    );
    assert_eq!(
        inline["peak_reserved_bytes"],
        planned["peak_reserved_bytes"]
    );
    let (planned, default) = (
        planned["peak_reserved_bytes"].as_u64().unwrap(),
        default["peak_reserved_bytes"].as_u64().unwrap(),
    );
    assert!(planned < default, "{planned} vs {default}");

    let text = gpumem(&[&["plan"][..], &RANDOM].concat());
    let text = String::from_utf8_lossy(&text.stdout);
    let config = plan_json["config"].as_str().unwrap();
    assert!(text.contains(&format!("--config '{config}'")), "{text}");
}

#[test]
fn a_bad_layout_is_an_error_that_lists_what_is_valid() {
    for (config, needle) in [
        ("sliced:8MiB", "sliced:PAGE/MAX"),
        ("banana", "no `kind:` prefix"),
    ] {
        let out = gpumem(&["replay", "--workload", "devlog", "--config", config]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
        assert!(stderr.contains("`sub_slices`, `exclusive`"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A word one edit from a layout gets the layout, not the grammar.
    let out = gpumem(&["replay", "--workload", "devlog", "--config", "subslices"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did you mean `sub_slices`?"), "{stderr}");
    let not_a_plan = scratch("not-a-plan.json");
    std::fs::write(&not_a_plan, "{\"ops\": 3}").unwrap();
    let out = gpumem(&[
        "replay",
        "--workload",
        "devlog",
        "--config",
        not_a_plan.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("\"config\""), "{stderr}");
}

#[test]
fn exclusive_pages_and_a_custom_layout_replay_with_their_own_pools() {
    let pools = |config: &str| {
        let v = json(&gpumem(&[
            "replay",
            "--workload",
            "devlog",
            "--json",
            "--config",
            config,
        ]));
        v["pools"].as_array().unwrap().len()
    };
    assert_eq!(
        pools("sliced:8MiB/64KiB,exclusive:1GiB"),
        3,
        "two pools and the persistent one"
    );
    assert!(pools("exclusive-pages") > 10);
}

#[test]
fn replay_relocate_reports_its_counters_in_json_and_text() {
    let on = json(&gpumem(&[
        "replay",
        "--workload",
        "serving",
        "--scale",
        "0.05",
        "--relocate",
        "--json",
    ]));
    for field in [
        "relocations",
        "failed",
        "moved_slices",
        "moved_bytes",
        "pages_freed",
        "bytes_freed",
    ] {
        assert!(
            on["relocation"].get(field).is_some(),
            "missing {field}: {on}"
        );
    }
    let off = json(&gpumem(&[
        "replay",
        "--workload",
        "serving",
        "--scale",
        "0.05",
        "--json",
    ]));
    assert!(off["relocation"].is_null());
    assert!(on["final_reserved_bytes"].as_u64() <= off["final_reserved_bytes"].as_u64());
    let text = gpumem(&["replay", "--workload", "devlog", "--relocate"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("relocations") && text.contains("final reserved is after a reclaim"),
        "{text}"
    );
}
