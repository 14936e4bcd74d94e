use mem_storage::{
    DeviceResource, FaultInjection, FaultPlan, SimulatedResource, StreamId, TrackingResource,
};

#[test]
fn outstanding_allocations_are_listed_oldest_first_until_freed() {
    let tracking = TrackingResource::new(SimulatedResource::new(1 << 30));
    let a = tracking.allocate(100, StreamId(1)).unwrap();
    let b = tracking.allocate(200, StreamId(2)).unwrap();
    let c = tracking.allocate(300, StreamId(1)).unwrap();
    tracking.deallocate(b, 200, StreamId(2)).unwrap();
    let left = tracking.outstanding();
    assert_eq!(
        left.iter()
            .map(|o| (o.ptr, o.bytes, o.sequence))
            .collect::<Vec<_>>(),
        [(a, 100, 1), (c, 300, 3)]
    );
    assert_eq!(left[1].stream, StreamId(1));
    assert_eq!(
        (tracking.outstanding_count(), tracking.outstanding_bytes()),
        (2, 400)
    );
    let report = tracking.leak_report();
    assert_eq!(report.bytes, 400);
    let text = report.to_string();
    assert!(
        text.starts_with("2 outstanding allocations, 400 bytes"),
        "{text}"
    );
    assert!(
        text.contains(&format!("#3 {c} (300 bytes) on stream 1")),
        "{text}"
    );
    tracking.deallocate(a, 100, StreamId(1)).unwrap();
    tracking.deallocate(c, 300, StreamId(1)).unwrap();
    assert!(tracking.leak_report().is_empty());
    assert_eq!(
        tracking.leak_report().to_string(),
        "no outstanding allocations\n"
    );
}

#[test]
fn a_refused_free_leaves_the_allocation_outstanding() {
    let tracking = TrackingResource::new(FaultInjection::new(SimulatedResource::new(1 << 30)));
    let a = tracking.allocate(64, StreamId(0)).unwrap();
    tracking.inner().set_plan(FaultPlan::FromNth(1));
    tracking.deallocate(a, 64, StreamId(0)).unwrap_err();
    assert_eq!(tracking.outstanding_count(), 1);
    tracking.inner().disarm();
    tracking.deallocate(a, 64, StreamId(0)).unwrap();
    assert_eq!(tracking.outstanding_count(), 0);
}

#[test]
fn backtraces_are_kept_when_asked_for() {
    let tracking = TrackingResource::with_backtraces(SimulatedResource::new(1 << 30));
    let a = tracking.allocate(64, StreamId(0)).unwrap();
    assert!(tracking.outstanding()[0].backtrace.is_some());
    tracking.deallocate(a, 64, StreamId(0)).unwrap();
    let plain = TrackingResource::new(SimulatedResource::new(1 << 30));
    let b = plain.allocate(64, StreamId(0)).unwrap();
    assert!(plain.outstanding()[0].backtrace.is_none());
    plain.deallocate(b, 64, StreamId(0)).unwrap();
}
