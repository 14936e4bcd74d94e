//! The cost model's parity with the driver on the replayed workloads:
//! each workload replayed on the simulated device and on CUDA over the
//! stand-in driver; per driver function, the calls the stand-in counted
//! equal the calls `DriverCostResource` charged on the simulated replay.
//! Skips unless the stand-in is the loaded driver (`cargo xtask
//! cuda-standin` puts it on the loader path).

use std::collections::BTreeMap;

use gpumem::Device;
use gpumem::device::cudarc::driver::sys;
use gpumem::storage::DriverCall;
use gpumem::storage::units::GIB;
use gpumem_replay::replay::{Program, ReplayOptions, replay};
use gpumem_replay::setup::{BackendKind, PoolSettings};
use gpumem_replay::workload::{Workload, WorkloadSpec};

/// The stand-in's count of successful calls of `name`; `None` on a real
/// driver (which has no such export) or with no driver.
fn standin_calls(name: &str) -> Option<u64> {
    type F = unsafe extern "C" fn(*const std::ffi::c_char) -> u64;
    if !gpumem::storage::cuda_available() {
        return None;
    }
    // SAFETY: the driver library is present (checked); the symbol is read
    // with the type the stand-in exports it with.
    let f = unsafe {
        sys::culib()
            .get::<F>(b"gpumem_standin_calls\0")
            .ok()
            .map(|s| *s)
    }?;
    // The `_v2` entry points are the ones cudarc binds.
    let symbol = match name {
        "cuMemAlloc" | "cuMemFree" => format!("{name}_v2"),
        other => other.to_string(),
    };
    let symbol = std::ffi::CString::new(symbol).expect("no NUL");
    // SAFETY: a NUL-terminated name.
    Some(unsafe { f(symbol.as_ptr()) })
}

fn reset_standin() {
    // SAFETY: as in `standin_calls`; a function of no arguments.
    if let Some(f) = unsafe {
        sys::culib()
            .get::<extern "C" fn()>(b"gpumem_standin_reset_calls\0")
            .ok()
            .map(|s| *s)
    } {
        f();
    }
}

/// The charged calls of a replay, per driver function, and the stand-in's
/// counts at the same moment (the device built, replayed, not dropped:
/// construction and teardown are no workload's calls).
fn replayed(
    kind: BackendKind,
    program: &Program,
) -> (BTreeMap<&'static str, u64>, BTreeMap<&'static str, u64>) {
    let builder = match kind {
        BackendKind::Cuda => Device::cuda(0).expect("the stand-in's device"),
        _ => Device::simulated(8 * GIB),
    };
    let mut backend = PoolSettings::default()
        .device("parity", builder, program)
        .expect("a device");
    reset_standin();
    let run = replay("parity", program, &mut backend, &ReplayOptions::default())
        .expect("the replay runs");
    let driver = run
        .report
        .driver
        .expect("a device backend reports its driver calls");
    let charged = driver
        .calls
        .nonzero()
        .map(|(call, t)| (call.driver_function(), t.calls))
        .collect();
    let counted = DriverCall::ALL
        .iter()
        .map(|c| {
            (
                c.driver_function(),
                standin_calls(c.driver_function()).unwrap(),
            )
        })
        .collect();
    (charged, counted)
}

#[test]
fn every_workload_makes_the_driver_calls_the_cost_model_charges_per_function() {
    if standin_calls("cuInit").is_none() {
        println!(
            "skipping: the stand-in CUDA driver is not the loaded driver (cargo xtask cuda-standin)"
        );
        return;
    }
    let mut differ = Vec::new();
    for w in [
        Workload::Devlog,
        Workload::Training,
        Workload::Serving,
        Workload::Random,
    ] {
        let events = w
            .generate(&WorkloadSpec {
                seed: 5,
                scale: 0.05,
            })
            .unwrap();
        let program = Program::compile(&events).unwrap();
        let (sim, _) = replayed(BackendKind::Sim, &program);
        let (cuda, counted) = replayed(BackendKind::Cuda, &program);
        for call in DriverCall::ALL {
            let name = call.driver_function();
            let (s, c) = (
                sim.get(name).copied().unwrap_or(0),
                cuda.get(name).copied().unwrap_or(0),
            );
            let driver = counted[name];
            println!("{w:?} {name}: stand-in {driver}, simulated {s}, CUDA meter {c}");
            if driver != s || driver != c {
                differ.push(format!(
                    "{w:?} {name}: stand-in {driver}, simulated {s}, CUDA meter {c}"
                ));
            }
        }
    }
    assert!(differ.is_empty(), "per function:\n{}", differ.join("\n"));
}
