//! The PyTorch snapshot reader: a pickle made by Python's `pickle` (see
//! fixtures/make_snapshot.py), pickles built here with serde-pickle, and
//! malformed snapshots reported with their record number.

use std::collections::BTreeMap;

use gpumem::storage::units::MIB;
use gpumem_replay::ReplayError;
use gpumem_replay::trace::{Event, read_pytorch};
use serde_pickle::{HashableValue, SerOptions, Value};

fn key(k: &str) -> HashableValue {
    HashableValue::String(k.to_string())
}

fn entry(action: &str, addr: i64, size: Value) -> Value {
    let mut d = BTreeMap::new();
    d.insert(key("action"), Value::String(action.to_string()));
    d.insert(key("addr"), Value::I64(addr));
    d.insert(key("size"), size);
    d.insert(key("stream"), Value::I64(0));
    Value::Dict(d)
}

fn snapshot(devices: Vec<Vec<Value>>) -> Vec<u8> {
    let mut top = BTreeMap::new();
    top.insert(key("segments"), Value::List(vec![]));
    top.insert(
        key("device_traces"),
        Value::List(devices.into_iter().map(Value::List).collect()),
    );
    serde_pickle::value_to_vec(&Value::Dict(top), SerOptions::new()).unwrap()
}

fn error_at(bytes: &[u8]) -> (u64, String) {
    match read_pytorch(bytes, None) {
        Err(ReplayError::Parse {
            number,
            message,
            format,
            unit,
        }) => {
            assert_eq!((format, unit), ("pytorch", "record"));
            (number, message)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn a_python_made_snapshot_reads_alloc_and_free_completed_only() {
    let trace = read_pytorch(&include_bytes!("fixtures/snapshot.pickle")[..], None).unwrap();
    let (a, b, c) = (0x7F1000000000, 0x7F1000200000, 0x7F2000000000);
    let before = 0x7F0000000000;
    assert_eq!(
        trace.events,
        vec![
            // Freed before it was seen allocated: live from the start.
            Event::Alloc {
                id: before,
                size: 4 * MIB,
                stream: 0
            },
            Event::Free { id: before },
            Event::Alloc {
                id: a,
                size: 2 * MIB,
                stream: 0
            },
            Event::Alloc {
                id: b,
                size: MIB / 2,
                stream: 7
            },
            Event::Alloc {
                id: c,
                size: 16 * MIB,
                stream: 0
            },
            Event::Free { id: a },
            Event::Alloc {
                id: a,
                size: MIB,
                stream: 0
            },
            Event::Free { id: c },
        ]
    );
    assert_eq!(trace.stats.records, 11);
    assert_eq!(
        trace.stats.unknown_frees, 0,
        "the block freed before it was seen allocated is pre-existing"
    );
    let pre = trace.stats.pre_existing.as_ref().unwrap();
    assert_eq!((pre.blocks, pre.freed_blocks, pre.bytes), (1, 1, 4 * MIB));
    assert_eq!(
        (pre.active_blocks, pre.contradicted),
        (0, 0),
        "the active block in segments is one the trace allocated"
    );
    assert_eq!(trace.stats.skipped, 4, "segment and free_requested events");
    assert_eq!(trace.origins.origin_of(0), Some("before recording"));
}

#[test]
fn frames_times_and_pytorchs_own_reserved_bytes_are_kept_beside_the_events() {
    let trace = read_pytorch(&include_bytes!("fixtures/snapshot.pickle")[..], None).unwrap();
    let o = &trace.origins;
    assert_eq!(o.origin_of(2), Some("forward (train.py:12)"));
    assert_eq!(o.origin_count(), 2, "the frame and `before recording`");
    let addr = 0x7F1000000000u64;
    assert_eq!(o.time_us(2), Some(1000 + addr % 997));
    let (name, reserved) = o.source_reserved().expect("segments were recorded");
    assert_eq!(name, "PyTorch");
    // 20 MiB held at the snapshot, +20 MiB then -20 MiB over the history:
    // 20 MiB before the first segment_alloc (the pre-existing block's
    // allocation and its free), 40 MiB after it, and the segment_free
    // after the last event counts toward it: 20 MiB, as the snapshot holds.
    let mib = reserved.iter().map(|b| b / MIB).collect::<Vec<_>>();
    assert_eq!(mib, [20, 20, 40, 40, 40, 40, 40, 20]);
}

#[test]
fn with_several_busy_devices_one_must_be_chosen_and_a_missing_one_is_an_error() {
    let bytes = snapshot(vec![
        vec![entry("alloc", 1, Value::I64(8))],
        vec![
            entry("alloc", 2, Value::I64(16)),
            entry("free_completed", 2, Value::I64(16)),
        ],
    ]);
    let refused = read_pytorch(bytes.as_slice(), None)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("device 0 (1 events), device 1 (2 events)")
            && refused.contains("--device"),
        "{refused}"
    );
    assert_eq!(
        read_pytorch(bytes.as_slice(), Some(0))
            .unwrap()
            .events
            .len(),
        1
    );
    assert_eq!(
        read_pytorch(bytes.as_slice(), Some(1)).unwrap().events,
        vec![
            Event::Alloc {
                id: 2,
                size: 16,
                stream: 0
            },
            Event::Free { id: 2 }
        ]
    );
    assert!(read_pytorch(bytes.as_slice(), Some(2)).is_err());
}

#[test]
fn the_one_busy_device_is_read_by_default_and_named() {
    let bytes = snapshot(vec![vec![], vec![entry("alloc", 2, Value::I64(16))]]);
    let trace = read_pytorch(bytes.as_slice(), None).unwrap();
    assert_eq!(trace.events.len(), 1);
    assert_eq!(trace.stats.device, Some(1));
}

#[test]
fn a_negative_size_is_an_error_naming_its_record() {
    let bytes = snapshot(vec![vec![
        entry("alloc", 1, Value::I64(8)),
        entry("alloc", 2, Value::I64(-8)),
    ]]);
    let (record, message) = error_at(&bytes);
    assert_eq!(record, 2);
    assert!(message.contains("negative"), "{message}");
}

#[test]
fn a_size_beyond_64_bits_is_an_error_naming_its_record() {
    // Python: pickle.dumps(2**70, protocol=2), a LONG1 opcode.
    let huge = [0x80, 0x02, 0x8a, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x2e];
    let big = serde_pickle::value_from_slice(&huge, Default::default()).unwrap();
    assert!(matches!(big, Value::Int(_)));
    let bytes = snapshot(vec![vec![entry("alloc", 1, big)]]);
    let (record, message) = error_at(&bytes);
    assert_eq!(record, 1);
    assert!(message.contains("64 PiB limit"), "{message}");
}

#[test]
fn a_size_of_2_pow_64_minus_1_gets_the_64_pib_message_of_the_other_readers() {
    // Python: pickle.dumps(2**64 - 1, protocol=2), a LONG1 of 9 bytes
    // (little-endian, with a 0 byte keeping it positive).
    let max = [
        0x80, 0x02, 0x8a, 0x09, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x2e,
    ];
    let big = serde_pickle::value_from_slice(&max, Default::default()).unwrap();
    assert!(matches!(big, Value::Int(_)));
    let bytes = snapshot(vec![vec![entry("alloc", 1, big)]]);
    let (record, message) = error_at(&bytes);
    assert_eq!(record, 1);
    assert_eq!(
        message,
        "size 18446744073709551615 exceeds the 64 PiB limit of a trace; the record is corrupt"
    );
    // An address of 2^63 and above (a pickle long) is still an address.
    let mut d = BTreeMap::new();
    d.insert(key("action"), Value::String("alloc".to_string()));
    d.insert(
        key("addr"),
        serde_pickle::value_from_slice(&max, Default::default()).unwrap(),
    );
    d.insert(key("size"), Value::I64(8));
    let trace = read_pytorch(snapshot(vec![vec![Value::Dict(d)]]).as_slice(), None).unwrap();
    assert_eq!(
        trace.events,
        vec![Event::Alloc {
            id: u64::MAX,
            size: 8,
            stream: 0
        }]
    );
}

#[test]
fn a_garbage_file_is_described_by_a_short_hex_preview_never_its_raw_bytes() {
    let garbage: &[&[u8]] = &[
        b"hello, this is not a pickle at all \x01\x02",
        b"\x80\x02Xhi\x00\x00\x00\xff\xfe\x1b[31mred",
        b"\x80\x02I1\x1b[31mmodule\n.",
        b"\x80\x02L12345\x1b[31m\xff\n.",
    ];
    for bytes in garbage {
        let (record, message) = error_at(bytes);
        assert_eq!(record, 0);
        assert!(message.starts_with("not a readable pickle"), "{message}");
        assert!(message.contains("it starts with "), "{message}");
        assert!(
            message.chars().all(|c| c.is_ascii_graphic() || c == ' '),
            "only printable ASCII: {message:?}"
        );
        for word in ["hello", "module", "red", "12345"] {
            assert!(!message.contains(word), "echoes {word}: {message}");
        }
        assert!(message.len() < 200, "{message}");
    }
    let (_, message) = error_at(b"hello");
    assert!(message.contains("68 65 6c 6c 6f"), "{message}");
}

#[test]
fn unknown_actions_are_skipped_counted_and_named() {
    let bytes = snapshot(vec![vec![
        entry("alloc", 1, Value::I64(8)),
        entry("segment_alloc", 1, Value::I64(8)),
        entry("workspace_snapshot", 1, Value::I64(8)),
        entry("free_completed", 1, Value::I64(8)),
        entry("workspace_snapshot", 1, Value::I64(8)),
        entry("future_action", 1, Value::I64(8)),
    ]]);
    let trace = read_pytorch(bytes.as_slice(), None).unwrap();
    assert_eq!(trace.events.len(), 2);
    assert_eq!(trace.stats.skipped, 4);
    let names: Vec<(&str, u64)> = trace
        .stats
        .unknown_actions
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(names, [("future_action", 1), ("workspace_snapshot", 2)]);

    // Many distinct names: a few are kept, the rest counted together.
    let many: Vec<Value> = (0..20)
        .map(|i| entry(&format!("action_{i}"), 1, Value::I64(8)))
        .collect();
    let trace = read_pytorch(snapshot(vec![many]).as_slice(), None).unwrap();
    let actions = &trace.stats.unknown_actions;
    assert_eq!(actions.values().sum::<u64>(), 20);
    assert!(actions.len() <= gpumem_replay::trace::UNKNOWN_ACTIONS_KEPT + 1);
}

#[test]
fn a_record_missing_a_field_or_of_the_wrong_type_is_an_error_naming_it() {
    let mut no_addr = BTreeMap::new();
    no_addr.insert(key("action"), Value::String("alloc".into()));
    no_addr.insert(key("size"), Value::I64(4));
    let bytes = snapshot(vec![vec![
        entry("alloc", 1, Value::I64(8)),
        Value::Dict(no_addr),
    ]]);
    let (record, message) = error_at(&bytes);
    assert_eq!(record, 2);
    assert!(message.contains("addr"), "{message}");

    let bytes = snapshot(vec![vec![Value::I64(3)]]);
    assert_eq!(error_at(&bytes).0, 1);
    let bytes = snapshot(vec![vec![entry("alloc", 1, Value::String("8".into()))]]);
    assert!(error_at(&bytes).1.contains("string"));
}

#[test]
fn a_truncated_pickle_is_an_error_not_a_panic() {
    let whole = include_bytes!("fixtures/snapshot.pickle");
    for cut in [0, 1, 2, 10, whole.len() / 2, whole.len() - 1] {
        let (record, _) = error_at(&whole[..cut]);
        assert_eq!(record, 0, "cut at {cut}");
    }
}

#[test]
fn a_pickle_that_is_not_a_snapshot_says_how_to_make_one() {
    let bytes = serde_pickle::value_to_vec(&Value::List(vec![]), SerOptions::new()).unwrap();
    assert!(error_at(&bytes).1.contains("dict"));
    let mut top = BTreeMap::new();
    top.insert(key("segments"), Value::List(vec![]));
    let bytes = serde_pickle::value_to_vec(&Value::Dict(top), SerOptions::new()).unwrap();
    assert!(error_at(&bytes).1.contains("_record_memory_history"));
    assert!(
        error_at(&snapshot(vec![vec![], vec![]]))
            .1
            .contains("empty")
    );
}
