//! The backward pass's memory told apart by lifetime, on traces written
//! here as JSON Lines with PyTorch-shaped stacks: a gradient is what
//! outlives its pass (whichever node allocated it), a temporary what the
//! pass freed.

use gpumem::storage::units::MIB;
use gpumem_replay::attribution::{BackwardRoles, BackwardShare, NodeShare, Role, Share, live_at};
use gpumem_replay::trace::{Trace, read_jsonl};

/// The autograd engine's thread below a node's frame.
const ENGINE: &str = r#"{"filename":"engine.cpp","line":0,"name":"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"},{"filename":"thread.cc","line":82,"name":"execute_native_thread_routine"},{"filename":"pthread_create.c","line":442,"name":"start_thread"}"#;

/// The frames of an allocation by `node` calling `op`, innermost first.
fn node(node: &str, op: &str) -> String {
    let path = if node == "AccumulateGrad" {
        node.to_string()
    } else {
        format!("generated::{node}")
    };
    format!(
        r#"[{{"filename":"??","line":0,"name":"torch::unwind::unwind()"}},{{"filename":"??","line":0,"name":"at::_ops::{op}::call(at::Tensor const&)"}},{{"filename":"Functions.cpp","line":0,"name":"torch::autograd::{path}::apply(std::vector<at::Tensor>&&)"}},{ENGINE}]"#
    )
}

/// The main thread's Python frames at `train.py:line`.
fn python(line: u64) -> String {
    format!(
        r#"[{{"filename":"/x/site-packages/torch/optim/adam.py","line":3,"name":"step"}},{{"filename":"/p/train.py","line":{line},"name":"train_step"}}]"#
    )
}

/// A communication library's own thread: no Python, no node.
fn comm() -> String {
    r#"[{"filename":"/src/comm/ring.cpp","line":7,"name":"Ring::exchange"},{"filename":"thread.cc","line":82,"name":"execute_native_thread_routine"},{"filename":"pthread_create.c","line":442,"name":"start_thread"}]"#
        .to_string()
}

fn alloc(id: u64, mib: u64, frames: &str) -> String {
    format!(
        "{{\"op\":\"alloc\",\"id\":{id},\"size\":{},\"frames\":{frames}}}\n",
        mib * MIB
    )
}

fn free(id: u64) -> String {
    format!("{{\"op\":\"free\",\"id\":{id}}}\n")
}

fn trace(lines: &[String]) -> Trace {
    read_jsonl(lines.concat().as_bytes()).unwrap()
}

/// One step: an activation; a backward pass with a 4 MiB temporary and
/// two gradients MmBackward0 allocated and AccumulateGrad stole (ids 3
/// and 4), the temporary freed after the pass's last allocation; then the
/// optimizer's 2 MiB.
fn first_step() -> Vec<String> {
    vec![
        alloc(1, 8, &python(12)),
        alloc(2, 4, &node("MmBackward0", "mm")),
        alloc(3, 16, &node("MmBackward0", "mm")),
        alloc(4, 16, &node("MmBackward0", "mm")),
        free(2),
        free(1),
        alloc(5, 2, &python(90)),
    ]
}

#[test]
fn a_gradient_the_producing_node_allocated_is_a_gradient_and_what_the_pass_freed_a_temporary() {
    let t = trace(&first_step());
    let roles = BackwardRoles::of(&t);
    let role: Vec<_> = (0..t.events.len()).map(|e| roles.role_of(e)).collect();
    assert_eq!(
        role,
        [
            None,
            Some(Role::Temporary),
            Some(Role::Gradient),
            Some(Role::Gradient),
            None,
            None,
            None
        ]
    );
    // In the optimizer step the pass's memory is its gradients alone, as
    // many bytes as the parameters' gradients.
    let at = live_at(&t, 6, 10);
    let b = at.backward.unwrap();
    assert_eq!(
        b,
        BackwardShare {
            bytes: 32 * MIB,
            count: 2,
            gradients: Share {
                bytes: 32 * MIB,
                count: 2
            },
            gradient_nodes: vec![NodeShare {
                node: "MmBackward0".into(),
                bytes: 32 * MIB,
                count: 2
            }],
            temporaries: Share::default(),
            undetermined: Share::default(),
        },
        "MmBackward0 allocated them: today's rule would call them temporaries"
    );
    let text = b.to_string();
    assert!(
        text.contains("gradients      32.00 MiB in 2, produced by MmBackward0 (2)"),
        "{text}"
    );
    // Inside the pass, its live temporary is told from the gradients by
    // its free, which comes after the pass's last allocation.
    let inside = live_at(&t, 3, 10).backward.unwrap();
    assert_eq!(
        (inside.gradients.bytes, inside.temporaries),
        (
            32 * MIB,
            Share {
                bytes: 4 * MIB,
                count: 1
            }
        )
    );
}

