//! Two full training steps (`fixtures/training_steps.pickle`, written by
//! `make_training_snapshot.py`) whose parameter gradients are allocated as
//! PyTorch allocates them: step 1's by MmBackward0 (AccumulateGrad steals
//! them), step 2's W2 gradient by AccumulateGrad adding out of place. The
//! report and the page call them gradients, named by the producing node,
//! and only what the pass freed temporaries.

mod common;

use common::*;

use gpumem::storage::units::MIB;

const SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/training_steps.pickle"
);

#[test]
fn a_training_steps_gradients_are_gradients_named_by_the_nodes_that_produced_them() {
    let out = gpumem(&["replay", SNAPSHOT, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak = &v["attribution"]["peak_live"];
    assert_eq!(peak["live_bytes"], 96 * MIB, "in step 2's Adam step");
    let b = &peak["backward"];
    // The parameters' gradients, 2 × 8 MiB, and nothing else: what the
    // passes allocated and freed is gone by the optimizer step.
    assert_eq!(b["gradients"]["bytes"], 16 * MIB);
    assert_eq!(b["gradients"]["count"], 2);
    assert_eq!(b["temporaries"]["count"], 0);
    assert_eq!(b["undetermined"]["count"], 0);
    let nodes: Vec<(&str, u64)> = b["gradient_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["node"].as_str().unwrap(), n["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        nodes,
        [("AccumulateGrad", 8 * MIB), ("MmBackward0", 8 * MIB)],
        "step 1's W1.grad was allocated by MmBackward0"
    );
    let out = gpumem(&["replay", SNAPSHOT]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "      gradients      16.00 MiB in 2, produced by AccumulateGrad (1), MmBackward0 (1)\n      temporaries    0 B in 0, freed before the pass ended"
        ),
        "{stdout}"
    );
}

#[test]
fn the_page_splits_the_backward_origins_into_gradients_and_temporaries() {
    let page = scratch("training.html");
    let out = gpumem(&[
        "replay",
        SNAPSHOT,
        "--top",
        "0",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = html_data(&page);
    let origins = origin_names(&data);
    for name in [
        "backward: MmBackward0 (mm) · gradient",
        "backward: MmBackward0 (mm) · temporary",
        "backward: AccumulateGrad (add_Tensor) · gradient",
        "backward: MeanBackward0 (div_Scalar) · temporary",
    ] {
        assert!(origins.contains(&name), "{name} in {origins:?}");
    }
    for name in &origins {
        assert!(!name.contains("unwind"), "{name} names the unwinder");
    }
    // The gradient groups live at the end hold the parameters' gradients.
    let live_gradients: u64 = data["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i[1].is_null() && i[3].as_i64().unwrap() >= 0)
        .filter(|i| origins[i[3].as_u64().unwrap() as usize].ends_with("· gradient"))
        .map(|i| i[2].as_u64().unwrap())
        .sum();
    assert_eq!(live_gradients, 16 * MIB);
}

#[test]
fn the_engines_own_allocation_is_named_past_the_unwinder_and_the_allocator() {
    // The engine sums two incoming gradients outside any node: only the
    // runtime's frames, the op the first past the recorder's.
    let page = scratch("engine.html");
    let out = gpumem(&["replay", SNAPSHOT, "--html", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = html_data(&page);
    let origins = origin_names(&data);
    assert!(
        origins.contains(
            &"at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&) (Operators_1.cpp:0)"
        ),
        "{origins:?}"
    );
}

/// The page's origin names, in the order its intervals index them.
fn origin_names(data: &serde_json::Value) -> Vec<&str> {
    data["origins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect()
}
