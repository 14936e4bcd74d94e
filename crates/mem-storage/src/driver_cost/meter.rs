//! `DriverMeter`: the modeled driver time of one device, per call kind,
//! lock-free; `DriverTime`: a snapshot of it.
//!
//! Nothing sleeps: a charge adds the call's modeled latency (from the
//! device's [`DriverCosts`]) to an atomic per call kind, so a replay's
//! wall clock stays the host's time and the driver's is read beside it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::driver_cost::pool::PoolLedger;
use crate::driver_cost::table::{CALL_KINDS, DriverCall, DriverCosts};

/// The calls a pool growth is priced as: what `cuMemAlloc` is made of.
const ALLOC_PARTS: [DriverCall; 3] = [DriverCall::Create, DriverCall::Map, DriverCall::SetAccess];
/// The calls a pool trim is priced as: what `cuMemFree` is made of.
const FREE_PARTS: [DriverCall; 2] = [DriverCall::Unmap, DriverCall::Release];

/// Calls made of one kind and the modeled time they cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallTally {
    /// Calls charged.
    pub calls: u64,
    /// Their modeled time, ns.
    pub ns: u64,
}

/// Modeled driver calls and time, per [`DriverCall`] (a snapshot of a
/// [`DriverMeter`]; all zero where no meter is installed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DriverTime {
    tallies: [CallTally; CALL_KINDS],
}

impl DriverTime {
    /// The tally of `call`.
    pub fn tally(&self, call: DriverCall) -> CallTally {
        self.tallies[call.index()]
    }

    /// Calls of `call` charged.
    pub fn calls(&self, call: DriverCall) -> u64 {
        self.tally(call).calls
    }

    /// Modeled time of every call, ns.
    pub fn total_ns(&self) -> u64 {
        self.tallies
            .iter()
            .fold(0u64, |t, c| t.saturating_add(c.ns))
    }

    /// Driver calls of every kind.
    pub fn total_calls(&self) -> u64 {
        self.tallies.iter().map(|c| c.calls).sum()
    }

    /// Times the host waited for the whole device (`cuCtxSynchronize`,
    /// including the one inside every `cuMemFree`).
    pub fn device_waits(&self) -> u64 {
        self.calls(DriverCall::DeviceSynchronize)
    }

    /// Times the host waited for one stream (`cuStreamSynchronize`).
    pub fn stream_waits(&self) -> u64 {
        self.calls(DriverCall::StreamSynchronize)
    }

    /// Each call kind with at least one call, in table order.
    pub fn nonzero(&self) -> impl Iterator<Item = (DriverCall, CallTally)> + '_ {
        DriverCall::ALL
            .into_iter()
            .map(|c| (c, self.tally(c)))
            .filter(|(_, t)| t.calls > 0)
    }
}

/// Serialized (feature `serde`) as the list of the calls made, in table
/// order, each `{"call": "cuMemCreate", "calls": 3, "ns": 290000}`; kinds
/// never called are left out (the `calls` of `gpumem replay --json`).
#[cfg(feature = "serde")]
impl serde::Serialize for DriverTime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// One call kind's line.
        struct Line(DriverCall, CallTally);

        impl serde::Serialize for Line {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct;
                let mut line = serializer.serialize_struct("DriverCall", 3)?;
                line.serialize_field("call", self.0.driver_function())?;
                line.serialize_field("calls", &self.1.calls)?;
                line.serialize_field("ns", &self.1.ns)?;
                line.end()
            }
        }

        serializer.collect_seq(self.nonzero().map(|(call, tally)| Line(call, tally)))
    }
}

impl std::ops::AddAssign for DriverTime {
    /// Sum two devices' (or phases') figures.
    fn add_assign(&mut self, other: Self) {
        for (mine, theirs) in self.tallies.iter_mut().zip(other.tallies) {
            mine.calls += theirs.calls;
            mine.ns = mine.ns.saturating_add(theirs.ns);
        }
    }
}

/// What one device's driver calls are modeled to have cost so far.
///
/// Shared (`Arc`) by the [`crate::DriverCostResource`]s over a device's
/// resource and its virtual memory, so pages and chunks add up to one
/// figure. Counters are relaxed atomics: exact per field, read without
/// blocking a call. It also keeps the ledger of the device's default
/// memory pool (`pool.rs`), so `cuMemAllocAsync` pays for physical memory
/// only when the pool must grow.
#[derive(Debug)]
pub struct DriverMeter {
    costs: DriverCosts,
    calls: [AtomicU64; CALL_KINDS],
    ns: [AtomicU64; CALL_KINDS],
    pool: PoolLedger,
}

