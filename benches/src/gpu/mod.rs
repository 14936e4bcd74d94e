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

use crate::Result;

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
pub fn run_all(quick: bool) -> Result<String> {
    let mut out = String::new();
    // First: the driver cost table's figures, what a GPU run is for.
    out.push_str("## Driver call latencies (the driver cost table)\n\n");
    out.push_str(&driver_costs::report(quick)?);
    out.push_str("\n## Reserve+drop: pool hit vs cuMemAllocAsync vs cuMemAlloc\n\n");
    out.push_str(&alloc::table(&alloc::measure(quick)?));
    out.push_str("\n## Relocation copy bandwidth vs a plain device-to-device copy\n\n");
    out.push_str(&bandwidth::cuda_table(quick)?);
    out.push_str("\n## Capture replay\n\n");
    out.push_str(&capture::cuda_report(quick)?);
    Ok(out)
}
