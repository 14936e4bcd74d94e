//! A Python-written snapshot whose ring buffer wrapped mid-step, on the
//! second of two busy devices, with expandable segments
//! (crates/gpumem-replay/tests/fixtures/make_cpp_snapshot.py, `wrapped`): what it skipped and
//! inferred, live bytes from op 0, and PyTorch's mapped bytes beside
//! gpumem's.

mod common;

use common::*;

use std::path::PathBuf;

use gpumem_replay::trace::{Event, read_pytorch};

use gpumem::storage::units::MIB;

fn fixture() -> PathBuf {
    library_fixture("wrapped_expandable.pickle")
}

#[test]
fn a_wrapped_history_starts_with_its_pre_existing_blocks_live() {
    let bytes = std::fs::read(fixture()).unwrap();
    assert!(
        read_pytorch(bytes.as_slice(), None).is_err(),
        "two busy devices"
    );
    let trace = read_pytorch(bytes.as_slice(), Some(1)).unwrap();
    let pre = trace.stats.pre_existing.clone().unwrap();
    assert_eq!((pre.blocks, pre.bytes), (4, 192 * MIB));
    assert_eq!((pre.active_blocks, pre.active_bytes), (2, 160 * MIB));
    assert_eq!((pre.freed_blocks, pre.freed_bytes), (2, 32 * MIB));
    assert_eq!(pre.with_frames, 1, "the KV block's stack was kept");
    assert_eq!(trace.stats.unknown_frees, 0);
    let kinds: Vec<(&str, u64)> = trace
        .stats
        .skipped_kinds
        .iter()
        .map(|(k, v)| (*k, *v))
        .collect();
    assert_eq!(
        kinds,
        [
            ("free_requested", 1),
            ("segment_map", 1),
            ("segment_unmap", 2)
        ]
    );
    let o = &trace.origins;
    assert_eq!(o.origin_of(0), Some("before recording"));
    assert_eq!(o.origin_of(1), Some("build_cache (model/kv_cache.py:40)"));
    assert_eq!(o.origin_of(6), Some("attend (model/attention.py:88)"));
    let mut live = 0u64;
    let mut sizes = std::collections::HashMap::new();
    let mut curve = Vec::new();
    for e in &trace.events {
        match *e {
            Event::Alloc { id, size, .. } => {
                sizes.insert(id, size);
                live += size;
            }
            Event::Free { id } => live -= sizes.remove(&id).unwrap(),
            Event::Mode(_) | Event::Cleanup => {}
        }
        curve.push(live);
    }
    assert_eq!(curve[3], 192 * MIB, "live at op 0");
    assert_eq!(curve.iter().max(), Some(&(224 * MIB)));
    // Mapped pages: 288 MiB before the trace's first unmap, 320 at the
    // peak, and the snapshot's 256 MiB once the last unmap is counted.
    let (_, reserved) = o.source_reserved().unwrap();
    let mib: Vec<u64> = reserved.iter().map(|b| b / MIB).collect();
    assert_eq!(mib[..6], [288, 288, 288, 288, 288, 288]);
    assert_eq!(mib[6], 320);
    assert_eq!(mib.last(), Some(&256));
    assert!(reserved.iter().zip(&curve).all(|(r, l)| r >= l));
}

#[test]
fn the_report_compares_pytorchs_mapped_bytes_with_gpumems_for_the_chosen_device() {
    let path = fixture();
    let out = gpumem(&["replay", path.to_str().unwrap(), "--device", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["device"], 1);
    assert_eq!(v["peak_live_bytes"], 224 * MIB);
    let rec = &v["recorded"];
    assert_eq!(rec["peak_reserved_bytes"], 320 * MIB);
    assert_eq!(rec["peak_op"], 7);
    assert_eq!(rec["live_at_peak_bytes"], 176 * MIB);
    assert_eq!(rec["final_reserved_bytes"], 256 * MIB);
    assert_eq!(rec["below_live_events"], 0);
    let gpumem_peak = v["peak_reserved_bytes"].as_u64().unwrap();
    assert!(
        gpumem_peak >= 224 * MIB,
        "never less than live: {gpumem_peak}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("segment_unmap ×2 (PyTorch's own reservations"),
        "{stderr}"
    );
}

#[test]
fn allocator_settings_annotations_and_the_other_device_are_read_and_said_why() {
    let bytes = std::fs::read(fixture()).unwrap();
    let trace = read_pytorch(bytes.as_slice(), Some(1)).unwrap();
    let notes = trace.stats.notes.join("\n");
    assert!(
        notes.contains(
            "PyTorch's allocator settings (allocator_settings): PYTORCH_CUDA_ALLOC_CONF \
             `expandable_segments:True`, expandable_segments true; PyTorch ran with expandable \
             segments: compare's pytorch-expandable row is their model"
        ),
        "{notes}"
    );
    assert!(
        notes.contains(
            "1 external annotation(s) of device 1 skipped (external_annotations, named `step`): \
             they mark phases in time, not memory"
        ),
        "{notes}"
    );
    assert!(
        notes.contains(
            "this report is device 1's; the snapshot also traces device 0 (1 events) \
             (--device N reads one)"
        ),
        "{notes}"
    );
    // The command prints them as notes.
    let out = gpumem(&["replay", fixture().to_str().unwrap(), "--device", "1"]);
    assert!(out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("note: PyTorch's allocator settings"), "{err}");
    assert!(err.contains("note: 1 external annotation(s)"), "{err}");
}

#[test]
fn several_streams_of_a_snapshot_are_named_with_how_they_are_replayed() {
    let path = library_fixture("snapshot.pickle");
    let trace = read_pytorch(std::fs::read(path).unwrap().as_slice(), None).unwrap();
    let notes = trace.stats.notes.join("\n");
    assert!(
        notes.contains(
            "device 0 allocated on 2 streams (0x0, 0x7): each is replayed on its own gpumem \
             stream (--streams one merges them)"
        ),
        "{notes}"
    );
    assert!(notes.contains("max_split_size unlimited"), "{notes}");
    assert!(!notes.contains("external annotation"), "{notes}");
}

#[test]
fn json_reports_carry_the_notes_and_warnings_stderr_prints() {
    let path = fixture();
    let path = path.to_str().unwrap();
    let replay = gpumem(&["replay", path, "--device", "1", "--json"]);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    let compare = gpumem(&[
        "compare",
        path,
        "--device",
        "1",
        "--against",
        "gpumem",
        "--json",
    ]);
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    for out in [&replay, &compare] {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let notes = v["input_notes"]
            .as_array()
            .expect("input_notes in the JSON");
        let stderr = text(&out.stderr);
        // Every line stderr printed about the input is in the JSON, with
        // its level, and nothing else is.
        let printed: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("note: ") || l.starts_with("warning: "))
            .filter(|l| !l.contains("the host backend holds real memory"))
            .collect();
        let carried: Vec<String> = notes
            .iter()
            .map(|n| {
                format!(
                    "{}: {}",
                    n["level"].as_str().unwrap(),
                    n["text"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(printed, carried, "{stderr}");
        assert!(
            carried
                .iter()
                .any(|n| n.starts_with("note: PyTorch's allocator settings")),
            "{carried:?}"
        );
    }
}

#[test]
fn a_json_report_of_a_clean_input_has_no_input_notes() {
    let out = gpumem(&["replay", "--workload", "devlog", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("input_notes").is_none(), "{v}");
}