impl DriverMeter {
    /// A meter charging `costs`.
    pub fn new(costs: DriverCosts) -> Self {
        DriverMeter {
            costs,
            calls: std::array::from_fn(|_| AtomicU64::new(0)),
            ns: std::array::from_fn(|_| AtomicU64::new(0)),
            pool: PoolLedger::default(),
        }
    }

    /// The table it charges.
    pub fn costs(&self) -> &DriverCosts {
        &self.costs
    }

    /// Charge one `call` of `bytes`.
    pub fn charge(&self, call: DriverCall, bytes: u64) {
        self.charge_many(call, 1, bytes);
    }

    /// Charge `count` calls of `call` that together span `bytes` (each pays
    /// the fixed part, the bytes pay the per-granule part once).
    pub fn charge_many(&self, call: DriverCall, count: u64, bytes: u64) {
        if count == 0 {
            return;
        }
        let latency = self.costs.latency(call);
        let ns = latency
            .fixed_ns
            .saturating_mul(count)
            .saturating_add(latency.ns(bytes).saturating_sub(latency.fixed_ns));
        self.add(call, count, ns);
    }

    fn add(&self, call: DriverCall, count: u64, ns: u64) {
        let i = call.index();
        self.calls[i].fetch_add(count, Relaxed);
        self.ns[i].fetch_add(ns, Relaxed);
    }

    /// Charge one `cuMemAllocAsync` of `bytes`: the table's `alloc_async`
    /// (the pool serving it), plus, when the default pool's reservation
    /// must grow for it, the growth priced as `cuMemAlloc`'s parts
    /// (create + map + set-access) of the bytes it grows by.
    pub fn charge_alloc_async(&self, bytes: u64) {
        let growth = self.pool.take(bytes);
        let mut ns = self.costs.ns(DriverCall::AllocAsync, bytes);
        if growth > 0 {
            ns = ns.saturating_add(self.composed(growth, &ALLOC_PARTS));
        }
        self.add(DriverCall::AllocAsync, 1, ns);
    }

    /// Charge one `cuMemFreeAsync` of `bytes`, which the pool keeps.
    pub fn charge_free_async(&self, bytes: u64) {
        self.pool.give_back(bytes);
        self.charge(DriverCall::FreeAsync, bytes);
    }

    /// Charge a host wait for one stream (`cuStreamSynchronize`, or an
    /// event synchronize): its latency, plus what the default pool trims
    /// there (release threshold 0), priced as `cuMemFree`'s parts
    /// (unmap + release) of the bytes trimmed.
    pub fn charge_stream_synchronize(&self) {
        self.charge_wait(DriverCall::StreamSynchronize);
    }

    /// Charge a host wait for the whole device (`cuCtxSynchronize`), with
    /// the pool's trim as [`Self::charge_stream_synchronize`] does.
    pub fn charge_device_synchronize(&self) {
        self.charge_wait(DriverCall::DeviceSynchronize);
    }

    fn charge_wait(&self, call: DriverCall) {
        let trimmed = self.pool.trim();
        let mut ns = self.costs.ns(call, 0);
        if trimmed > 0 {
            ns = ns.saturating_add(self.composed(trimmed, &FREE_PARTS));
        }
        self.add(call, 1, ns);
    }

    /// The default pool's modeled reservation, in bytes: what it holds
    /// from the device, in use or kept for the next request.
    pub fn pool_reserved(&self) -> u64 {
        self.pool.reserved()
    }

    fn composed(&self, bytes: u64, parts: &[DriverCall]) -> u64 {
        parts.iter().fold(0u64, |ns, &part| {
            ns.saturating_add(self.costs.ns(part, bytes))
        })
    }

    /// Charge one `call` of `bytes` priced as the calls it is composed of
    /// (`cuMemAlloc` as create + map + set-access of the same size), so an
    /// override of a part, or a split of the table, moves the whole.
    pub fn charge_composed(&self, call: DriverCall, bytes: u64, parts: &[DriverCall]) {
        self.add(call, 1, self.composed(bytes, parts));
    }

    /// The calls and time so far.
    pub fn snapshot(&self) -> DriverTime {
        DriverTime {
            tallies: std::array::from_fn(|i| CallTally {
                calls: self.calls[i].load(Relaxed),
                ns: self.ns[i].load(Relaxed),
            }),
        }
    }

    /// Back to zero (to measure one phase). The pool's ledger stays: the
    /// memory it holds is still held.
    pub fn reset(&self) {
        for (calls, ns) in self.calls.iter().zip(&self.ns) {
            calls.store(0, Relaxed);
            ns.store(0, Relaxed);
        }
    }
}
