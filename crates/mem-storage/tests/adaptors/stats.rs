use mem_storage::{
    DeviceResource, FaultInjection, FaultPlan, Operation, SimulatedResource, StatsResource,
    StreamId,
};

const S: StreamId = StreamId::DEFAULT;

#[test]
fn current_peak_and_total_follow_allocations_and_frees() {
    let stats = StatsResource::new(SimulatedResource::new(1 << 30));
    let a = stats.allocate(1000, S).unwrap();
    let b = stats.allocate(3000, S).unwrap();
    stats.deallocate(a, 1000, S).unwrap();
    let c = stats.allocate(500, S).unwrap();
    let s = stats.stats();
    assert_eq!(
        (s.current_bytes, s.peak_bytes, s.total_bytes),
        (3500, 4000, 4500)
    );
    assert_eq!((s.current_count, s.peak_count, s.total_count), (2, 2, 3));
    assert_eq!(stats.allocation_count(), 3);
    stats.reset_peaks();
    let s = stats.stats();
    assert_eq!(
        (s.peak_bytes, s.peak_count),
        (3500, 2),
        "a reset lowers peaks to the current level"
    );
    stats.deallocate(b, 3000, S).unwrap();
    stats.deallocate(c, 500, S).unwrap();
    assert_eq!(stats.stats().current_bytes, 0);
    assert_eq!(stats.stats().peak_bytes, 3500);
}

#[test]
fn refusals_are_counted_apart_and_move_no_bytes() {
    let faulty =
        FaultInjection::new(SimulatedResource::new(1 << 20)).counting(&[Operation::Deallocate]);
    let stats = StatsResource::new(faulty);
    stats.allocate(2 << 20, S).unwrap_err();
    let a = stats.allocate(100, S).unwrap();
    stats.inner().set_plan(FaultPlan::FromNth(1));
    stats.deallocate(a, 100, S).unwrap_err();
    let s = stats.stats();
    assert_eq!((s.failed_allocations, s.failed_frees), (1, 1));
    assert_eq!(
        (s.current_bytes, s.current_count, s.total_count),
        (100, 1, 1),
        "a failed free stays counted"
    );
}

#[test]
fn counters_are_exact_under_concurrent_traffic() {
    let stats = StatsResource::new(SimulatedResource::new(1 << 40));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let stats = &stats;
            s.spawn(move || {
                for i in 0..500u64 {
                    let bytes = 256 * (1 + (t + i) % 7);
                    let p = stats.allocate(bytes, S).unwrap();
                    stats.deallocate(p, bytes, S).unwrap();
                }
            });
        }
    });
    let s = stats.stats();
    assert_eq!(
        (s.current_bytes, s.current_count, s.total_count),
        (0, 0, 2000)
    );
    assert!(
        s.peak_count >= 1 && s.peak_count <= 4,
        "peak count {}",
        s.peak_count
    );
}
