//! The port a replay drives: anything that can reserve and free memory.
//!
//! The replay loop is generic over this trait so it is monomorphized per
//! backend: the timed loop pays no dynamic dispatch, and a new allocator is
//! compared by implementing nine methods (the rest have defaults).

use gpumem::pools::PoolReport;

use crate::error::Result;
use crate::report::{ArenaSummary, DriverSummary, Relocations, StreamLine};
use crate::trace::Mode;

/// An allocator under replay.
pub trait AllocBackend {
    /// What a successful reservation hands back; dropping or freeing it ends
    /// the allocation.
    type Token;

    /// Short name for reports (`"sim"`, `"host"`, `"system"`, …).
    fn name(&self) -> &'static str;

    /// Reserves `size` bytes for use on `stream`, the trace stream's dense
    /// index ([`Program::streams`](super::Program::streams) maps it back). An error is an ordinary
    /// failed allocation (counted by the replay, which goes on).
    fn reserve(&mut self, size: u64, stream: u64) -> Result<Self::Token>;

    /// Frees a reservation. An error means the backend's state can no longer
    /// be trusted (e.g. a corrupted pattern) and stops the replay.
    fn free(&mut self, token: Self::Token) -> Result<()>;

    /// Switches the allocation mode (nothing, for a backend without modes).
    fn mode(&mut self, mode: Mode) {
        let _ = mode;
    }

    /// Returns unused memory to the device (nothing, for a backend that
    /// holds none it does not use).
    fn cleanup(&mut self) {}

    /// Requested bytes the backend believes are live (checked against the
    /// replay's own count by tests).
    fn live_bytes(&self) -> u64;

    /// Bytes the backend holds from the device.
    fn reserved_bytes(&self) -> u64;

    /// The backend's own high-water mark of reserved bytes (read once,
    /// after [`AllocBackend::settle`]). The allocator keeps it, not the
    /// replay: only the allocator sees a page taken and another released
    /// within one call (a pool growing its page size), or one stream's page
    /// on top of what the others hold.
    fn peak_reserved_bytes(&self) -> u64;

    /// Allocations made from the device (pages, segments) so far.
    fn storage_allocs(&self) -> u64;

    /// Completes work the backend defers (queued frees) so its counters are
    /// current. Called once, after the clock stops, before the report.
    fn settle(&mut self) {}

    /// Per-pool lines for the report (none for backends without pools).
    fn pool_lines(&self) -> Vec<PoolReport> {
        Vec::new()
    }

    /// Bytes each pool reserves now, in the order of `pool_lines` (summed
    /// over streams; empty for backends without pools). Read once per
    /// timeline bucket, for the HTML page's per-pool bands.
    fn pool_reserved_now(&self) -> Vec<u64> {
        Vec::new()
    }

    /// What relocation did, for backends that relocate (read after `settle`).
    fn relocation(&self) -> Option<Relocations> {
        None
    }

    /// What arena pools did (read after `settle`), for backends with arenas;
    /// `ops` is the trace's op count, for the calls-per-100-ops figure.
    fn arenas(&self, ops: u64) -> Option<ArenaSummary> {
        let _ = ops;
        None
    }

    /// The modeled driver time and waits (read after `settle`), for
    /// backends with a driver; `ops` and the loop's `host_ns_per_op` give
    /// the per-op figures.
    fn driver(&self, ops: u64, host_ns_per_op: f64) -> Option<DriverSummary> {
        let _ = (ops, host_ns_per_op);
        None
    }

    /// Modeled driver ns and calls so far, read mid-replay without
    /// settling (for the halves of [`DriverSummary::halves`]), for
    /// backends with a driver.
    fn driver_so_far(&self) -> Option<(u64, u64)> {
        None
    }

    /// One line per stream memory, for backends that keep several.
    fn stream_lines(&self) -> Vec<StreamLine> {
        Vec::new()
    }
}
