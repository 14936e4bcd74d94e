//! The driver cost model: the table, its text form, and the adaptor that
//! charges what each call costs.

use std::sync::Arc;

use mem_storage::{
    DeviceResource, DriverCall, DriverCostResource, DriverCosts, DriverMeter, Latency, PageCalls,
    SimulatedResource, SimulatedVirtualMemory, StorageError, StreamId, VirtualMemory,
};

use mem_storage::units::MIB;

fn metered_vm() -> (DriverCostResource<SimulatedVirtualMemory>, Arc<DriverMeter>) {
    let meter = Arc::new(DriverMeter::new(DriverCosts::A100));
    let vm = DriverCostResource::new(SimulatedVirtualMemory::new(1 << 40), meter.clone());
    (vm, meter)
}

#[test]
fn a_two_mib_chunk_costs_the_published_a100_figures() {
    let costs = DriverCosts::A100;
    assert_eq!(costs.ns(DriverCall::Create, 2 * MIB), 193_320);
    assert_eq!(costs.ns(DriverCall::Map, 2 * MIB), 1_450);
    assert_eq!(costs.ns(DriverCall::SetAccess, 2 * MIB), 35_990);
    assert_eq!(costs.ns(DriverCall::Unmap, 2 * MIB), 25_630);
}

#[test]
fn create_scales_with_size_by_granule() {
    let create = DriverCosts::A100.latency(DriverCall::Create);
    let one = create.ns(2 * MIB);
    let hundred = create.ns(200 * MIB);
    assert_eq!(hundred, create.fixed_ns + 100 * create.per_granule_ns);
    assert!(hundred < 100 * one, "one big create saves 99 fixed parts");
    // A size that starts a granule pays the whole granule.
    assert_eq!(
        create.ns(2 * MIB + 1),
        create.fixed_ns + 2 * create.per_granule_ns
    );
}

#[test]
fn a_chunk_lifecycle_is_charged_call_for_call() {
    let (vm, meter) = metered_vm();
    let range = vm.reserve_range(8 * MIB).unwrap();
    let chunk = vm.create_chunk(2 * MIB).unwrap();
    vm.map(range.id, 0, chunk).unwrap();
    vm.unmap(range.id, 0, 2 * MIB).unwrap();
    vm.release_chunk(chunk).unwrap();
    vm.free_range(range.id).unwrap();

    let t = meter.snapshot();
    let costs = DriverCosts::A100;
    for call in [
        DriverCall::AddressReserve,
        DriverCall::Create,
        DriverCall::Map,
        DriverCall::SetAccess,
        DriverCall::Unmap,
        DriverCall::Release,
        DriverCall::AddressFree,
    ] {
        assert_eq!(t.calls(call), 1, "{call:?}");
    }
    assert_eq!(t.device_waits(), 0, "an unmap waits for nothing");
    let expected = costs.ns(DriverCall::AddressReserve, 8 * MIB)
        + costs.ns(DriverCall::Create, 2 * MIB)
        + costs.ns(DriverCall::Map, 2 * MIB)
        + costs.ns(DriverCall::SetAccess, 2 * MIB)
        + costs.ns(DriverCall::Unmap, 2 * MIB)
        + costs.ns(DriverCall::Release, 2 * MIB)
        + costs.ns(DriverCall::AddressFree, 0);
    assert_eq!(t.total_ns(), expected);
    assert_eq!(vm.vm_stats().driver, t, "vm_stats carries the meter");
}

#[test]
fn one_unmap_of_three_chunks_is_three_driver_unmaps_and_no_wait() {
    let (vm, meter) = metered_vm();
    let range = vm.reserve_range(6 * MIB).unwrap();
    for i in 0..3 {
        let chunk = vm.create_chunk(2 * MIB).unwrap();
        vm.map(range.id, i * 2 * MIB, chunk).unwrap();
    }
    meter.reset();
    vm.unmap(range.id, 0, 6 * MIB).unwrap();
    let t = meter.snapshot();
    assert_eq!(t.calls(DriverCall::Unmap), 3);
    assert_eq!(t.tally(DriverCall::Unmap).ns, 3 * 25_630);
    assert_eq!(t.device_waits(), 0);
    assert_eq!(t.calls(DriverCall::DeviceSynchronize), 0);
}

