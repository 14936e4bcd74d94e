//! Measurements that need a CUDA device (`gpu-bench`, `cargo xtask
//! gpu-bench`). Nothing here touches the driver before
//! [`mem_storage::cuda_available`] says it can be loaded: a missing
//! `libcuda` would otherwise abort the process.
//!
//! - [`alloc`]: a pool-hit reserve+drop against `cuMemAllocAsync` /
//!   `cuMemFreeAsync` and `cuMemAlloc` / `cuMemFree`, same sizes.
//! - [`bandwidth`]: relocation copy bandwidth (plan → copy → commit of
//!   outdated pages on a copy stream, the scenario of [`relocation`])
//!   against a plain device-to-device copy of the same bytes.
//! - [`driver_costs`]: every call of the driver cost table timed (create,
//!   set-access, unmap, release, alloc and free by size; map, the address
//!   calls, the stream-ordered pair, the waits and the events), printed in
//!   the table's own form so the table can take them.
//! - [`capture`]: record a CUDA graph over pool memory with the CubeCL-compatible
//!   capture protocol, replay it many times, and count device allocations
//!   during the replays (must be zero) and check the bytes.
//!
//! The relocation scenario is generic over the resource and runs on host
//! memory in this crate's tests, so only the CUDA wiring is untested on a
//! machine without a GPU.

pub mod alloc;
pub mod bandwidth;
pub mod capture;
pub mod driver_costs;
pub mod driver_waits;
pub mod relocation;

use std::sync::Arc;

use mem_storage::CudaResource;

use crate::{MIB, Result};

/// How much a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Every size and the full counts: the figures a GPU run reports.
    Full,
    /// Every size, a tenth of the counts (`--quick`).
    Quick,
    /// Sizes up to 8 MiB and a handful of calls each (`--smoke`): every
    /// line of the run executes in seconds, on the stand-in driver in CI;
    /// the timings mean nothing.
    Smoke,
}

impl Scale {
    /// The largest allocation the run makes.
    pub fn max_bytes(self) -> u64 {
        match self {
            Scale::Full | Scale::Quick => u64::MAX,
            Scale::Smoke => 8 * MIB,
        }
    }

    /// `full` calls, scaled down (never below 1).
    pub fn count(self, full: u64) -> u64 {
        match self {
            Scale::Full => full,
            Scale::Quick => (full / 10).max(1),
            Scale::Smoke => (full / 100).clamp(1, 4),
        }
    }
}

/// Whether the loaded driver is the stand-in (`crates/cuda-standin`, which
/// exports `gpumem_standin_version`; a real driver has no such symbol).
pub fn on_standin() -> bool {
    if !mem_storage::cuda_available() {
        return false;
    }
    // SAFETY: `culib` opens the driver library (present, checked above);
    // the symbol is only looked up, never called.
    unsafe {
        cudarc::driver::sys::culib()
            .get::<extern "C" fn() -> u32>(b"gpumem_standin_version\0")
            .is_ok()
    }
}

/// Why the GPU measurements cannot run here, or `None` if they can.
pub fn skip_reason() -> Option<String> {
    if mem_storage::cuda_available() {
        None
    } else {
        Some("no CUDA driver library (libcuda) on this machine".into())
    }
}

/// Device 0 with the given allocation mode (after [`skip_reason`] said yes).
pub fn device(mode: mem_storage::CudaAllocMode) -> Result<Arc<CudaResource>> {
    Ok(Arc::new(CudaResource::with_mode(0, mode)?))
}

/// Everything `gpu-bench` prints, as Markdown.
pub fn run_all(scale: Scale) -> Result<String> {
    let mut out = String::new();
    if on_standin() {
        out.push_str(
            "**On the stand-in driver** (`crates/cuda-standin`, host memory): every call \
             ran and every check held, but the timings are the stand-in's, not a GPU's; \
             quote none of them.\n\n",
        );
    }
    // First: the driver cost table's figures, what a GPU run is for.
    out.push_str("## Driver call latencies (the driver cost table)\n\n");
    out.push_str(&driver_costs::report(scale)?);
    out.push_str("\n## Reserve+drop: pool hit vs cuMemAllocAsync vs cuMemAlloc\n\n");
    out.push_str(&alloc::table(&alloc::measure(scale)?));
    out.push_str("\n## Relocation copy bandwidth vs a plain device-to-device copy\n\n");
    out.push_str(&bandwidth::cuda_table(scale)?);
    out.push_str("\n## Capture replay\n\n");
    out.push_str(&capture::cuda_report(scale)?);
    Ok(out)
}
