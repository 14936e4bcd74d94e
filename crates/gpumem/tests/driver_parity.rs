//! The cost model's parity with the driver: one workload on the simulated
//! device and on CUDA over the stand-in driver; the calls the stand-in
//! counted, per kind, are the calls `DriverCostResource` charged on the
//! simulated path (and on the CUDA path's own meter). Skips unless the
//! stand-in is the loaded driver (`cargo xtask cuda-standin`).

mod common;

use common::standin;
use gpumem::prelude::*;
use gpumem::storage::DriverCall;

/// The stand-in's entry point for each call kind the model charges.
fn entry(call: DriverCall) -> &'static str {
    match call {
        DriverCall::Create => "cuMemCreate",
        DriverCall::Map => "cuMemMap",
        DriverCall::SetAccess => "cuMemSetAccess",
        DriverCall::Unmap => "cuMemUnmap",
        DriverCall::Release => "cuMemRelease",
        DriverCall::AddressReserve => "cuMemAddressReserve",
        DriverCall::AddressFree => "cuMemAddressFree",
        DriverCall::Alloc => "cuMemAlloc_v2",
        DriverCall::Free => "cuMemFree_v2",
        DriverCall::AllocAsync => "cuMemAllocAsync",
        DriverCall::FreeAsync => "cuMemFreeAsync",
        DriverCall::StreamSynchronize => "cuStreamSynchronize",
        DriverCall::DeviceSynchronize => "cuCtxSynchronize",
        DriverCall::EventRecord => "cuEventRecord",
        DriverCall::EventQuery => "cuEventQuery",
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

#[test]
fn the_calls_the_stand_in_counts_are_the_calls_the_cost_model_charges_per_kind() {
    if !standin::is_standin() {
        println!(
            "skipping: the stand-in CUDA driver is not the loaded driver (cargo xtask cuda-standin)"
        );
        return;
    }
    let sim = built(Device::simulated(8 * GIB));
    workload(&sim);
    let charged = sim.stats().driver;
    drop(sim);

    let cuda = built(Device::cuda(0).unwrap());
    standin::reset_calls();
    workload(&cuda);
    let metered = cuda.stats().driver;
    let counted: Vec<(DriverCall, u64)> = DriverCall::ALL
        .iter()
        .map(|&c| (c, standin::calls(entry(c)).unwrap()))
        .collect();
    drop(cuda);

    let mut differ = Vec::new();
    for (call, driver) in counted {
        let (sim, meter) = (charged.calls(call), metered.calls(call));
        println!("{call:?}: stand-in {driver}, simulated {sim}, CUDA meter {meter}");
        if sim != driver || meter != driver {
            differ.push(format!(
                "{call:?}: stand-in {driver}, simulated {sim}, CUDA meter {meter}"
            ));
        }
    }
    assert!(differ.is_empty(), "per kind:\n{}", differ.join("\n"));
    assert!(
        charged.calls(DriverCall::Map) > 0,
        "the workload maps chunks"
    );
}