#[test]
fn refused_calls_are_not_charged() {
    let (vm, meter) = metered_vm();
    let range = vm.reserve_range(2 * MIB).unwrap();
    meter.reset();
    assert!(vm.map(range.id, 0, mem_storage::ChunkId(999)).is_err());
    assert!(vm.create_chunk(MIB).is_err(), "not granular");
    assert_eq!(meter.snapshot().total_calls(), 0);
}

#[test]
fn pages_are_charged_as_stream_ordered_or_sync_calls() {
    let meter = Arc::new(DriverMeter::new(DriverCosts::A100));
    let async_pages = DriverCostResource::new(SimulatedResource::new(1 << 30), meter.clone());
    let ptr = async_pages.allocate(4 * MIB, StreamId::DEFAULT).unwrap();
    async_pages
        .deallocate(ptr, 4 * MIB, StreamId::DEFAULT)
        .unwrap();
    async_pages.synchronize(StreamId::DEFAULT).unwrap();
    let t = meter.snapshot();
    assert_eq!(t.calls(DriverCall::AllocAsync), 1);
    assert_eq!(t.calls(DriverCall::FreeAsync), 1);
    assert_eq!(t.stream_waits(), 1);
    assert_eq!(t.device_waits(), 0);

    let meter = Arc::new(DriverMeter::new(DriverCosts::A100));
    let sync_pages = DriverCostResource::new(SimulatedResource::new(1 << 30), meter.clone())
        .with_page_calls(PageCalls::Sync);
    let ptr = sync_pages.allocate(4 * MIB, StreamId::DEFAULT).unwrap();
    sync_pages
        .deallocate(ptr, 4 * MIB, StreamId::DEFAULT)
        .unwrap();
    let t = meter.snapshot();
    assert_eq!(t.calls(DriverCall::Alloc), 1);
    assert_eq!(t.calls(DriverCall::Free), 1);
    assert_eq!(t.device_waits(), 1, "cuMemFree waits for the device");
    let costs = DriverCosts::A100;
    assert_eq!(
        t.total_ns(),
        costs.ns(DriverCall::Alloc, 4 * MIB)
            + costs.ns(DriverCall::Free, 4 * MIB)
            + costs.ns(DriverCall::DeviceSynchronize, 0)
    );
}

/// What a growth of the default pool by `bytes` costs under `costs`:
/// `cuMemAlloc`'s parts.
fn growth_ns(costs: &DriverCosts, bytes: u64) -> u64 {
    [DriverCall::Create, DriverCall::Map, DriverCall::SetAccess]
        .iter()
        .map(|&c| costs.ns(c, bytes))
        .sum()
}

#[test]
fn small_stream_ordered_pages_share_one_pool_growth() {
    let meter = Arc::new(DriverMeter::new(DriverCosts::A100));
    let pages = DriverCostResource::new(SimulatedResource::new(1 << 30), meter.clone());
    for _ in 0..38 {
        pages.allocate(9 * 1024, StreamId::DEFAULT).unwrap();
    }
    let costs = DriverCosts::A100;
    let t = meter.snapshot().tally(DriverCall::AllocAsync);
    assert_eq!(t.calls, 38);
    assert_eq!(
        t.ns,
        38 * costs.ns(DriverCall::AllocAsync, 9 * 1024) + growth_ns(&costs, 2 * MIB),
        "one 2 MiB growth serves all 38"
    );
    assert_eq!(meter.pool_reserved(), 2 * MIB);
}

