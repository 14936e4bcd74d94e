//! The driver cost table: what each CUDA driver call is modeled to cost.
//!
//! This is the one table (docs/design.md: "A driver call is a cost"). Every
//! figure's source is in docs/storage.md ("What a driver call costs"):
//! the published measurement, or the reasoning behind an estimate where
//! none is published. A GPU run (`cargo xtask gpu-bench`) prints the
//! measured figures in [`DriverCosts`]'s `Display` format, which is also
//! the `GPUMEM_CONF` `driver_cost:` grammar, so the table can take them.
//!
//! A latency is a fixed part per call plus a part per 2 MiB granule
//! ([`COST_GRANULE`]) of the call's size, so a 200 MiB create costs its
//! fixed part once and its per-granule part 100 times.

use std::fmt;

/// The unit of a latency's size-dependent part: CUDA's 2 MiB granularity.
pub const COST_GRANULE: u64 = 2 << 20;

/// A CUDA driver call the cost model charges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DriverCall {
    /// `cuMemCreate`: physical memory for a chunk (by size).
    Create,
    /// `cuMemMap`: a chunk into a reserved range.
    Map,
    /// `cuMemSetAccess`: make a mapping readable and writable (by size).
    /// Every map pays it (crates/mem-storage/src/cuda/vm_driver.rs).
    SetAccess,
    /// `cuMemUnmap` of one mapping (by size).
    Unmap,
    /// `cuMemRelease` of a chunk (by size).
    Release,
    /// `cuMemAddressReserve`: a virtual range.
    AddressReserve,
    /// `cuMemAddressFree`.
    AddressFree,
    /// `cuMemAlloc` (by size).
    Alloc,
    /// `cuMemFree` (by size); it also waits for the device.
    Free,
    /// `cuMemAllocAsync` served by the device's default memory pool; a
    /// growth of the pool is priced on top (`DriverMeter::charge_alloc_async`).
    AllocAsync,
    /// `cuMemFreeAsync`.
    FreeAsync,
    /// `cuStreamSynchronize`: the host waits for one stream.
    StreamSynchronize,
    /// `cuCtxSynchronize`: the host waits for every stream of the device.
    DeviceSynchronize,
    /// `cuEventRecord` (with the `cuStreamWaitEvent` that orders a stream
    /// after it).
    EventRecord,
    /// `cuEventQuery`: whether recorded work is complete, without waiting.
    EventQuery,
}

/// Number of [`DriverCall`] kinds.
pub const CALL_KINDS: usize = 15;

impl DriverCall {
    /// Every call, in table order.
    pub const ALL: [DriverCall; CALL_KINDS] = [
        DriverCall::Create,
        DriverCall::Map,
        DriverCall::SetAccess,
        DriverCall::Unmap,
        DriverCall::Release,
        DriverCall::AddressReserve,
        DriverCall::AddressFree,
        DriverCall::Alloc,
        DriverCall::Free,
        DriverCall::AllocAsync,
        DriverCall::FreeAsync,
        DriverCall::StreamSynchronize,
        DriverCall::DeviceSynchronize,
        DriverCall::EventRecord,
        DriverCall::EventQuery,
    ];

    /// Its key in the table's text form and in `GPUMEM_CONF driver_cost:`.
    pub const fn key(self) -> &'static str {
        match self {
            DriverCall::Create => "create",
            DriverCall::Map => "map",
            DriverCall::SetAccess => "set_access",
            DriverCall::Unmap => "unmap",
            DriverCall::Release => "release",
            DriverCall::AddressReserve => "address_reserve",
            DriverCall::AddressFree => "address_free",
            DriverCall::Alloc => "alloc",
            DriverCall::Free => "free",
            DriverCall::AllocAsync => "alloc_async",
            DriverCall::FreeAsync => "free_async",
            DriverCall::StreamSynchronize => "stream_sync",
            DriverCall::DeviceSynchronize => "device_sync",
            DriverCall::EventRecord => "event_record",
            DriverCall::EventQuery => "event_query",
        }
    }

    /// The driver function it models.
    pub const fn driver_function(self) -> &'static str {
        match self {
            DriverCall::Create => "cuMemCreate",
            DriverCall::Map => "cuMemMap",
            DriverCall::SetAccess => "cuMemSetAccess",
            DriverCall::Unmap => "cuMemUnmap",
            DriverCall::Release => "cuMemRelease",
            DriverCall::AddressReserve => "cuMemAddressReserve",
            DriverCall::AddressFree => "cuMemAddressFree",
            DriverCall::Alloc => "cuMemAlloc",
            DriverCall::Free => "cuMemFree",
            DriverCall::AllocAsync => "cuMemAllocAsync",
            DriverCall::FreeAsync => "cuMemFreeAsync",
            DriverCall::StreamSynchronize => "cuStreamSynchronize",
            DriverCall::DeviceSynchronize => "cuCtxSynchronize",
            DriverCall::EventRecord => "cuEventRecord",
            DriverCall::EventQuery => "cuEventQuery",
        }
    }

    /// The call whose key is `key`.
    pub fn from_key(key: &str) -> Option<DriverCall> {
        DriverCall::ALL.into_iter().find(|c| c.key() == key)
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

/// A modeled latency: `fixed_ns` per call plus `per_granule_ns` for every
/// started 2 MiB of the call's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latency {
    /// Paid once per call, whatever its size.
    pub fixed_ns: u64,
    /// Paid per [`COST_GRANULE`] (rounded up) of the call's size.
    pub per_granule_ns: u64,
}

