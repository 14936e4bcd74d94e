//! The page as text: its data, its isolation from the network, and the
//! escaping that keeps a trace's strings inside their element. (What it
//! does in a browser is `cargo xtask html-check`.)

use super::*;
use gpumem_replay::trace::{Event, read_jsonl};

fn page(trace: &Trace, x: XAxis) -> String {
    let x_of = |event: usize| match x {
        XAxis::Ops => event as u64 + 1,
        XAxis::Time => trace.origins.time_us(event).unwrap_or(0),
    };
    let report = HtmlReport {
        title: "serving <arenas>".into(),
        summary: vec![("peak live".into(), "1.00 MiB".into())],
        curves: vec![Curve {
            name: "live".into(),
            points: vec![(1, 10), (2, 20)],
        }],
        bands: vec![],
        trace,
        x,
        x_of_event: &x_of,
        clock: vec![],
    };
    let mut out = Vec::new();
    write_html(&mut out, &report).unwrap();
    String::from_utf8(out).unwrap()
}

fn data(page: &str) -> serde_json::Value {
    let start = page
        .find(r#"<script id="data" type="application/json">"#)
        .unwrap();
    let rest = &page[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    serde_json::from_str(body).unwrap()
}

#[test]
fn the_page_embeds_its_data_and_reaches_for_nothing_on_the_network() {
    let t = read_jsonl(
        &b"{\"op\":\"alloc\",\"id\":1,\"size\":64,\"tag\":\"kv\"}\n{\"op\":\"alloc\",\"id\":2,\"size\":32}\n{\"op\":\"free\",\"id\":1}\n"[..],
    )
    .unwrap();
    let html = page(&t, XAxis::Ops);
    let d = data(&html);
    assert_eq!(
        d["intervals"],
        serde_json::json!([[1, 3, 64, 0, -1], [2, null, 32, -1, -1]])
    );
    assert_eq!(d["origins"], serde_json::json!(["kv"]));
    assert!(html.contains("serving &lt;arenas&gt;"));
    for needle in ["src=", "href=", "https:", "@import", "url("] {
        assert!(
            !html.contains(needle),
            "the page must be offline: found {needle}"
        );
    }
    let http: Vec<_> = html
        .match_indices("http:")
        .map(|(i, _)| &html[i..i + 26])
        .collect();
    assert_eq!(
        http,
        ["http://www.w3.org/2000/svg"],
        "only the SVG namespace"
    );
}

#[test]
fn a_tag_that_closes_the_script_element_stays_data() {
    let t = read_jsonl(&b"{\"op\":\"alloc\",\"id\":1,\"size\":8,\"tag\":\"</script><b>x\"}\n"[..])
        .unwrap();
    let html = page(&t, XAxis::Ops);
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own two"
    );
    assert_eq!(data(&html)["origins"][0], "</script><b>x");
}

#[test]
fn the_time_axis_uses_the_traces_times() {
    let t = read_jsonl(
        &b"{\"op\":\"alloc\",\"id\":1,\"size\":8,\"time_us\":500}\n{\"op\":\"free\",\"id\":1,\"time_us\":900}\n"[..],
    )
    .unwrap();
    assert_eq!(
        data(&page(&t, XAxis::Time))["intervals"],
        serde_json::json!([[500, 900, 8, -1, -1]])
    );
}

#[test]
fn a_huge_trace_keeps_its_largest_allocations_and_counts_the_rest() {
    let events = (0..MAX_INTERVALS as u64 + 10)
        .map(|id| Event::Alloc {
            id,
            size: id + 1,
            stream: 0,
        })
        .collect();
    let t = Trace::from_events(events);
    let d = data(&page(&t, XAxis::Ops));
    assert_eq!(d["left_out"], 10);
    let intervals = d["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), MAX_INTERVALS);
    assert_eq!(intervals[0][2], 11, "the ten smallest were left out");
}

#[test]
fn the_page_marks_the_memory_from_before_recording_and_keeps_a_nodes_forward_stack() {
    let snapshot = include_bytes!("../../tests/fixtures/backward_stacks.pickle");
    let t = gpumem_replay::trace::read_pytorch(&snapshot[..], None).unwrap();
    let d = data(&page(&t, XAxis::Ops));
    assert_eq!(d["pre_existing"], 1, "the weights block");
    assert_eq!(d["intervals"][0][2], 64 << 20);
    let forward: Vec<usize> = d["forward"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_array().unwrap().len())
        .collect();
    assert_eq!(
        forward.iter().filter(|&&n| n > 0).count(),
        1,
        "only MmBackward0's: {forward:?}"
    );
    assert!(
        forward.contains(&4),
        "its four traceback frames: {forward:?}"
    );
}
