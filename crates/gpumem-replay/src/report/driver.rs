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
    /// Calls and modeled time per driver function (serialized as the
    /// functions with at least one call, in table order).
    pub calls: DriverTime,
    /// Where the host waited.
    pub waits: WaitStats,
    /// The driver time of the first and the second half of the ops apart
    /// (set by the replay loop; `None` where it could not read the meter
    /// mid-way).
    pub halves: Option<DriverHalves>,
}

/// Driver time and calls of the first half of a replay's ops and of the
/// second half: a workload that repeats should make no driver call in its
/// second half. The meter is read before op `ops / 2` runs; what deferred
/// work the device settles after the loop counts in the second half. The
/// halves sum to the whole.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DriverHalves {
    /// Ops in the first half (`ops / 2`).
    pub first_half_ops: u64,
    /// Modeled driver time of the first half, ns.
    pub first_half_ns: u64,
    /// Driver calls of the first half.
    pub first_half_calls: u64,
    /// `first_half_ns` ÷ `first_half_ops`.
    pub first_half_ns_per_op: f64,
    /// Ops in the second half (the rest).
    pub second_half_ops: u64,
    /// Modeled driver time of the second half, ns.
    pub second_half_ns: u64,
    /// Driver calls of the second half.
    pub second_half_calls: u64,
    /// `second_half_ns` ÷ `second_half_ops`.
    pub second_half_ns_per_op: f64,
}

impl DriverHalves {
    /// From the meter's `(ns, calls)` at the middle and the summary of the
    /// whole replay of `ops` ops.
    pub fn new(mid: (u64, u64), whole: &DriverSummary, ops: u64) -> Self {
        let first_half_ops = ops / 2;
        let second_half_ops = ops - first_half_ops;
        let (first_half_ns, first_half_calls) =
            (mid.0.min(whole.driver_ns), mid.1.min(whole.driver_calls));
        let (second_half_ns, second_half_calls) = (
            whole.driver_ns - first_half_ns,
            whole.driver_calls - first_half_calls,
        );
        let per_op = |ns: u64, n: u64| ns as f64 / n.max(1) as f64;
        DriverHalves {
            first_half_ops,
            first_half_ns,
            first_half_calls,
            first_half_ns_per_op: per_op(first_half_ns, first_half_ops),
            second_half_ops,
            second_half_ns,
            second_half_calls,
            second_half_ns_per_op: per_op(second_half_ns, second_half_ops),
        }
    }
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
            calls: *driver,
            waits,
            halves: None,
        }
    }
}