#[test]
fn the_pool_keeps_freed_pages_until_a_synchronize_trims_it() {
    for costs in [
        DriverCosts::A100,
        DriverCosts::A100_PER_CALL,
        DriverCosts::A100_PER_BYTE,
    ] {
        let meter = Arc::new(DriverMeter::new(costs));
        let pages = DriverCostResource::new(SimulatedResource::new(1 << 30), meter.clone());
        let alloc = |meter: &DriverMeter| meter.snapshot().tally(DriverCall::AllocAsync).ns;
        let ptr = pages.allocate(20 * MIB, StreamId::DEFAULT).unwrap();
        let first = alloc(&meter);
        assert_eq!(first, 2_420 + growth_ns(&costs, 20 * MIB));
        pages.deallocate(ptr, 20 * MIB, StreamId::DEFAULT).unwrap();
        let ptr = pages.allocate(20 * MIB, StreamId::DEFAULT).unwrap();
        assert_eq!(alloc(&meter) - first, 2_420, "served by what the pool kept");
        pages.deallocate(ptr, 20 * MIB, StreamId::DEFAULT).unwrap();

        pages.synchronize(StreamId::DEFAULT).unwrap();
        let sync = meter.snapshot().tally(DriverCall::StreamSynchronize);
        let trim = costs.ns(DriverCall::Unmap, 20 * MIB) + costs.ns(DriverCall::Release, 20 * MIB);
        assert_eq!(
            (sync.calls, sync.ns),
            (1, 5_000 + trim),
            "the trim is the sync's"
        );
        assert_eq!(meter.pool_reserved(), 0, "release threshold 0");
        let before = alloc(&meter);
        pages.allocate(20 * MIB, StreamId::DEFAULT).unwrap();
        assert_eq!(alloc(&meter) - before, first, "made again after the trim");
    }
}

#[test]
fn the_zero_table_counts_calls_and_charges_nothing() {
    let meter = Arc::new(DriverMeter::new(DriverCosts::ZERO));
    let vm = DriverCostResource::new(SimulatedVirtualMemory::new(1 << 30), meter.clone());
    vm.create_chunk(2 * MIB).unwrap();
    let t = meter.snapshot();
    assert_eq!((t.calls(DriverCall::Create), t.total_ns()), (1, 0));
}

#[test]
fn the_table_reads_back_what_it_writes() {
    let text = DriverCosts::A100.to_string();
    assert!(
        text.starts_with("create=96.66us+96.66us/2MiB,map=1.45us,"),
        "{text}"
    );
    let mut read = DriverCosts::ZERO;
    read.apply_entries(&text).unwrap();
    assert_eq!(read, DriverCosts::A100);
}

#[test]
fn latencies_parse_with_any_size_unit() {
    assert_eq!(Latency::parse("1.45us"), Some(Latency::fixed(1_450)));
    assert_eq!(
        Latency::parse("20us+86us/2MiB"),
        Some(Latency::sized(20_000, 86_000))
    );
    assert_eq!(
        Latency::parse("500ns+40ns/KiB"),
        Some(Latency::sized(500, 40 * 2048))
    );
    assert_eq!(
        Latency::parse("1ms+1ms/GiB"),
        Some(Latency::sized(1_000_000, 1_000_000 / 512))
    );
    for bad in [
        "",
        "12",
        "1.5",
        "-1us",
        "1us+",
        "1us+2us",
        "1us+2us/0MiB",
        "xus",
    ] {
        assert_eq!(Latency::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn a_latency_reads_its_size_as_every_byte_size_is_read() {
    // The one byte parser: any case, decimal counts; a bare unit is one of it.
    let per_2mib = Some(Latency::sized(20_000, 86_000));
    assert_eq!(Latency::parse("20us+86us/2mib"), per_2mib);
    assert_eq!(Latency::parse("20us+43us/MiB"), per_2mib);
    assert_eq!(Latency::parse("20us+64.5us/1.5MiB"), per_2mib);
    assert_eq!(Latency::parse("20us+86us/2097152"), per_2mib);
    assert_eq!(Latency::parse("20us+86us/"), None);
    assert_eq!(Latency::parse("20us+86us/2 parsecs"), None);
}

#[test]
fn a_bad_entry_says_what_is_valid_and_changes_nothing() {
    let mut costs = DriverCosts::A100;
    let err = costs.apply_entries("map=2us,crate=1us").unwrap_err();
    let StorageError::BadDriverCost { entry, expected } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(entry, "crate=1us");
    assert!(expected.contains("set_access") && expected.contains("event_query"));
    assert_eq!(costs, DriverCosts::A100, "nothing applied");

    let err = costs.apply_entry("map=fast").unwrap_err();
    assert!(err.to_string().contains("1.45us"), "{err}");
    costs.apply_entry("map=2us").unwrap();
    assert_eq!(costs.ns(DriverCall::Map, 0), 2_000);
}
