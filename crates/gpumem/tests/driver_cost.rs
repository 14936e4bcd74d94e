//! The driver cost model through the facade: `GPUMEM_CONF driver_cost:`,
//! the modeled driver time in `MemoryStats::driver`, and the device-wide
//! waits in `MemoryStats::waits`, by source.

use gpumem::GpuMemError;
use gpumem::prelude::*;
use gpumem::stats::WaitStats;
use gpumem::storage::{DriverCall, DriverCosts, Latency};

fn sim(conf: &str, streams: usize) -> Device {
    Device::simulated(64 * GIB)
        .streams(streams)
        .conf(conf)
        .unwrap()
        .ignore_env()
        .build()
        .unwrap()
}

#[test]
fn the_three_splits_of_the_a100_figures_are_named_settings() {
    for (name, table) in [
        ("a100", DriverCosts::A100),
        ("a100-per-call", DriverCosts::A100_PER_CALL),
        ("A100-per-byte", DriverCosts::A100_PER_BYTE),
    ] {
        let config = GpumemConfig::from_conf(&format!("driver_cost:{name}")).unwrap();
        assert_eq!(config.driver_costs, table, "{name}");
    }
    // A 200 MiB create: one figure per call, 100 figures per byte.
    let costs = |name: &str| {
        GpumemConfig::from_conf(&format!("driver_cost:{name}"))
            .unwrap()
            .driver_costs
            .ns(DriverCall::Create, 200 * MIB)
    };
    assert_eq!(costs("a100-per-call"), 193_320);
    assert_eq!(costs("a100-per-byte"), 100 * 193_320);
    assert!(costs("a100-per-call") < costs("a100") && costs("a100") < costs("a100-per-byte"));
    let err = GpumemConfig::from_conf("driver_cost:a100-per-granule").unwrap_err();
    assert!(err.to_string().contains("a100-per-call"), "{err}");
}

#[test]
fn driver_cost_entries_override_the_a100_table_and_other_keys_still_apply() {
    let config = GpumemConfig::from_conf(
        "budget:8GiB,driver_cost:create=20us+86us/2MiB,map=1.2us,streams:2",
    )
    .unwrap();
    let mut expected = DriverCosts::A100;
    expected.set(DriverCall::Create, Latency::sized(20_000, 86_000));
    expected.set(DriverCall::Map, Latency::fixed(1_200));
    assert_eq!(config.driver_costs, expected);
    assert_eq!(config.budget, Budget::Bytes(8 * GIB));
    assert_eq!(config.streams, 2);
    assert_eq!(
        GpumemConfig::from_conf("driver_cost:zero")
            .unwrap()
            .driver_costs,
        DriverCosts::ZERO
    );
    let whole = format!("driver_cost:{}", DriverCosts::A100);
    assert_eq!(
        GpumemConfig::from_conf(&whole).unwrap().driver_costs,
        DriverCosts::A100,
        "the table's own text form is a valid value"
    );
}

#[test]
fn a_bad_driver_cost_entry_names_it_and_lists_every_key() {
    let err = GpumemConfig::from_conf("driver_cost:map=1us,crate=2us").unwrap_err();
    let GpuMemError::BadConfValue {
        key,
        value,
        expected,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*key, value.as_str()), ("driver_cost", "crate=2us"));
    for call in DriverCall::ALL {
        assert!(expected.contains(call.key()), "{expected} lacks {call:?}");
    }
    assert!(GpumemConfig::from_conf("driver_cost:map=soon").is_err());
}

#[test]
fn every_chunk_call_of_an_arena_is_charged_its_modeled_latency() {
    let device = sim("", 1);
    let s = device.default_stream();
    let a = s.reserve(64 * MIB).unwrap();
    let stats = device.stats();
    let (d, c) = (stats.driver, stats.chunks);
    assert!(c.creates > 0 && c.maps > 0);
    assert_eq!(d.calls(DriverCall::Create), c.creates);
    assert_eq!(d.calls(DriverCall::Map), c.maps);
    assert_eq!(
        d.calls(DriverCall::SetAccess),
        c.maps,
        "a map is map + set-access"
    );
    // Nothing released yet: the physical bytes are every create's bytes
    // (whole granules), so the creates cost their fixed parts plus one
    // per-granule part per 2 MiB, however the engine sized its chunks.
    let vm = device.memory_report().virtual_memory.unwrap();
    let create = DriverCosts::A100.latency(DriverCall::Create);
    assert_eq!(
        d.tally(DriverCall::Create).ns,
        c.creates * create.fixed_ns + vm.physical_bytes / (2 * MIB) * create.per_granule_ns
    );
    assert_eq!(vm.driver, d, "VirtualMemoryStats carries the same meter");
    drop(a);
}

#[test]
fn the_zero_table_counts_calls_and_charges_no_time() {
    let device = sim("driver_cost:zero", 1);
    let _a = device.default_stream().reserve(16 * MIB).unwrap();
    let d = device.stats().driver;
    assert!(d.total_calls() > 0);
    assert_eq!(d.total_ns(), 0);
}

#[test]
fn an_explicit_synchronize_is_one_device_wide_wait_of_a_stream_wait_per_stream() {
    let device = sim("", 3);
    assert_eq!(device.stats().waits, WaitStats::default());
    device.synchronize().unwrap();
    let w = device.stats().waits;
    assert_eq!((w.synchronize, w.device_waits), (1, 1));
    assert_eq!(w.stream_waits, 3);
    assert_eq!(device.stats().driver.stream_waits(), 3);
}

#[test]
fn sleep_counts_its_finish_and_a_reclaim_with_nothing_to_move_waits_for_nothing() {
    let device = sim("", 2);
    let s = device.default_stream();
    let a = s.reserve(8 * MIB).unwrap();
    device.sleep(SleepContents::Discard).unwrap();
    device.wake().unwrap();
    assert_eq!(device.stats().waits.sleep, 1);
    drop(a);
    device.reclaim().unwrap();
    let w = device.stats().waits;
    assert_eq!(
        w.relocation, 0,
        "arenas have no outdated page to move: {w:?}"
    );
    assert_eq!(w.oom_retry, 0);
    assert_eq!(
        w.device_waits,
        w.synchronize + w.sleep + w.relocation + w.oom_retry + w.backend
    );
}

#[test]
fn no_unmap_is_a_backend_device_wait() {
    let device = sim("", 1);
    let s = device.default_stream();
    drop(s.reserve(256 * MIB).unwrap());
    s.cleanup();
    let stats = device.stats();
    assert!(stats.chunks.unmaps > 0, "cleanup gave chunks back");
    let unmap_calls = stats.driver.calls(DriverCall::Unmap);
    assert_eq!(unmap_calls, stats.chunks.unmaps);
    let w = stats.waits;
    assert_eq!(w.backend, 0, "{w:?}");
    assert_eq!(w.backend, stats.driver.device_waits());
}
