//! The driver cost model: what a GPU would pay for the calls gpumem makes.
//!
//! - [`DriverCosts`] (`table.rs`): the one table of modeled latencies, a
//!   fixed part per call plus a part per 2 MiB, every figure cited in
//!   docs/storage.md; its text form (`create=96.66us+96.66us/2MiB,...`) is
//!   what `GPUMEM_CONF driver_cost:` takes and what the GPU benchmark
//!   prints (`parse.rs`); [`CostSplit`] (`splits.rs`) names it under the
//!   three splits of its 2 MiB figures (`a100`, `a100-per-call`,
//!   `a100-per-byte`).
//! - [`DriverMeter`] (`meter.rs`): one device's charged calls and modeled
//!   time per call kind, lock-free; [`DriverTime`] is its snapshot, which
//!   [`crate::VirtualMemoryStats::driver`] and the facade's statistics carry.
//!   It keeps the ledger of the device's default memory pool (`pool.rs`):
//!   `cuMemAllocAsync` pays for physical memory only when the pool grows,
//!   a synchronize for what the pool trims.
//! - [`crate::DriverCostResource`] (`adaptors/driver_cost.rs`, with the
//!   other adaptors): charges every call passing through it, over any
//!   resource or virtual memory.
//!
//! Nothing sleeps: time is added to counters, so host time and modeled
//! driver time are read side by side.

mod meter;
mod parse;
mod pool;
mod splits;
mod table;

pub use meter::{CallTally, DriverMeter, DriverTime};
pub use parse::{ENTRY_GRAMMAR, LATENCY_GRAMMAR};
pub use splits::CostSplit;
pub use table::{CALL_KINDS, COST_GRANULE, DriverCall, DriverCosts, Latency};
