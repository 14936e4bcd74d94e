//! The real latencies behind the driver cost table (`mem_storage::
//! DriverCosts`): every call of the table timed on device 0, one thread,
//! averages, and printed in the table's own text form so a GPU run's
//! line can replace the figures (`GPUMEM_CONF=driver_cost:…`, or the
//! constants in `crates/mem-storage/src/driver_cost/table.rs`).
//!
//! Size-dependent calls (create, set-access, unmap, release, alloc, free)
//! are timed at several sizes and fitted to `fixed + per 2 MiB` by least
//! squares; map, the address calls, the stream-ordered pair, the waits
//! and the events are timed at one size. Raw driver calls through
//! cudarc's `sys` bindings: the storage layer's `map` does map and
//! set-access together, and the table needs them apart.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::{self, CUdeviceptr, CUmemGenericAllocationHandle};
use cudarc::driver::{CudaContext, DriverError, result};
use mem_storage::{COST_GRANULE, DriverCall, DriverCosts, Latency};

use super::Scale;
use crate::table::Table;
use crate::{BenchError, MIB, Result};

/// Sizes the size-dependent calls are timed at.
pub const SIZES: [u64; 4] = [2 * MIB, 8 * MIB, 32 * MIB, 128 * MIB];

fn driver(what: &'static str) -> impl Fn(DriverError) -> BenchError {
    move |e| BenchError::Driver {
        what,
        message: e.to_string(),
    }
}

/// Fit `fixed + per_granule × granules` to `(bytes, mean ns)` points by
/// least squares; both parts clamped at 0 (one point: all fixed).
pub fn fit(points: &[(u64, f64)]) -> Latency {
    let n = points.len() as f64;
    let xs: Vec<f64> = points
        .iter()
        .map(|&(b, _)| b.div_ceil(COST_GRANULE) as f64)
        .collect();
    let mean_x = xs.iter().sum::<f64>() / n.max(1.0);
    let mean_y = points.iter().map(|&(_, y)| y).sum::<f64>() / n.max(1.0);
    let sxx: f64 = xs.iter().map(|x| (x - mean_x).powi(2)).sum();
    let sxy: f64 = xs
        .iter()
        .zip(points)
        .map(|(x, &(_, y))| (x - mean_x) * (y - mean_y))
        .sum();
    let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    let fixed = (mean_y - slope * mean_x).max(0.0);
    Latency::sized(fixed.round() as u64, slope.round() as u64)
}

fn pinned(device: sys::CUdevice) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        win32HandleMetaData: std::ptr::null_mut(),
        allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
            reserved: [0; 4],
        },
    }
}

/// Mean ns of `f` over `n` calls, each timed alone.
fn timed<T>(n: usize, mut f: impl FnMut(usize) -> Result<T>) -> Result<(f64, Vec<T>)> {
    let mut total = 0u128;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        out.push(f(i)?);
        total += start.elapsed().as_nanos();
    }
    Ok((total as f64 / n.max(1) as f64, out))
}

