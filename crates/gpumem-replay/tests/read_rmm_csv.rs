//! The RMM logging-adaptor CSV reader: RMM's own lines, gpumem's logging
//! adaptor output, and malformed lines reported with their line number.

use gpumem::storage::{Action, ResourceEvent, StreamId, write_csv};
use gpumem_replay::ReplayError;
use gpumem_replay::trace::{Event, read_rmm_csv};

fn error_at(text: &str) -> (u64, String) {
    match read_rmm_csv(text.as_bytes()) {
        Err(ReplayError::Parse {
            number,
            message,
            format,
            ..
        }) => {
            assert_eq!(format, "rmm-csv");
            (number, message)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn the_fixture_log_reads_with_pointer_reuse_failures_and_unknown_frees() {
    let text = include_str!("data/rmm_log.csv");
    let trace = read_rmm_csv(text.as_bytes()).unwrap();
    let a = 0x7f8a40000000;
    let b = 0x7f8a40000400;
    assert_eq!(
        trace.events,
        vec![
            Event::Alloc {
                id: a,
                size: 1024,
                stream: 0
            },
            Event::Alloc {
                id: b,
                size: 2048,
                stream: 0x7f8a38001020
            },
            Event::Free { id: a },
            Event::Free { id: 0x7f8a50000000 },
            Event::Alloc {
                id: a,
                size: 4096,
                stream: 0
            },
            Event::Free { id: b },
        ]
    );
    assert_eq!(trace.stats.source_failed_allocs, 1);
    assert_eq!(trace.stats.unknown_frees, 1);
    assert_eq!(trace.stats.first_unknown_frees[0].location, 6);
}

#[test]
fn gpumem_logging_adaptor_output_reads_back() {
    let event = |action, ptr, bytes| ResourceEvent {
        thread: 1,
        time_ns: 1_700_000_000_123_456_789,
        action,
        ptr,
        bytes,
        stream: StreamId(2),
        tag: None,
    };
    let log = vec![
        event(Action::Allocate, 0x1000, 256),
        event(Action::AllocateFailure, 0, 1 << 50),
        event(Action::Allocate, 0x2000, 512),
        event(Action::Free, 0x1000, 256),
        event(Action::FreeFailure, 0x9999, 1),
    ];
    let mut csv = Vec::new();
    write_csv(&log, &mut csv).unwrap();
    let trace = read_rmm_csv(csv.as_slice()).unwrap();
    assert_eq!(
        trace.events,
        vec![
            Event::Alloc {
                id: 0x1000,
                size: 256,
                stream: 2
            },
            Event::Alloc {
                id: 0x2000,
                size: 512,
                stream: 2
            },
            Event::Free { id: 0x1000 },
        ]
    );
    assert_eq!(trace.stats.source_failed_allocs, 1);
    assert_eq!(trace.stats.skipped, 1);
}

#[test]
fn a_log_without_header_and_with_decimal_pointers_reads() {
    let trace =
        read_rmm_csv("7,0.1,allocate,4096,64,0\r\n7,0.2,free,4096,64,0\r\n".as_bytes()).unwrap();
    assert_eq!(
        trace.events,
        vec![
            Event::Alloc {
                id: 4096,
                size: 64,
                stream: 0
            },
            Event::Free { id: 4096 }
        ]
    );
}

#[test]
fn a_truncated_line_is_an_error_naming_its_line() {
    let (line, message) =
        error_at("Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x10,64,0\n1,0.2,alloc");
    assert_eq!(line, 3);
    assert!(message.contains("truncated"), "{message}");
}

#[test]
fn negative_and_oversized_sizes_are_errors_naming_their_line() {
    let (line, message) = error_at("1,0.1,allocate,0x10,-64,0\n");
    assert_eq!(line, 1);
    assert!(message.contains("negative"), "{message}");
    let (line, message) = error_at("1,0.1,allocate,0x10,18446744073709551616,0\n");
    assert_eq!(line, 1);
    assert_eq!(
        message,
        "size 18446744073709551616 exceeds the 64 PiB limit of a trace; the record is corrupt"
    );
    let (line, message) =
        error_at("1,0.1,allocate,0x10,1,0\n1,0.1,allocate,0x20,18446744073709551615,0\n");
    assert_eq!(line, 2);
    assert!(message.contains("64 PiB"), "{message}");
}

#[test]
fn unknown_actions_and_bad_pointers_are_errors_naming_their_line() {
    assert!(
        error_at("1,0.1,reallocate,0x10,64,0\n")
            .1
            .contains("reallocate")
    );
    assert_eq!(error_at("1,0.1,allocate,0xZZ,64,0\n").0, 1);
    assert_eq!(error_at("Thread,Time,Action\n").0, 1);
}

#[test]
fn a_pointer_allocated_twice_while_live_is_an_error_naming_its_line() {
    let (line, _) = error_at("1,0.1,allocate,0x10,64,0\n1,0.1,allocate,0x10,64,0\n");
    assert_eq!(line, 2);
}

#[test]
fn a_header_with_its_columns_in_another_order_maps_them_by_name() {
    let text = "\u{feff}Action,Size,Stream,Pointer,Time,Thread\n\
                allocate,64,0x7,0x10,0.1,1\n\
                allocate,32,0x0,0x20,0.2,1\n\
                free,64,0x7,0x10,0.3,1\n";
    let trace = read_rmm_csv(text.as_bytes()).unwrap();
    assert_eq!(
        trace.events,
        vec![
            Event::Alloc {
                id: 0x10,
                size: 64,
                stream: 7
            },
            Event::Alloc {
                id: 0x20,
                size: 32,
                stream: 0
            },
            Event::Free { id: 0x10 },
        ]
    );
    // Names in any case; without a Stream column every event is on stream 0.
    let trace = read_rmm_csv("pointer,ACTION,size\n0x10,allocate,8\n".as_bytes()).unwrap();
    assert_eq!(
        trace.events,
        vec![Event::Alloc {
            id: 0x10,
            size: 8,
            stream: 0
        }]
    );
    // A short line names the header's columns; a missing column is named.
    let (line, message) = error_at("Action,Size,Pointer\nallocate,8\n");
    assert_eq!(line, 2);
    assert!(
        message.contains("expected 3 columns (Action,Size,Pointer), found 2"),
        "{message}"
    );
    let (line, message) = error_at("Action,Pointer,Stream\n");
    assert_eq!(line, 1);
    assert!(message.contains("no Size column"), "{message}");
}
