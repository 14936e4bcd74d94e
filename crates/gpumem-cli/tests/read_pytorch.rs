//! The PyTorch snapshot reader: a pickle made by Python's `pickle` (see
//! fixtures/make_snapshot.py), pickles built here with serde-pickle, and
//! malformed snapshots reported with their record number.

use std::collections::BTreeMap;

use gpumem_cli::CliError;
use gpumem_cli::trace::{Event, read_pytorch};
use serde_pickle::{HashableValue, SerOptions, Value};

const MIB: u64 = 1 << 20;

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
        Err(CliError::Parse {
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
    assert_eq!(
        trace.events,
        vec![
            Event::Free { id: 0x7F0000000000 },
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
        trace.stats.unknown_frees, 1,
        "the block freed before recording began"
    );
    assert_eq!(trace.stats.skipped, 4, "segment and free_requested events");
}

#[test]
fn a_chosen_device_is_read_and_a_missing_one_is_an_error() {
    let bytes = snapshot(vec![
        vec![entry("alloc", 1, Value::I64(8))],
        vec![
            entry("alloc", 2, Value::I64(16)),
            entry("free_completed", 2, Value::I64(16)),
        ],
    ]);
    assert_eq!(
        read_pytorch(bytes.as_slice(), None).unwrap().events.len(),
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
fn the_first_non_empty_device_is_read_by_default() {
    let bytes = snapshot(vec![vec![], vec![entry("alloc", 2, Value::I64(16))]]);
    assert_eq!(
        read_pytorch(bytes.as_slice(), None).unwrap().events.len(),
        1
    );
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
    assert!(message.contains("64 bits"), "{message}");
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
