//! The JSON Lines reader: valid traces, the writer round trip, and every
//! kind of malformed line reported with its line number.

use gpumem_replay::ReplayError;
use gpumem_replay::trace::{Event, Mode, UnknownFree, read_jsonl, write_jsonl};

fn read(text: &str) -> Result<gpumem_replay::trace::Trace, ReplayError> {
    read_jsonl(text.as_bytes())
}

fn error_at(text: &str) -> (u64, String) {
    match read(text) {
        Err(ReplayError::Parse {
            number,
            message,
            unit,
            format,
        }) => {
            assert_eq!(format, "jsonl");
            assert_eq!(unit, "line");
            (number, message)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn a_documented_trace_reads_with_header_blank_lines_and_default_stream() {
    let text = r#"{"format":"gpumem-trace","version":1}
{"op":"alloc","id":1,"size":4096,"stream":3}

{"op":"mode","mode":"persistent"}
{"op":"alloc","id":2,"size":10}
{"op":"mode","mode":"auto"}
{"op":"free","id":1}
{"op":"cleanup"}
"#;
    let trace = read(text).unwrap();
    assert_eq!(
        trace.events,
        vec![
            Event::Alloc {
                id: 1,
                size: 4096,
                stream: 3
            },
            Event::Mode(Mode::Persistent),
            Event::Alloc {
                id: 2,
                size: 10,
                stream: 0
            },
            Event::Mode(Mode::Auto),
            Event::Free { id: 1 },
            Event::Cleanup,
        ]
    );
    assert_eq!(trace.stats.records, 8);
    assert_eq!(trace.stats.unknown_frees, 0);
}

#[test]
fn a_trace_without_header_reads() {
    let trace = read("{\"op\":\"alloc\",\"id\":9,\"size\":1}\n{\"op\":\"free\",\"id\":9}").unwrap();
    assert_eq!(trace.events.len(), 2);
}

#[test]
fn the_writer_output_reads_back_to_the_same_events() {
    let events = vec![
        Event::Mode(Mode::Persistent),
        Event::Alloc {
            id: 0,
            size: 1 << 40,
            stream: 0,
        },
        Event::Mode(Mode::Auto),
        Event::Alloc {
            id: 7,
            size: 0,
            stream: u64::MAX,
        },
        Event::Free { id: 7 },
        Event::Cleanup,
        Event::Free { id: 0 },
    ];
    let mut bytes = Vec::new();
    write_jsonl(&mut bytes, &events).unwrap();
    assert_eq!(read_jsonl(bytes.as_slice()).unwrap().events, events);
}

#[test]
fn a_free_of_an_unknown_id_is_counted_with_its_line_not_fatal() {
    let trace = read("{\"op\":\"free\",\"id\":5}\n{\"op\":\"alloc\",\"id\":5,\"size\":8}\n{\"op\":\"free\",\"id\":5}\n{\"op\":\"free\",\"id\":5}\n").unwrap();
    assert_eq!(trace.stats.unknown_frees, 2);
    assert_eq!(
        trace.stats.first_unknown_frees,
        vec![
            UnknownFree { location: 1, id: 5 },
            UnknownFree { location: 4, id: 5 }
        ]
    );
    assert_eq!(
        trace.events.len(),
        4,
        "unknown frees stay in the trace; replay skips them"
    );
}

#[test]
fn a_truncated_line_is_an_error_naming_its_line() {
    let (line, message) =
        error_at("{\"op\":\"alloc\",\"id\":1,\"size\":8}\n{\"op\":\"alloc\",\"id\":2,\"si");
    assert_eq!(line, 2);
    assert!(message.contains("truncated"), "{message}");
}

#[test]
fn a_negative_size_is_an_error_naming_its_line() {
    let (line, message) = error_at("\n\n{\"op\":\"alloc\",\"id\":1,\"size\":-4096}\n");
    assert_eq!(line, 3);
    assert!(message.contains("-4096"), "{message}");
}

#[test]
fn sizes_beyond_64_bits_or_the_trace_limit_are_errors_naming_their_line() {
    let (line, _) = error_at("{\"op\":\"alloc\",\"id\":1,\"size\":100000000000000000000000}\n");
    assert_eq!(line, 1);
    let (line, message) = error_at(
        "{\"op\":\"free\",\"id\":1}\n{\"op\":\"alloc\",\"id\":1,\"size\":18446744073709551615}\n",
    );
    assert_eq!(line, 2);
    assert!(message.contains("64 PiB"), "{message}"); // 2^64 does not fit in 64 bits: the same message, not a float type error.
    let (line, message) =
        error_at("{\"op\":\"alloc\",\"id\":1, \"size\" : 18446744073709551616,\"stream\":0}\n");
    assert_eq!(line, 1);
    assert_eq!(
        message,
        "size 18446744073709551616 exceeds the 64 PiB limit of a trace; the record is corrupt"
    );
    let (_, message) = error_at("{\"op\":\"alloc\",\"id\":1,\"size\":1.5}\n");
    assert!(
        message.contains("field `size` is 1.5, not a whole number"),
        "{message}"
    );
}

#[test]
fn a_byte_order_mark_before_the_first_line_is_accepted() {
    let trace = read("\u{feff}{\"format\":\"gpumem-trace\",\"version\":1}\n{\"op\":\"alloc\",\"id\":1,\"size\":8}\n").unwrap();
    assert_eq!(trace.events.len(), 1);
    let trace = read("\u{feff}{\"op\":\"alloc\",\"id\":1,\"size\":8}\n").unwrap();
    assert_eq!(trace.events.len(), 1);
    // Only at the very start: elsewhere it is not JSON.
    assert_eq!(
        error_at("{\"op\":\"cleanup\"}\n\u{feff}{\"op\":\"cleanup\"}\n").0,
        2
    );
}

#[test]
fn an_optional_tag_and_frames_are_accepted_and_not_replayed() {
    let trace = read(
        r#"{"op":"alloc","id":1,"size":8,"tag":"kv-cache","frames":[{"filename":"a.py","line":3}]}
{"op":"alloc","id":2,"size":16,"stream":1,"tag":null}
{"op":"free","id":1,"frames":[],"tag":"kv-cache"}
"#,
    )
    .unwrap();
    assert_eq!(
        trace.events,
        vec![
            Event::Alloc {
                id: 1,
                size: 8,
                stream: 0
            },
            Event::Alloc {
                id: 2,
                size: 16,
                stream: 1
            },
            Event::Free { id: 1 },
        ]
    );
    // A tag must be a string; other unknown fields are still refused.
    assert_eq!(
        error_at("{\"op\":\"alloc\",\"id\":1,\"size\":8,\"tag\":3}").0,
        1
    );
    assert_eq!(
        error_at("{\"op\":\"alloc\",\"id\":1,\"size\":8,\"tags\":\"x\"}").0,
        1
    );
}

#[test]
fn unknown_ops_fields_and_modes_are_errors_naming_their_line() {
    assert_eq!(error_at("{\"op\":\"realloc\",\"id\":1}").0, 1);
    assert_eq!(error_at("{\"op\":\"free\",\"id\":1,\"size\":3}").0, 1);
    assert_eq!(error_at("{\"op\":\"mode\",\"mode\":\"sometimes\"}").0, 1);
    assert_eq!(error_at("{\"op\":\"alloc\",\"size\":3}").0, 1);
    assert_eq!(
        error_at("{\"op\":\"alloc\",\"id\":\"one\",\"size\":3}").0,
        1
    );
    assert_eq!(error_at("not json at all").0, 1);
}

#[test]
fn an_id_allocated_twice_while_live_is_an_error_naming_both_lines() {
    let (line, message) = error_at(
        "{\"op\":\"alloc\",\"id\":4,\"size\":1}\n{\"op\":\"alloc\",\"id\":4,\"size\":1}\n",
    );
    assert_eq!(line, 2);
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn a_header_of_another_format_or_version_is_refused() {
    let (line, message) = error_at("{\"format\":\"gpumem-trace\",\"version\":2}\n");
    assert_eq!(line, 1);
    assert!(message.contains("version 2"), "{message}");
    assert!(
        error_at("{\"format\":\"other\",\"version\":1}\n")
            .1
            .contains("other")
    );
}

#[test]
fn a_header_after_the_first_line_is_not_an_event() {
    let (line, _) = error_at("{\"op\":\"cleanup\"}\n{\"format\":\"gpumem-trace\",\"version\":1}\n");
    assert_eq!(line, 2);
}

#[test]
fn invalid_utf8_is_an_error_naming_its_line() {
    let mut bytes = b"{\"op\":\"cleanup\"}\n".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
    match read_jsonl(bytes.as_slice()) {
        Err(ReplayError::Parse { number, .. }) => assert_eq!(number, 2),
        other => panic!("expected a parse error, got {other:?}"),
    }
}
