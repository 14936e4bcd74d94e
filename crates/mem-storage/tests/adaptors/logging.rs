use mem_storage::units::GIB;
use mem_storage::{
    Action, CSV_HEADER, DeviceResource, FaultInjection, FaultPlan, HostResource, LoggingResource,
    SimulatedResource, StorageError, StreamId,
};

#[test]
fn every_allocate_free_and_failure_is_an_event_in_call_order() {
    let log = LoggingResource::new(SimulatedResource::new(GIB));
    let a = log.allocate(4096, StreamId(3)).unwrap();
    let refused = log.allocate(2 * GIB, StreamId(3)).unwrap_err();
    assert!(matches!(refused, StorageError::TooBig { .. }));
    log.deallocate(a, 4096, StreamId(3)).unwrap();
    log.deallocate(a, 4096, StreamId(3)).unwrap_err();
    let events = log.events();
    let actions: Vec<_> = events.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            Action::Allocate,
            Action::AllocateFailure,
            Action::Free,
            Action::FreeFailure
        ]
    );
    assert_eq!(
        (events[0].ptr, events[0].bytes, events[0].stream),
        (a.0, 4096, StreamId(3))
    );
    assert_eq!((events[1].ptr, events[1].bytes), (0, 2 * GIB));
    assert!(
        events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns),
        "times go backwards"
    );
    assert!(events.iter().all(|e| e.thread == events[0].thread));
}

#[test]
fn the_csv_has_rmm_columns_and_one_row_per_event() {
    let log = LoggingResource::new(HostResource::with_capacity(GIB));
    let p = log.allocate(1000, StreamId(1)).unwrap();
    log.deallocate(p, 1000, StreamId(1)).unwrap();
    let csv = log.to_csv();
    let lines: Vec<_> = csv.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert_eq!(lines.len(), 3);
    let row: Vec<_> = lines[1].split(',').collect();
    assert_eq!(row.len(), 6);
    assert_eq!(row[2], "allocate");
    assert_eq!(row[3], format!("{:#x}", p.0));
    assert_eq!((row[4], row[5]), ("1000", "1"));
    let (secs, nanos) = row[1].split_once('.').unwrap();
    assert!(
        secs.parse::<u64>().unwrap() > 1_600_000_000,
        "time is seconds since the epoch"
    );
    assert_eq!(nanos.len(), 9);
    assert!(lines[2].contains(",free,"));
}

#[test]
fn the_trace_names_allocations_by_id_and_leaves_failures_out() {
    let log = LoggingResource::new(SimulatedResource::new(GIB));
    let a = log.allocate(4096, StreamId(0)).unwrap();
    let b = log.allocate(512, StreamId(2)).unwrap();
    log.allocate(2 * GIB, StreamId(0)).unwrap_err();
    log.deallocate(a, 4096, StreamId(0)).unwrap();
    log.deallocate(b, 512, StreamId(2)).unwrap();
    let mut out = Vec::new();
    let unmatched = log.write_trace(&mut out).unwrap();
    assert_eq!(unmatched, 0);
    let text = String::from_utf8(out).unwrap();
    let expected = [
        r#"{"format":"gpumem-trace","version":1}"#,
        r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#,
        r#"{"op":"alloc","id":2,"size":512,"stream":2}"#,
        r#"{"op":"free","id":1}"#,
        r#"{"op":"free","id":2}"#,
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn a_free_of_memory_allocated_before_logging_is_counted_not_traced() {
    let sim = SimulatedResource::new(GIB);
    let early = sim.allocate(64, StreamId(0)).unwrap();
    let log = LoggingResource::new(&sim);
    log.deallocate(early, 64, StreamId(0)).unwrap();
    let mut out = Vec::new();
    assert_eq!(log.write_trace(&mut out).unwrap(), 1);
    assert_eq!(
        String::from_utf8(out).unwrap().lines().count(),
        1,
        "only the header"
    );
}

#[test]
fn drain_empties_the_log_and_byte_movement_is_not_logged() {
    let log = LoggingResource::new(FaultInjection::new(HostResource::with_capacity(GIB)));
    let p = log.allocate(64, StreamId(0)).unwrap();
    log.write(p, &[7; 64], StreamId(0)).unwrap();
    let mut back = [0; 64];
    log.read(p, &mut back, StreamId(0)).unwrap();
    assert_eq!(back, [7; 64], "byte movement reaches the inner resource");
    assert_eq!(log.drain().len(), 1);
    assert!(log.events().is_empty());
    log.inner().set_plan(FaultPlan::FromNth(1));
    assert!(log.deallocate(p, 64, StreamId(0)).is_err());
    assert_eq!(log.events()[0].action, Action::FreeFailure);
    log.inner().disarm();
    log.deallocate(p, 64, StreamId(0)).unwrap();
}

#[test]
fn threads_get_distinct_numbers() {
    let log = LoggingResource::new(SimulatedResource::new(GIB));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    let p = log.allocate(256, StreamId(0)).unwrap();
                    log.deallocate(p, 256, StreamId(0)).unwrap();
                }
            });
        }
    });
    let events = log.events();
    assert_eq!(events.len(), 400);
    let mut threads: Vec<_> = events.iter().map(|e| e.thread).collect();
    threads.sort();
    threads.dedup();
    assert_eq!(threads.len(), 4);
    assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
}

#[test]
fn allocations_made_inside_a_tag_scope_carry_the_tag_into_the_trace() {
    let log = LoggingResource::new(SimulatedResource::new(GIB));
    let plain = log.allocate(64, StreamId(0)).unwrap();
    let tagged = {
        let _t = mem_storage::tag_scope("kv \"cache\"");
        log.allocate(128, StreamId(0)).unwrap()
    };
    log.deallocate(tagged, 128, StreamId(0)).unwrap();
    log.deallocate(plain, 64, StreamId(0)).unwrap();
    let events = log.events();
    assert_eq!(events[1].tag, Some("kv \"cache\""));
    assert_eq!(events[2].tag, None, "frees carry no tag");
    let mut out = Vec::new();
    log.write_trace(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines[1], r#"{"op":"alloc","id":1,"size":64,"stream":0}"#);
    assert_eq!(
        lines[2],
        r#"{"op":"alloc","id":2,"size":128,"stream":0,"tag":"kv \"cache\""}"#
    );
}
