//! The repository's own recorded traces (`traces/*.jsonl.gz`, written by
//! `traces/record.py`) carry each allocation's Python stack, so "who holds
//! memory" names the model code, not size buckets.

mod common;

use common::*;

fn trace(name: &str) -> String {
    format!(
        "{}/../../traces/{name}.jsonl.gz",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn every_recorded_trace_attributes_its_peak_to_lines_of_the_model_code() {
    for name in [
        "gpt2-train",
        "gpt2-generate",
        "bert-infer",
        "resnet18-train",
    ] {
        let out = gpumem(&["replay", "--json", &trace(name)]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let peak = &v["attribution"]["peak_live"];
        let holders = peak["holders"].as_array().expect("holders");
        assert!(!holders.is_empty(), "{name}");
        for holder in holders {
            let origin = holder["origin"].as_str().unwrap();
            assert!(
                origin.contains("(traces/record.py:"),
                "{name}: {origin} is not a line of the model code"
            );
        }
    }
}

#[test]
fn the_gpt2_training_report_names_lines_of_the_model_code_not_size_buckets() {
    let out = gpumem(&["replay", &trace("gpt2-train")]);
    let report = text(&out.stdout);
    assert!(!report.contains("untagged"), "{report}");
    assert!(report.contains("forward (traces/record.py:"), "{report}");
    assert!(report.contains("gpt2_train (traces/record.py:"), "{report}");
}

/// `traces/burn-lm-train.jsonl.gz`: a Burn transformer's training on
/// CubeCL's wgpu runtime, recorded by the CubeCL adapter (docs/burn.md).
/// Its origins are the adapter's tags: the manager and the pool kind.
#[test]
fn the_burn_trace_replays_with_the_adapters_tags_as_origins() {
    let out = gpumem(&["replay", "--json", &trace("burn-lm-train")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unknown_frees"], 0);
    let holders = v["attribution"]["peak_live"]["holders"]
        .as_array()
        .expect("holders");
    let origins: Vec<&str> = holders
        .iter()
        .map(|h| h["origin"].as_str().unwrap())
        .collect();
    assert_eq!(
        origins,
        ["Main GPU Memory/dynamic", "Main GPU Memory/persistent"]
    );
}

/// CubeCL's own engine held 52 MiB of pages and the 38 parameters' exact
/// buffers (334 080 bytes) on the run `burn-lm-train` records: 52.32 MiB,
/// docs/burn.md's table.
const CUBECL_PEAK_ON_BURN_LM_TRAIN: u64 = 52 * 1024 * 1024 + 334_080;

/// The goal of docs/burn.md: gpumem's paged layout, the one the CubeCL
/// adapter serves wgpu with, holds less than CubeCL's engine on the
/// varying-length transformer (54.32 MiB with 8 MiB metadata pages).
#[test]
fn the_burn_trace_replays_under_sub_slices_below_cubecls_measured_peak() {
    let out = gpumem(&[
        "compare",
        "--json",
        "--against",
        "sub_slices",
        &trace("burn-lm-train"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak = v["rows"][0]["peak_reserved_bytes"].as_u64().unwrap();
    assert!(
        peak < CUBECL_PEAK_ON_BURN_LM_TRAIN,
        "{peak} bytes, CubeCL's engine {CUBECL_PEAK_ON_BURN_LM_TRAIN}"
    );
}
