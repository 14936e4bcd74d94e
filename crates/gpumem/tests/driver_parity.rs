//! The cost model's parity with the driver: one workload on the simulated
//! device and on CUDA over the stand-in driver; the calls the stand-in
//! counted, per kind, are the calls `DriverCostResource` charged on the
//! simulated path (and on the CUDA path's own meter). Skips unless the
//! stand-in is the loaded driver (`cargo xtask cuda-standin`).

mod common;

use common::standin;
use gpumem::prelude::*;
use gpumem::storage::{DriverCall, DriverTime};

/// The stand-in's entry point for each call kind the model charges: the
/// modeled driver function, under the `_v2` name cudarc binds where there
/// is one. (`cuMemFree`'s own wait for the device is counted apart below.)
fn entry(call: DriverCall) -> &'static str {
    match call {
        DriverCall::Alloc => "cuMemAlloc_v2",
        DriverCall::Free => "cuMemFree_v2",
        other => other.driver_function(),
    }
}

/// Reservations of four sizes on two streams (arena slices, whole chunks,
/// pages), a cross-stream use, frees, a synchronize and two reclaims.
fn workload(device: &Device) {
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let sizes = [4 * KIB, 300 * KIB, 3 * MIB, 20 * MIB];
    let mut held = Vec::new();
    for i in 0..24 {
        let size = sizes[i % sizes.len()];
        held.push(s0.reserve(size).unwrap());
        if i % 3 == 0 {
            held.push(s1.reserve(size + KIB).unwrap());
        }
    }
    s1.record_use(&held[0]).unwrap();
    let rest = held.split_off(held.len() / 2);
    drop(held);
    device.synchronize().unwrap();
    device.reclaim().unwrap();
    drop(rest);
    device.synchronize().unwrap();
    device.reclaim().unwrap();
}

fn built(builder: gpumem::device::DeviceBuilder) -> Device {
    builder.streams(2).ignore_env().build().unwrap()
}

/// The stand-in's count for `call`: `cuMemFree` waits for the device as
/// it frees, so the device synchronizes the model charges for it are its.
fn counted(call: DriverCall) -> u64 {
    let n = standin::calls(entry(call)).unwrap();
    match call {
        DriverCall::DeviceSynchronize => n + standin::calls("cuMemFree_v2").unwrap(),
        // A host wait for one stream's work, through its event.
        DriverCall::StreamSynchronize => n + standin::calls("cuEventSynchronize").unwrap(),
        _ => n,
    }
}

/// Each kind where the stand-in, the simulated device's meter (when
/// given) and the CUDA device's own meter disagree.
fn differences(
    sim: Option<&DriverTime>,
    cuda: &DriverTime,
    driver: &[(DriverCall, u64)],
) -> Vec<String> {
    let mut differ = Vec::new();
    for &(call, driver) in driver {
        let (sim, meter) = (sim.map_or(driver, |s| s.calls(call)), cuda.calls(call));
        println!("{call:?}: stand-in {driver}, simulated {sim}, CUDA meter {meter}");
        if sim != driver || meter != driver {
            differ.push(format!(
                "{call:?}: stand-in {driver}, simulated {sim}, CUDA meter {meter}"
            ));
        }
    }
    differ
}

/// The tests switch the stand-in's memory pools: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn the_calls_the_stand_in_counts_are_the_calls_the_cost_model_charges_per_kind() {
    if !standin::is_standin() {
        println!(
            "skipping: the stand-in CUDA driver is not the loaded driver (cargo xtask cuda-standin)"
        );
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut differ = Vec::new();
    for (layout, pools) in [("arenas", None), ("paged pools", Some(common::growable()))] {
        let with = |b: gpumem::device::DeviceBuilder| match &pools {
            Some(p) => b.pools(p.clone()),
            None => b,
        };
        let sim = built(with(Device::simulated(8 * GIB)));
        workload(&sim);
        let charged = sim.stats().driver;
        drop(sim);
        let cuda = built(with(Device::cuda(0).unwrap()));
        standin::reset_calls();
        workload(&cuda);
        let metered = cuda.stats().driver;
        let driver: Vec<(DriverCall, u64)> =
            DriverCall::ALL.iter().map(|&c| (c, counted(c))).collect();
        drop(cuda);
        println!("{layout}:");
        let found = differences(Some(&charged), &metered, &driver);
        differ.extend(found.into_iter().map(|d| format!("{layout}: {d}")));
        assert!(charged.calls(DriverCall::Create) + charged.calls(DriverCall::AllocAsync) > 0);
    }
    assert!(differ.is_empty(), "per kind:\n{}", differ.join("\n"));
}

/// A device without memory pools allocates pages with `cuMemAlloc` /
/// `cuMemFree` (`CudaAllocMode::Sync`); its meter must charge those, not
/// the stream-ordered pair.
#[test]
fn on_a_device_without_memory_pools_the_meter_charges_the_synchronous_calls_made() {
    if !standin::is_standin() {
        println!(
            "skipping: the stand-in CUDA driver is not the loaded driver (cargo xtask cuda-standin)"
        );
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    standin::set_memory_pools(false);
    let builder = Device::cuda(0).unwrap().pools(common::growable());
    standin::set_memory_pools(true);
    let cuda = built(builder);
    standin::reset_calls();
    workload(&cuda);
    let metered = cuda.stats().driver;
    let driver: Vec<(DriverCall, u64)> = DriverCall::ALL.iter().map(|&c| (c, counted(c))).collect();
    drop(cuda);
    let differ = differences(None, &metered, &driver);
    assert!(
        standin::calls("cuMemAlloc_v2").unwrap() > 0,
        "pages come from cuMemAlloc"
    );
    assert!(differ.is_empty(), "per kind:\n{}", differ.join("\n"));
}
