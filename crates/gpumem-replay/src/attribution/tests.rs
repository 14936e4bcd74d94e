//! Attribution on traces read from JSON Lines with tags and frames.

use super::*;
use crate::trace::read_jsonl;
use gpumem::storage::units::MIB;

fn trace(lines: &str) -> Trace {
    read_jsonl(lines.as_bytes()).unwrap()
}

#[test]
fn the_peak_is_found_and_its_holders_are_grouped_by_tag_most_bytes_first() {
    let t = trace(&format!(
        r#"{{"op":"alloc","id":1,"size":{w},"tag":"weights"}}
{{"op":"alloc","id":2,"size":{a},"tag":"activations"}}
{{"op":"alloc","id":3,"size":{a},"tag":"activations"}}
{{"op":"alloc","id":4,"size":{k},"tag":"kv-cache"}}
{{"op":"free","id":2}}
{{"op":"free","id":3}}
"#,
        w = 8 * MIB,
        a = 3 * MIB,
        k = MIB
    ));
    let peak = peak_live_event(&t).unwrap();
    assert_eq!(peak, 3, "after the fourth event");
    let at = live_at(&t, peak, DEFAULT_TOP);
    assert_eq!((at.op, at.live_bytes, at.live_count), (4, 15 * MIB, 4));
    let groups: Vec<_> = at
        .holders
        .iter()
        .map(|h| (h.origin.as_str(), h.bytes, h.count))
        .collect();
    assert_eq!(
        groups,
        [
            ("weights", 8 * MIB, 1),
            ("activations", 6 * MIB, 2),
            ("kv-cache", MIB, 1)
        ]
    );
    assert_eq!(at.rest, None);
}

#[test]
fn allocations_without_an_origin_group_by_size_and_frames_name_the_program_frame() {
    let t = trace(&format!(
        r#"{{"op":"alloc","id":1,"size":{m}}}
{{"op":"alloc","id":2,"size":{m}}}
{{"op":"alloc","id":3,"size":4096,"frames":[{{"filename":"/venv/lib/python3.11/site-packages/torch/nn/functional.py","line":9,"name":"linear"}},{{"filename":"/src/model/mlp.py","line":42,"name":"forward"}}]}}
"#,
        m = MIB
    ));
    let at = live_at(&t, 2, DEFAULT_TOP);
    let names: Vec<_> = at.holders.iter().map(|h| h.origin.as_str()).collect();
    assert_eq!(names, ["untagged 1.00 MiB", "forward (model/mlp.py:42)"]);
    assert_eq!(at.holders[0].count, 2);
}

#[test]
fn groups_past_the_top_are_summed_into_the_rest() {
    let lines: String = (1..=5)
        .map(|i| {
            format!(
                "{{\"op\":\"alloc\",\"id\":{i},\"size\":{},\"tag\":\"t{i}\"}}\n",
                i * 100
            )
        })
        .collect();
    let at = live_at(&trace(&lines), 99, 2);
    assert_eq!(at.op, 5, "a moment past the end is the last event");
    let names: Vec<_> = at.holders.iter().map(|h| h.origin.as_str()).collect();
    assert_eq!(names, ["t5", "t4"]);
    let rest = at.rest.unwrap();
    assert_eq!(
        (rest.origin.as_str(), rest.bytes, rest.count),
        ("3 more origins", 600, 3)
    );
}

#[test]
fn a_trace_that_allocates_nothing_has_no_peak() {
    assert_eq!(peak_live_event(&trace("{\"op\":\"cleanup\"}\n")), None);
    let at = live_at(&Trace::default(), 0, DEFAULT_TOP);
    assert_eq!((at.live_bytes, at.holders.len()), (0, 0));
}
