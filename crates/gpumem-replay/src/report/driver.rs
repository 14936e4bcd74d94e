//! What a GPU would have paid beside the host time: the modeled driver
//! time of a replay, its calls, and where the host waited for the device.
//!
//! The figures are the device's own (`gpumem::stats::MemoryStats::driver` and
//! `waits`), read once after the replay: every driver call the replay's
//! reservations, frees, cleanups and reclaims made is charged from the
//! driver cost table (`mem_storage::DriverCosts`, cited in
//! docs/storage.md). Host ns/op is what the loop took on this machine;
//! modeled ns/op adds the driver's time, what a GPU user would pay.

use gpumem::stats::WaitStats;
use gpumem::storage::DriverTime;
use serde::Serialize;

/// One driver function's calls and modeled time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriverCallLine {
    /// The driver function (`cuMemCreate`, …).
    pub call: &'static str,
    /// Calls made.
    pub calls: u64,
    /// Their modeled time, ns.
    pub ns: u64,
}

/// The modeled driver time of a replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriverSummary {
    /// Modeled driver time of every call, ns.
    pub driver_ns: u64,
    /// `driver_ns` ÷ ops.
    pub driver_ns_per_op: f64,
    /// Host ns/op + driver ns/op: what a GPU user would pay per op.
    pub modeled_ns_per_op: f64,
    /// Driver calls of every kind.
    pub driver_calls: u64,
    /// Per driver function with at least one call, in table order.
    pub calls: Vec<DriverCallLine>,
    /// Where the host waited.
    pub waits: WaitStats,
}

impl DriverSummary {
    /// From the device's figures, for a replay of `ops` ops whose loop
    /// took `host_ns_per_op`.
    pub fn new(driver: &DriverTime, waits: WaitStats, ops: u64, host_ns_per_op: f64) -> Self {
        let driver_ns = driver.total_ns();
        let driver_ns_per_op = driver_ns as f64 / ops.max(1) as f64;
        DriverSummary {
            driver_ns,
            driver_ns_per_op,
            modeled_ns_per_op: host_ns_per_op + driver_ns_per_op,
            driver_calls: driver.total_calls(),
            calls: driver
                .nonzero()
                .map(|(call, t)| DriverCallLine {
                    call: call.driver_function(),
                    calls: t.calls,
                    ns: t.ns,
                })
                .collect(),
            waits,
        }
    }
}
