//! Snapshots shaped like real GPU runs (crates/gpumem-replay/tests/fixtures/make_cpp_snapshot.py, a
//! Python-written pickle): 60-frame C++ stacks with the user's frames deep
//! inside, a model loaded before recording began, blocks whose alloc
//! events fell out of the ring buffer, a block freed without being seen
//! allocated, and the oom and snapshot markers.

mod common;

use common::*;

use std::path::PathBuf;

use gpumem_replay::trace::{Event, GroupBy, read_pytorch};

use gpumem::storage::units::MIB;

fn fixture() -> PathBuf {
    library_fixture("cpp_stacks.pickle")
}

/// Requested bytes live after each event.
fn live_after(events: &[Event]) -> Vec<u64> {
    let mut sizes = std::collections::HashMap::new();
    let mut live = 0;
    events
        .iter()
        .map(|e| {
            match *e {
                Event::Alloc { id, size, .. } => {
                    sizes.insert(id, size);
                    live += size;
                }
                Event::Free { id } => live -= sizes.remove(&id).unwrap(),
                Event::Mode(_) | Event::Cleanup => {}
            }
            live
        })
        .collect()
}

fn replay_json(args: &[&str]) -> serde_json::Value {
    let path = fixture();
    let mut all = vec!["replay", path.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let out = gpumem(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_origin_of_a_cpp_stack_is_the_users_first_python_frame() {
    let bytes = std::fs::read(fixture()).unwrap();
    let trace = read_pytorch(bytes.as_slice(), None).unwrap();
    let o = &trace.origins;
    // Events 0-10 are the pre-existing blocks; 11 is the first activation.
    assert_eq!(o.origin_of(11), Some("forward (model/transformer.py:208)"));
    assert_eq!(o.origin_of(12), Some("attend (model/attention.py:88)"));
    let stack = o.stacks().stack(o.stack_of(11).unwrap());
    assert_eq!(stack.len(), 60, "the whole stack is kept");
    let first = &o.stacks().frames()[stack[0] as usize];
    assert_eq!(first.name, "torch::unwind::unwind()");
    let user = stack
        .iter()
        .position(|&f| {
            o.stacks().frames()[f as usize].name == "forward"
                && o.stacks().frames()[f as usize]
                    .file
                    .ends_with("transformer.py")
        })
        .unwrap();
    assert!(user > 40, "the user's frame is deep inside ({user})");

    let v = replay_json(&[]);
    let holders: Vec<&str> = v["attribution"]["peak_live"]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["origin"].as_str().unwrap())
        .collect();
    assert_eq!(
        holders,
        [
            "before recording",
            "build_cache (model/kv_cache.py:40)",
            "attend (model/attention.py:88)",
            "forward (model/transformer.py:208)"
        ]
    );
}

#[test]
fn group_by_names_origins_by_function_file_or_module_and_lists_the_valid_values() {
    let mut trace = read_pytorch(std::fs::read(fixture()).unwrap().as_slice(), None).unwrap();
    trace.origins.group_by(GroupBy::File);
    assert_eq!(trace.origins.origin_of(11), Some("model/transformer.py"));
    assert_eq!(trace.origins.origin_of(0), Some("before recording"));
    let origins = |by: &str| -> Vec<String> {
        replay_json(&["--group-by", by])["attribution"]["peak_live"]["holders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["origin"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(origins("function").contains(&"attend (model/attention.py)".to_string()));
    assert!(origins("module").contains(&"proj.model.kv_cache".to_string()));
    let out = gpumem(&["replay", fixture().to_str().unwrap(), "--group-by", "stack"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[possible values: line, function, file, module]"),
        "{stderr}"
    );
}

#[test]
fn memory_allocated_before_recording_is_live_from_op_0_and_counted_in_the_peak() {
    let trace = read_pytorch(std::fs::read(fixture()).unwrap().as_slice(), None).unwrap();
    let pre = trace.stats.pre_existing.clone().unwrap();
    // 8 weights of 64 MiB (no stack), 2 KV blocks of 32 MiB (their stack
    // kept), 96 MiB freed in the trace without being seen allocated.
    assert_eq!((pre.blocks, pre.bytes), (11, 672 * MIB));
    assert_eq!((pre.active_blocks, pre.active_bytes), (10, 576 * MIB));
    assert_eq!((pre.freed_blocks, pre.freed_bytes), (1, 96 * MIB));
    assert_eq!((pre.with_frames, pre.contradicted), (2, 0));
    assert_eq!(trace.stats.unknown_frees, 0);
    let live = live_after(&trace.events);
    assert_eq!(live[10], 672 * MIB, "live at op 0: all pre-existing blocks");
    assert_eq!(
        live.iter().max(),
        Some(&(736 * MIB)),
        "plus a step's 64 MiB"
    );
    assert_eq!(trace.origins.origin_of(0), Some("before recording"));
    assert_eq!(
        trace.origins.origin_of(8),
        Some("build_cache (model/kv_cache.py:40)")
    );

    let v = replay_json(&[]);
    assert_eq!(v["peak_live_bytes"], 736 * MIB);
    assert_eq!(v["final_live_bytes"], 576 * MIB, "weights and KV cache");
    assert_eq!(v["pre_existing"]["bytes"], 672 * MIB);
    assert_eq!(v["attribution"]["peak_live"]["live_bytes"], 736 * MIB);
    assert_eq!(
        v["attribution"]["peak_live"]["holders"][0]["bytes"],
        608 * MIB
    );
}

#[test]
fn the_side_by_side_compares_the_same_allocations_and_never_reserves_less_than_live() {
    for backend in ["sim", "system"] {
        let v = replay_json(&["--backend", backend]);
        let rec = &v["recorded"];
        // 672 MiB reserved before the trace's segment_alloc, 736 after.
        assert_eq!(rec["peak_reserved_bytes"], 736 * MIB);
        assert_eq!(
            rec["peak_op"], 12,
            "the first activation, after 11 pre-existing"
        );
        assert_eq!(rec["live_at_peak_bytes"], 680 * MIB);
        assert_eq!(rec["below_live_events"], 0);
        assert_eq!(rec["final_reserved_bytes"], 736 * MIB);
        let gpumem_peak = v["peak_reserved_bytes"].as_u64().unwrap();
        assert!(gpumem_peak >= 736 * MIB, "{backend}: {gpumem_peak}");
        let ratio = rec["gpumem_ratio"].as_f64().unwrap();
        assert!((ratio - gpumem_peak as f64 / (736 * MIB) as f64).abs() < 1e-9);
        assert!(
            ratio >= 1.0,
            "{backend}: gpumem holds at least the same live bytes"
        );
    }
    let out = gpumem(&["replay", fixture().to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "pre-existing           672.00 MiB   in 11 blocks live before recording began"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("10 still allocated at the snapshot (576.00 MiB), 1 freed during the trace (96.00 MiB); 2 with their allocation stack, 9 \"before recording\""),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "PyTorch reserved 736.00 MiB at its peak (op 12, 680.00 MiB live); gpumem would reserve"
        ),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("oom ×1 (PyTorch ran out of memory here")
            && stderr.contains("free_requested ×13")
            && stderr.contains("snapshot ×1"),
        "{stderr}"
    );
}

#[test]
fn a_replay_that_refuses_allocations_is_not_compared_with_pytorch() {
    let path = fixture();
    let out = gpumem(&[
        "replay",
        path.to_str().unwrap(),
        "--device-gib",
        "0.5",
        "--allow-failures",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["failed_allocs"].as_u64().unwrap() > 0);
    assert!(v["recorded"]["gpumem_ratio"].is_null());
}

#[test]
fn the_page_embeds_each_allocations_whole_stack() {
    let page = scratch("cpp.html");
    let path = fixture();
    let out = gpumem(&[
        "replay",
        path.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = html_data(&page);
    let intervals = data["intervals"].as_array().unwrap();
    let first_activation = &intervals[11];
    let stack = first_activation[4].as_u64().unwrap() as usize;
    let frames: Vec<&serde_json::Value> = data["stacks"][stack]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &data["frames"][f.as_u64().unwrap() as usize])
        .collect();
    assert_eq!(frames.len(), 60);
    let python: Vec<&str> = frames
        .iter()
        .filter(|f| f[3] == true)
        .map(|f| f[2].as_str().unwrap())
        .collect();
    assert_eq!(
        python,
        [
            "forward",
            "_call_impl",
            "_wrapped_call_impl",
            "forward",
            "_call_impl",
            "_wrapped_call_impl",
            "forward",
            "train_step",
            "main",
            "<module>"
        ]
    );
    assert_eq!(
        intervals[0][4], -1,
        "a weight loaded before recording has no stack"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("function stackHtml"));
}