#[test]
fn accumulate_grad_adding_into_a_grad_makes_a_gradient_and_the_incoming_one_a_temporary() {
    // Step two: W2's incoming gradient (6) is added out of place into a
    // new .grad (7) by AccumulateGrad; the old .grad (3) is freed.
    let mut lines = first_step();
    lines.extend([
        alloc(6, 16, &node("MmBackward0", "mm")),
        alloc(7, 16, &node("AccumulateGrad", "add_Tensor")),
        free(3),
        free(6),
        alloc(8, 2, &python(90)),
    ]);
    let t = trace(&lines);
    let roles = BackwardRoles::of(&t);
    assert_eq!(
        roles.role_of(7),
        Some(Role::Temporary),
        "freed inside pass 2"
    );
    assert_eq!(roles.role_of(8), Some(Role::Gradient));
    assert_eq!(
        roles.role_of(2),
        Some(Role::Gradient),
        "pass 1's, freed in pass 2"
    );
    let b = live_at(&t, 11, 10).backward.unwrap();
    let nodes: Vec<_> = b
        .gradient_nodes
        .iter()
        .map(|n| (n.node.as_str(), n.bytes, n.count))
        .collect();
    assert_eq!(
        nodes,
        [
            ("AccumulateGrad", 16 * MIB, 1),
            ("MmBackward0", 16 * MIB, 1)
        ]
    );
    assert_eq!((b.gradients.bytes, b.temporaries.count), (32 * MIB, 0));
}

#[test]
fn a_communication_threads_allocation_neither_ends_nor_joins_a_pass() {
    let lines = [
        alloc(1, 4, &node("MmBackward0", "mm")),
        alloc(2, 1, &comm()),
        alloc(3, 16, &node("MmBackward0", "mm")),
        free(1),
        alloc(4, 2, &python(90)),
    ];
    let t = trace(&lines);
    let roles = BackwardRoles::of(&t);
    assert_eq!(roles.role_of(0), Some(Role::Temporary));
    assert_eq!(roles.role_of(1), None);
    assert_eq!(roles.role_of(2), Some(Role::Gradient));
}

/// A Python hook the engine's thread runs between two nodes (FSDP's,
/// `register_hook`'s): Python frames above the engine, no node.
fn hook() -> String {
    format!(r#"[{{"filename":"/p/hooks.py","line":5,"name":"on_grad"}},{ENGINE}]"#)
}

#[test]
fn a_hook_on_the_engines_thread_stays_inside_the_pass() {
    let lines = [
        alloc(1, 4, &node("MmBackward0", "mm")),
        alloc(2, 1, &hook()),
        alloc(3, 16, &node("MmBackward0", "mm")),
        free(1),
        free(2),
        alloc(4, 2, &python(90)),
    ];
    let t = trace(&lines);
    let roles = BackwardRoles::of(&t);
    assert_eq!(roles.role_of(0), Some(Role::Temporary), "freed in the pass");
    assert_eq!(roles.role_of(1), None, "named by its Python line");
    assert_eq!(roles.role_of(2), Some(Role::Gradient));
}

#[test]
fn a_recording_that_ends_inside_the_pass_leaves_what_it_did_not_free_undetermined() {
    let lines = [
        alloc(1, 4, &node("MmBackward0", "mm")),
        alloc(2, 16, &node("MmBackward0", "mm")),
        alloc(3, 8, &node("AccumulateGrad", "add_Tensor")),
        free(1),
    ];
    let t = trace(&lines);
    let roles = BackwardRoles::of(&t);
    assert_eq!(roles.role_of(0), Some(Role::Temporary), "freed: told");
    assert_eq!(roles.role_of(1), Some(Role::Undetermined));
    assert_eq!(roles.role_of(2), Some(Role::Gradient), "AccumulateGrad's");
    let b = live_at(&t, 2, 10).backward.unwrap();
    assert_eq!(
        b.undetermined,
        Share {
            bytes: 16 * MIB,
            count: 1
        }
    );
    let text = b.to_string();
    assert!(
        text.contains("undetermined   16.00 MiB in 1: the recording ends inside the backward pass"),
        "{text}"
    );
}

#[test]
fn a_trace_without_a_backward_pass_has_no_roles() {
    let t = trace(&[alloc(1, 4, &python(12)), free(1)]);
    assert!(BackwardRoles::of(&t).is_empty());
    assert_eq!(live_at(&t, 0, 10).backward, None);
}
