//! Adversarial traces through gpumem-cli's readers: unknown ids, negative
//! and huge sizes, truncated lines and records. Each is an error naming
//! its line or record (or, for a free of an unknown id, a counted note),
//! never a panic; and no truncation of a valid trace panics any reader.

use std::collections::BTreeMap;

use gpumem_replay::ReplayError;
use gpumem_replay::trace::{Event, MAX_TRACE_SIZE, read_jsonl, read_pytorch, read_rmm_csv};
use serde_pickle::{HashableValue, SerOptions, Value};

/// (line or record, message) of a parse error; panics on anything else.
fn parse_error(result: Result<gpumem_replay::trace::Trace, ReplayError>) -> (u64, String) {
    match result {
        Err(ReplayError::Parse {
            number, message, ..
        }) => (number, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

const JSONL: &str = r#"{"format":"gpumem-trace","version":1}
{"op":"alloc","id":1,"size":4096,"stream":0}
{"op":"alloc","id":2,"size":100}
{"op":"mode","mode":"persistent"}
{"op":"free","id":1}
{"op":"cleanup"}
{"op":"free","id":2}
"#;

const CSV: &str = "Thread,Time,Action,Pointer,Size,Stream\n\
1,0.1,allocate,0x7f00,4096,0x0\n\
1,0.2,allocate,0x8f00,100,0x0\n\
1,0.3,free,0x7f00,4096,0x0\n\
1,0.4,allocate failure,0x0,99999999,0x0\n\
1,0.5,free,0x8f00,100,0x0\n";

#[test]
fn a_free_of_an_unknown_id_is_counted_with_its_line_not_fatal() {
    let trace =
        read_jsonl(&b"{\"op\":\"free\",\"id\":77}\n{\"op\":\"alloc\",\"id\":1,\"size\":8}\n"[..])
            .unwrap();
    assert_eq!(trace.stats.unknown_frees, 1);
    assert_eq!(trace.stats.first_unknown_frees[0].location, 1);
    assert_eq!(trace.stats.first_unknown_frees[0].id, 77);
    let csv = read_rmm_csv(&b"1,0.1,free,0xdead,16,0x0\n"[..]).unwrap();
    assert_eq!((csv.stats.unknown_frees, csv.events.len()), (1, 1));
}

#[test]
fn an_id_allocated_twice_while_live_names_both_lines() {
    let (line, message) = parse_error(read_jsonl(
        &b"{\"op\":\"alloc\",\"id\":5,\"size\":8}\n\n{\"op\":\"alloc\",\"id\":5,\"size\":8}\n"[..],
    ));
    assert_eq!(line, 3);
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn negative_sizes_are_refused_with_their_line() {
    let (line, _) = parse_error(read_jsonl(
        &b"{\"op\":\"alloc\",\"id\":1,\"size\":8}\n{\"op\":\"alloc\",\"id\":2,\"size\":-5}\n"[..],
    ));
    assert_eq!(line, 2);
    let (line, message) = parse_error(read_rmm_csv(&b"1,0.1,allocate,0x10,-5,0x0\n"[..]));
    assert_eq!(line, 1);
    assert!(message.contains("negative"), "{message}");
}

#[test]
fn huge_sizes_are_refused_as_corrupt_records() {
    let limit = MAX_TRACE_SIZE;
    for size in [
        (limit + 1).to_string(),
        u64::MAX.to_string(),
        "18446744073709551616".to_string(),
        "1e30".to_string(),
    ] {
        let text = format!("{{\"op\":\"alloc\",\"id\":1,\"size\":{size}}}\n");
        let (line, _) = parse_error(read_jsonl(text.as_bytes()));
        assert_eq!(line, 1, "{size}");
    }
    let exact = format!("{{\"op\":\"alloc\",\"id\":1,\"size\":{limit}}}\n");
    assert_eq!(
        read_jsonl(exact.as_bytes()).unwrap().events,
        vec![Event::Alloc {
            id: 1,
            size: limit,
            stream: 0
        }]
    );
    let (line, _) = parse_error(read_rmm_csv(
        &b"1,0.1,allocate,0x10,0xffffffffffffffff,0x0\n"[..],
    ));
    assert_eq!(line, 1);
    let (line, _) = parse_error(read_rmm_csv(
        &b"1,0.1,allocate,0x10,99999999999999999999999,0x0\n"[..],
    ));
    assert_eq!(line, 1);
}

#[test]
fn truncated_lines_are_refused_with_their_line_number() {
    let (line, message) = parse_error(read_jsonl(
        &b"{\"op\":\"alloc\",\"id\":1,\"size\":8}\n{\"op\":\"alloc\",\"id\":2,\"si"[..],
    ));
    assert_eq!(line, 2);
    assert!(message.contains("truncated"), "{message}");
    let (line, message) = parse_error(read_rmm_csv(
        &b"1,0.1,allocate,0x10,64,0x0\n1,0.2,alloc"[..],
    ));
    assert_eq!(line, 2);
    assert!(message.contains("truncated"), "{message}");
}

#[test]
fn no_truncation_of_a_valid_text_trace_panics_a_reader() {
    let (mut ok, mut refused) = (0, 0);
    for text in [JSONL, CSV] {
        for cut in 0..=text.len() {
            let bytes = &text.as_bytes()[..cut];
            let result = std::panic::catch_unwind(|| (read_jsonl(bytes), read_rmm_csv(bytes)));
            let (a, b) = result.unwrap_or_else(|_| panic!("a reader panicked on {cut} bytes"));
            for r in [a, b] {
                match r {
                    Ok(_) => ok += 1,
                    Err(ReplayError::Parse { number, .. }) => {
                        assert!(number >= 1);
                        refused += 1;
                    }
                    Err(other) => panic!("not a parse error: {other}"),
                }
            }
        }
    }
    assert!(ok > 0 && refused > 0, "{ok} read, {refused} refused");
}

fn key(k: &str) -> HashableValue {
    HashableValue::String(k.to_string())
}

fn snapshot(size: Value) -> Vec<u8> {
    let mut event = BTreeMap::new();
    event.insert(key("action"), Value::String("alloc".into()));
    event.insert(key("addr"), Value::I64(0x7f00_0000));
    event.insert(key("size"), size);
    event.insert(key("stream"), Value::I64(0));
    let mut top = BTreeMap::new();
    top.insert(key("segments"), Value::List(vec![]));
    top.insert(
        key("device_traces"),
        Value::List(vec![Value::List(vec![Value::Dict(event)])]),
    );
    serde_pickle::value_to_vec(&Value::Dict(top), SerOptions::new()).unwrap()
}

#[test]
fn pytorch_snapshots_with_negative_or_huge_sizes_name_the_record() {
    let (record, message) = parse_error(read_pytorch(&snapshot(Value::I64(-5))[..], None));
    assert_eq!(record, 1);
    assert!(message.contains("negative"), "{message}");
    let huge = Value::I64(i64::MAX);
    let (record, _) = parse_error(read_pytorch(&snapshot(huge)[..], None));
    assert_eq!(record, 1);
    let ok = read_pytorch(&snapshot(Value::I64(4096))[..], None).unwrap();
    assert_eq!(ok.events.len(), 1);
}

#[test]
fn no_truncation_of_a_snapshot_panics_the_reader() {
    let bytes = snapshot(Value::I64(4096));
    let mut refused = 0;
    for cut in 0..bytes.len() {
        let result = std::panic::catch_unwind(|| read_pytorch(&bytes[..cut], None));
        match result.unwrap_or_else(|_| panic!("the reader panicked on {cut} bytes")) {
            Err(ReplayError::Parse { .. }) => refused += 1,
            Ok(trace) => assert!(trace.events.len() <= 1),
            Err(other) => panic!("not a parse error: {other}"),
        }
    }
    assert!(refused > 0);
}
