//! `gpumem replay` on virtual-memory arenas (the default layout) and on
//! paged pools, side by side.

mod common;

use common::*;

fn json(args: &[&str]) -> serde_json::Value {
    let out = gpumem(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_default_layout_is_arenas_and_reports_chunk_calls() {
    let v = json(&["replay", "--workload", "devlog", "--json"]);
    let arenas = &v["arenas"];
    assert!(arenas.is_object(), "{v}");
    assert!(arenas["virtual_bytes"].as_u64().unwrap() >= 64 << 30);
    let calls = [
        "chunk_creates",
        "chunk_maps",
        "chunk_unmaps",
        "chunk_releases",
    ]
    .iter()
    .map(|k| arenas[k].as_u64().unwrap())
    .sum::<u64>();
    assert!(calls > 0);
    let per_100 = calls as f64 * 100.0 / v["ops"].as_f64().unwrap();
    assert!((arenas["driver_calls_per_100_ops"].as_f64().unwrap() - per_100).abs() < 1e-9);
    // Physical memory follows live data: peak reserved is whole chunks
    // over the peak of live bytes.
    let (live, reserved) = (
        v["peak_live_bytes"].as_u64().unwrap(),
        v["peak_reserved_bytes"].as_u64().unwrap(),
    );
    assert!(
        reserved >= live && reserved <= live + (8 << 20),
        "{live} {reserved}"
    );
}

#[test]
fn paged_pools_report_no_arenas() {
    let v = json(&[
        "replay",
        "--workload",
        "devlog",
        "--json",
        "--config",
        "sub-slices",
    ]);
    assert!(v.get("arenas").is_none(), "{v}");
}

#[test]
fn arenas_on_real_host_memory_keep_every_pattern() {
    let v = json(&[
        "replay",
        "--workload",
        "devlog",
        "--backend",
        "host",
        "--json",
    ]);
    assert_eq!(v["failed_allocs"], 0, "{v}");
    assert!(v["arenas"].is_object());
}

#[test]
fn an_arena_pool_can_be_written_in_a_layout() {
    let v = json(&[
        "replay",
        "--workload",
        "devlog",
        "--json",
        "--config",
        "sliced:2MiB/64KiB,arena:64GiB@256MiB",
    ]);
    assert!(v["arenas"].is_object(), "{v}");
    let text = String::from_utf8_lossy(
        &gpumem(&[
            "replay",
            "--workload",
            "devlog",
            "--config",
            "arena:1MiB,arena:1MiB",
        ])
        .stderr,
    )
    .into_owned();
    assert!(text.contains("could never serve"), "{text}");
}

#[test]
fn a_replay_of_growing_buffers_shows_the_sheds_the_engine_learned_to_skip() {
    let v = json(&[
        "replay",
        "--workload",
        "growth",
        "--scale",
        "0.02",
        "--json",
    ]);
    let arenas = &v["arenas"];
    // The first steps shed what the next ones create again; the engine
    // sees it and stops shedding, so releases stay few.
    assert!(arenas["recreated_bytes"].as_u64().unwrap() > 0, "{arenas}");
    assert!(arenas["sheds_skipped"].as_u64().unwrap() > 0, "{arenas}");
    let releases = arenas["chunk_releases"].as_u64().unwrap();
    let creates = arenas["chunk_creates"].as_u64().unwrap();
    assert!(releases * 4 < creates, "{arenas}");
}