impl Latency {
    /// A latency that does not depend on size.
    pub const fn fixed(ns: u64) -> Self {
        Latency {
            fixed_ns: ns,
            per_granule_ns: 0,
        }
    }

    /// `fixed_ns` per call plus `per_granule_ns` per 2 MiB.
    pub const fn sized(fixed_ns: u64, per_granule_ns: u64) -> Self {
        Latency {
            fixed_ns,
            per_granule_ns,
        }
    }

    /// What one call of `bytes` costs, in ns (saturating).
    pub fn ns(&self, bytes: u64) -> u64 {
        let granules = bytes.div_ceil(COST_GRANULE);
        self.fixed_ns
            .saturating_add(self.per_granule_ns.saturating_mul(granules))
    }
}

/// The modeled latency of every [`DriverCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverCosts {
    pub(super) latencies: [Latency; CALL_KINDS],
}

const US: u64 = 1_000;

impl DriverCosts {
    /// The default table: an A100 (sources in docs/storage.md).
    ///
    /// Measured at 2 MiB (kvcached's VMM latency benchmark, one thread,
    /// averages): create 193.32 µs, map 1.45 µs, set-access 35.99 µs,
    /// unmap 25.63 µs, address reserve 19 µs. Where no split between the
    /// per-call and per-size parts is published, half of the 2 MiB figure
    /// is charged per call and half per granule, so a 2 MiB call costs
    /// exactly the measured figure. The rest are estimates (see the docs).
    pub const A100: DriverCosts = DriverCosts {
        latencies: [
            // create: 193.32 µs at 2 MiB.
            Latency::sized(96_660, 96_660),
            // map: 1.45 µs.
            Latency::fixed(1_450),
            // set-access: 35.99 µs at 2 MiB.
            Latency::sized(17_995, 17_995),
            // unmap: 25.63 µs at 2 MiB.
            Latency::sized(12_815, 12_815),
            // release: estimate, as unmap.
            Latency::sized(12_815, 12_815),
            // address reserve: 19 µs (8 GB).
            Latency::fixed(19 * US),
            // address free: estimate, as reserve.
            Latency::fixed(19 * US),
            // alloc: estimate, create + map + set-access of the same size.
            Latency::sized(96_660 + 1_450 + 17_995, 96_660 + 17_995),
            // free: estimate, unmap + release (its device wait is charged
            // apart, as a device synchronize).
            Latency::sized(2 * 12_815, 2 * 12_815),
            // alloc async: 2.42 µs served by the pool (CUDA.jl's pooled
            // path). When the pool must grow, the meter adds the growth
            // priced as create + map + set-access of it (`pool.rs`).
            Latency::fixed(2_420),
            // free async: 1.46 µs (the same measurement).
            Latency::fixed(1_460),
            // stream synchronize of a stream with nothing queued: estimate.
            Latency::fixed(5 * US),
            // device synchronize with nothing queued: estimate.
            Latency::fixed(10 * US),
            // event record (+ stream wait): estimate.
            Latency::fixed(2 * US),
            // event query: estimate.
            Latency::fixed(US),
        ],
    };

    /// Every call free: what a real GPU's meter uses, whose driver time is
    /// already in the wall clock (calls and waits are still counted).
    pub const ZERO: DriverCosts = DriverCosts {
        latencies: [Latency::fixed(0); CALL_KINDS],
    };

    /// The latency of `call`.
    pub fn latency(&self, call: DriverCall) -> Latency {
        self.latencies[call.index()]
    }

    /// Replace the latency of `call`.
    pub fn set(&mut self, call: DriverCall, latency: Latency) {
        self.latencies[call.index()] = latency;
    }

    /// What one `call` of `bytes` costs, in ns.
    pub fn ns(&self, call: DriverCall, bytes: u64) -> u64 {
        self.latency(call).ns(bytes)
    }
}

impl Default for DriverCosts {
    fn default() -> Self {
        DriverCosts::A100
    }
}

/// Write `ns` with the largest unit that keeps it short: `1.45us`, `10us`.
fn write_ns(f: &mut fmt::Formatter<'_>, ns: u64) -> fmt::Result {
    if ns >= US && ns.is_multiple_of(10) {
        let us = ns as f64 / US as f64;
        write!(f, "{us}us")
    } else {
        write!(f, "{ns}ns")
    }
}

impl fmt::Display for Latency {
    /// `96.66us`, or `96.66us+96.66us/2MiB` with a per-granule part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_ns(f, self.fixed_ns)?;
        if self.per_granule_ns > 0 {
            f.write_str("+")?;
            write_ns(f, self.per_granule_ns)?;
            f.write_str("/2MiB")?;
        }
        Ok(())
    }
}

impl fmt::Display for DriverCosts {
    /// `create=96.66us+96.66us/2MiB,map=1.45us,...`: the `GPUMEM_CONF`
    /// `driver_cost:` value that sets this whole table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, call) in DriverCall::ALL.into_iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", call.key(), self.latency(call))?;
        }
        Ok(())
    }
}
