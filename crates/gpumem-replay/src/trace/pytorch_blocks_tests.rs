//! Which blocks count as allocated before recording began, on snapshots
//! built here value by value.

use std::rc::Rc;

use super::*;

fn s(text: &str) -> Py {
    Py::Str(text.into())
}

fn dict(entries: &[(&str, Py)]) -> Py {
    Py::Dict(
        entries
            .iter()
            .map(|(k, v)| (s(k), v.clone()))
            .collect::<Vec<_>>()
            .into(),
    )
}

fn list(items: Vec<Py>) -> Py {
    Py::List(Rc::from(items))
}

fn event(action: &str, addr: i128, size: i128) -> Py {
    dict(&[
        ("action", s(action)),
        ("addr", Py::Int(addr)),
        ("size", Py::Int(size)),
    ])
}

/// One segment on `device` at `address` holding `blocks` (no addresses:
/// they follow each other from the segment's).
fn snapshot(device: i128, address: i128, blocks: Vec<Py>) -> Py {
    let segment = dict(&[
        ("device", Py::Int(device)),
        ("address", Py::Int(address)),
        ("stream", Py::Int(3)),
        ("blocks", list(blocks)),
    ]);
    dict(&[("segments", list(vec![segment]))])
}

fn block(size: i128, state: &str) -> Py {
    dict(&[
        ("size", Py::Int(size)),
        ("requested_size", Py::Int(size - 1)),
        ("state", s(state)),
    ])
}

#[test]
fn untouched_active_blocks_are_pre_existing_and_take_their_address_from_the_segment() {
    let top = snapshot(
        0,
        1000,
        vec![
            block(100, "active_allocated"),
            block(50, "inactive"),
            block(30, "active_allocated"),
        ],
    );
    let (blocks, stats) = pre_existing(&[], &top, 0);
    let found: Vec<(u64, u64, u64)> = blocks.iter().map(|b| (b.addr, b.size, b.stream)).collect();
    assert_eq!(
        found,
        [(1000, 99, 3), (1150, 29, 3)],
        "requested sizes, the segment's stream"
    );
    assert_eq!(
        (stats.active_blocks, stats.active_bytes, stats.blocks),
        (2, 128, 2)
    );
    let (none, _) = pre_existing(&[], &top, 1);
    assert!(none.is_empty(), "another device's segments are not read");
}

#[test]
fn a_block_the_trace_allocated_is_not_pre_existing_and_one_it_freed_contradicts_the_history() {
    let top = snapshot(
        0,
        1000,
        vec![
            block(100, "active_allocated"),
            block(30, "active_allocated"),
        ],
    );
    let events = [
        event("alloc", 1000, 99),
        // 1100 freed before the trace touched it: pre-existing, and then
        // its block in segments contradicts the history.
        event("free_completed", 1100, 29),
    ];
    let (blocks, stats) = pre_existing(&events, &top, 0);
    assert_eq!(blocks.len(), 1);
    assert_eq!((blocks[0].addr, blocks[0].size), (1100, 29));
    assert_eq!(
        (stats.freed_blocks, stats.active_blocks, stats.contradicted),
        (1, 0, 1)
    );
}

#[test]
fn only_the_first_free_of_an_untouched_address_is_inferred() {
    let events = [
        event("free_completed", 7, 8),
        event("free_completed", 7, 8),
        event("alloc", 9, 4),
        event("free_completed", 9, 4),
        event("free_completed", 9, 4),
    ];
    let top = dict(&[]);
    let (blocks, stats) = pre_existing(&events, &top, 0);
    assert_eq!(blocks.len(), 1, "the repeated frees stay unknown frees");
    assert_eq!((stats.blocks, stats.bytes), (1, 8));
}
