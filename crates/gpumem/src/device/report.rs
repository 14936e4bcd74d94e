//! `Device::memory_report`'s body: every stream's progress, holds,
//! statistics and pools, with the device's and budget's figures.

use mem_storage::{DeviceResource, VirtualMemory};

use crate::shared::DeviceShared;
use crate::stats::{DeviceReport, MemoryStats, StreamReport};

/// The report of `shared`; `stats` reads the device's statistics (after the
/// streams' parts, as `Device::stats` does).
pub(crate) fn memory_report(
    shared: &DeviceShared,
    stats: impl FnOnce() -> MemoryStats,
) -> DeviceReport {
    let streams = shared
        .streams
        .iter()
        .enumerate()
        .map(|(index, s)| {
            let mut st = s.lock();
            StreamReport {
                index,
                submitted: s.submitted(),
                completed: s.completed(),
                recording: s.is_recording(),
                held_bytes: st.held_bytes(),
                stats: st.stats_now(),
                pools: st.engine.memory_report(),
            }
        })
        .collect();
    let budget = shared.resource.handle();
    DeviceReport {
        device: shared.name.clone(),
        backend: shared.resource.backend(),
        mem_info: shared.resource.upstream().mem_info().ok(),
        budget_limit: budget.is_finite().then(|| budget.limit()),
        budget_charged: budget.charged(),
        budget_peak: budget.peak(),
        stats: stats(),
        streams,
        virtual_memory: shared.virtual_memory.as_ref().map(|vm| vm.vm_stats()),
        arena_fallback: shared.arena_fallback.clone(),
    }
}