/// Mean ns per call of the VMM lifecycle at one size: `(reserve, create,
/// map, set-access, unmap, release, free)`.
fn vmm_at(device: sys::CUdevice, size: u64, n: usize) -> Result<[f64; 7]> {
    let len = size as usize;
    let prop = pinned(device);
    let mut base: CUdeviceptr = 0;
    let start = Instant::now();
    // SAFETY: `base` is a live out-parameter; no fixed address is asked for.
    unsafe { sys::cuMemAddressReserve(&mut base, len * n, len, 0, 0) }
        .result()
        .map_err(driver("cuMemAddressReserve"))?;
    let reserve = start.elapsed().as_nanos() as f64;
    let (create, handles) = timed(n, |_| {
        let mut h: CUmemGenericAllocationHandle = 0;
        // SAFETY: `h` and `prop` are live locals of the right types.
        unsafe { sys::cuMemCreate(&mut h, len, &prop, 0) }
            .result()
            .map_err(driver("cuMemCreate"))?;
        Ok(h)
    })?;
    let at = |i: usize| base + (i * len) as CUdeviceptr;
    let (map, _) = timed(n, |i| {
        // SAFETY: each span is inside the reservation and empty, and each
        // handle is a live unmapped chunk of exactly `len` bytes.
        unsafe { sys::cuMemMap(at(i), len, 0, handles[i], 0) }
            .result()
            .map_err(driver("cuMemMap"))
    })?;
    let access = sys::CUmemAccessDesc {
        location: prop.location,
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    let (set_access, _) = timed(n, |i| {
        // SAFETY: each span was mapped just above; `access` is one descriptor.
        unsafe { sys::cuMemSetAccess(at(i), len, &access, 1) }
            .result()
            .map_err(driver("cuMemSetAccess"))
    })?;
    let (unmap, _) = timed(n, |i| {
        // SAFETY: each span is one whole mapping that no work uses.
        unsafe { sys::cuMemUnmap(at(i), len) }
            .result()
            .map_err(driver("cuMemUnmap"))
    })?;
    let (release, _) = timed(n, |i| {
        // SAFETY: each handle is live and unmapped, released once.
        unsafe { sys::cuMemRelease(handles[i]) }
            .result()
            .map_err(driver("cuMemRelease"))
    })?;
    let start = Instant::now();
    // SAFETY: the whole reservation, emptied above, freed once.
    unsafe { sys::cuMemAddressFree(base, len * n) }
        .result()
        .map_err(driver("cuMemAddressFree"))?;
    let free = start.elapsed().as_nanos() as f64;
    Ok([reserve, create, map, set_access, unmap, release, free])
}

/// Mean ns of `cuMemAlloc` and `cuMemFree` at one size.
fn alloc_at(size: u64, n: usize) -> Result<(f64, f64)> {
    let (alloc, ptrs) = timed(n, |_| {
        // SAFETY: a plain allocation of `size` bytes on the bound context.
        unsafe { result::malloc_sync(size as usize) }.map_err(driver("cuMemAlloc"))
    })?;
    let (free, _) = timed(n, |i| {
        // SAFETY: each pointer came from `malloc_sync` above, freed once.
        unsafe { result::free_sync(ptrs[i]) }.map_err(driver("cuMemFree"))
    })?;
    Ok((alloc, free))
}

/// Time every call of the table on device 0; below [`Scale::Full`] the
/// counts shrink, and [`Scale::Smoke`] times only the sizes up to its
/// largest.
pub fn measure(scale: Scale) -> Result<(DriverCosts, Table)> {
    let ctx: Arc<CudaContext> = CudaContext::new(0).map_err(driver("opening device 0"))?;
    ctx.bind_to_thread()
        .map_err(driver("binding the context"))?;
    let device = ctx.cu_device();
    let mut table = Table::new(&["call", "size", "mean µs"]).labels(2);
    let mut costs = DriverCosts::A100;
    let mut points: [Vec<(u64, f64)>; 6] = Default::default();
    let (mut map, mut reserve, mut free) = (Vec::new(), Vec::new(), Vec::new());
    for size in SIZES.into_iter().filter(|&s| s <= scale.max_bytes()) {
        let n = match scale {
            Scale::Full => ((256 * MIB / size) as usize).clamp(4, 64),
            Scale::Quick => ((256 * MIB / size) as usize).clamp(4, 64) / 4,
            Scale::Smoke => 2,
        };
        let [r, create, m, set_access, unmap, release, f] = vmm_at(device, size, n.max(1))?;
        let (alloc, free_sync) = alloc_at(size, n.max(1))?;
        for (slot, ns) in [create, set_access, unmap, release, alloc, free_sync]
            .into_iter()
            .enumerate()
        {
            points[slot].push((size, ns));
        }
        map.push(m);
        reserve.push(r);
        free.push(f);
        let calls = [
            ("cuMemCreate", create),
            ("cuMemMap", m),
            ("cuMemSetAccess", set_access),
            ("cuMemUnmap", unmap),
            ("cuMemRelease", release),
            ("cuMemAlloc", alloc),
            ("cuMemFree", free_sync),
        ];
        for (call, ns) in calls {
            table.row(vec![call.into(), format!("{} MiB", size / MIB), us(ns)]);
        }
    }
    let sized = [
        DriverCall::Create,
        DriverCall::SetAccess,
        DriverCall::Unmap,
        DriverCall::Release,
        DriverCall::Alloc,
        DriverCall::Free,
    ];
    for (call, points) in sized.into_iter().zip(&points) {
        costs.set(call, fit(points));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    costs.set(DriverCall::Map, Latency::fixed(mean(&map).round() as u64));
    costs.set(
        DriverCall::AddressReserve,
        Latency::fixed(mean(&reserve).round() as u64),
    );
    costs.set(
        DriverCall::AddressFree,
        Latency::fixed(mean(&free).round() as u64),
    );
    let reps = scale.count(1_000) as usize;
    for (call, ns) in crate::gpu::driver_waits::measure(&ctx, reps)? {
        costs.set(call, Latency::fixed(ns.round() as u64));
        table.row(vec![call.driver_function().into(), "-".into(), us(ns)]);
    }
    Ok((costs, table))
}

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

/// The section `gpu-bench` prints: the measured table, then the line that
/// sets it.
pub fn report(scale: Scale) -> Result<String> {
    let (costs, table) = measure(scale)?;
    Ok(format!(
        "{}\nfitted (fixed + per 2 MiB), the table's form:\n\ndriver_cost:{costs}\n",
        table.render()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_recovers_a_fixed_and_a_per_granule_part() {
        let truth = Latency::sized(20_000, 86_000);
        let points: Vec<(u64, f64)> = SIZES.iter().map(|&s| (s, truth.ns(s) as f64)).collect();
        assert_eq!(fit(&points), truth);
    }

    #[test]
    fn a_fit_of_a_flat_latency_is_all_fixed_and_never_negative() {
        assert_eq!(
            fit(&[(2 * MIB, 1_450.0), (128 * MIB, 1_450.0)]),
            Latency::fixed(1_450)
        );
        // Falling with size (noise): no negative per-granule part.
        let fitted = fit(&[(2 * MIB, 2_000.0), (128 * MIB, 1_000.0)]);
        assert_eq!(fitted.per_granule_ns, 0);
        assert_eq!(fit(&[(2 * MIB, 5.0)]), Latency::fixed(5));
    }
}
