//! The backward pass on a snapshot shaped like a real one
//! (`fixtures/backward_stacks.pickle`, written by
//! `make_backward_snapshot.py`): its stacks hold no Python frame, so the
//! autograd node names them, and the report sets its memory apart.

mod common;

use common::*;

use gpumem::storage::units::MIB;

const SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/backward_stacks.pickle"
);

fn holders(args: &[&str]) -> Vec<(String, u64, u64)> {
    let mut all = vec!["replay", SNAPSHOT, "--json"];
    all.extend_from_slice(args);
    let out = gpumem(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["attribution"]["peak_live"]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["origin"].as_str().unwrap().to_string(),
                h["bytes"].as_u64().unwrap(),
                h["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn names(holders: &[(String, u64, u64)]) -> Vec<&str> {
    holders.iter().map(|h| h.0.as_str()).collect()
}

#[test]
fn a_backward_stack_is_named_by_its_autograd_node_and_the_op_inside_it() {
    let h = holders(&[]);
    let names = names(&h);
    assert!(
        names.contains(&"backward: MeanBackward0 (div_Scalar)"),
        "{names:?}"
    );
    assert!(
        names.contains(&"backward: AccumulateGrad (clone)"),
        "{names:?}"
    );
    let grads = h
        .iter()
        .find(|h| h.0 == "backward: AccumulateGrad (clone)")
        .unwrap();
    assert_eq!((grads.1, grads.2), (32 * MIB, 2));
    for name in &names {
        for thread in [
            "execute_native_thread_routine",
            "start_thread",
            "clone3",
            "Engine::",
        ] {
            assert!(
                !name.contains(thread),
                "{name} names a thread's runtime frame"
            );
        }
    }
    for name in names.iter().filter(|n| n.starts_with("backward:")) {
        for runtime in ["c10::", "torch::", "at::", "empty_cuda", "unwind"] {
            assert!(!name.contains(runtime), "{name} names a runtime frame");
        }
    }
}

#[test]
fn a_node_with_a_recorded_forward_stack_names_the_forward_line_too() {
    let h = holders(&[]);
    assert!(
        names(&h).contains(&"backward: MmBackward0 (mm) for forward (model/mlp.py:14)"),
        "{:?}",
        names(&h)
    );
    let by_file = holders(&["--group-by", "file"]);
    assert!(
        names(&by_file).contains(&"backward: model/mlp.py"),
        "{by_file:?}"
    );
    assert!(
        names(&by_file).contains(&"backward: MeanBackward0"),
        "{by_file:?}"
    );
    let by_function = holders(&["--group-by", "function"]);
    assert!(
        names(&by_function).contains(&"backward: MmBackward0 for forward (model/mlp.py)"),
        "{by_function:?}"
    );
}

#[test]
fn a_native_thread_without_a_node_is_named_by_its_innermost_own_function() {
    let h = holders(&[]);
    assert!(
        names(&h).contains(
            &"c10d::ProcessGroupNCCL::allreduce_impl(at::Tensor&, c10d::AllreduceOptions const&) (ProcessGroupNCCL.cpp:3712)"
        ),
        "{:?}",
        names(&h)
    );
}

#[test]
fn the_report_sets_gradients_apart_from_the_backward_passs_temporaries() {
    let out = gpumem(&["replay", SNAPSHOT, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak = &v["attribution"]["peak_live"];
    assert_eq!(peak["live_bytes"], 156 * MIB);
    let b = &peak["backward"];
    assert_eq!(
        (b["bytes"].as_u64(), b["count"].as_u64()),
        (Some(56 * MIB), Some(4))
    );
    assert_eq!(b["gradients"]["bytes"], 32 * MIB);
    assert_eq!(b["temporaries"]["bytes"], 24 * MIB);
    assert_eq!(b["temporaries"]["count"], 2);
    let out = gpumem(&["replay", SNAPSHOT]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "    of which the backward pass 56.00 MiB in 4:\n      gradients      32.00 MiB in 2, produced by AccumulateGrad (2)\n      temporaries    24.00 MiB in 2, freed before the pass ended\n"
        ),
        "{stdout}"
    );
    // A snapshot without a backward pass has no share.
    let forward_only = library_fixture("cpp_stacks.pickle");
    let end = gpumem(&["replay", forward_only.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&end.stdout).unwrap();
    assert!(
        v["attribution"]["peak_live"].get("backward").is_none(),
        "a forward-only snapshot has no backward share"
    );
}
