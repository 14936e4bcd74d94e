//! One compiled trace replayed through each allocator in turn, one row
//! per allocator.
//!
//! Every row goes through the same generic loop
//! ([`replay`](crate::replay::replay)) with the same options, so ns/op is
//! timed the same way for all (the loop alone, monomorphized per backend),
//! and peak live — a property of the trace — is the same in every row
//! that refused nothing. Each device is dropped before the next row runs,
//! so on `host` only one row holds memory at a time.

use std::collections::BTreeMap;

use gpumem::Device;
use gpumem::config::GpumemConfig;
use gpumem::stats::DeviceReport;
use serde::Serialize;

use super::CompareBackend;
use super::allocators::Allocator;
use super::offset::OffsetBackend;
use super::pytorch::{Policy, PytorchBackend};
use super::threads::{ThreadedRun, lanes, replay_threaded};
use crate::error::Result;
use crate::plan::max_page_for;
use crate::replay::{
    DeviceBackend, Program, ReplayOptions, ReplayReport, StreamMode, SystemBackend, replay,
};
use crate::report::DriverHalves;
use crate::setup::PoolSettings;

/// How the rows are set up.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Device of gpumem's rows.
    pub backend: CompareBackend,
    /// Device bytes: gpumem's device, the offset heap, the system capacity.
    pub capacity: u64,
    /// gpumem's configuration (the facade's defaults with `GPUMEM_CONF`);
    /// paged rows replace its layout.
    pub config: GpumemConfig,
    /// Replay a multi-stream trace with one thread per stream on gpumem's
    /// rows (`--threads`).
    pub threads: bool,
    /// The modeled PyTorch rows' settings (`--pytorch-conf`); each row
    /// sets `expandable` itself.
    pub pytorch: Policy,
    /// Replay every row with a driver model once more under each named
    /// split of the A100 table (`--splits`; [`Row::driver_ns_per_op_by_split`]).
    pub splits: bool,
}

/// One allocator's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The allocator's name (`--against` takes it).
    pub allocator: &'static str,
    /// Peak Σ requested sizes live (the trace's, unless allocations failed).
    pub peak_live_bytes: u64,
    /// Peak bytes held, as [`Row::reserved_means`] says.
    pub peak_reserved_bytes: u64,
    /// Bytes held at the end.
    pub final_reserved_bytes: u64,
    /// Peak reserved ÷ peak live (`None` when nothing was live).
    pub fragmentation: Option<f64>,
    /// Calls to the device, as [`Row::storage_calls_mean`] says.
    pub storage_calls: u64,
    /// Time of the replay loop alone.
    pub wall_ns: u64,
    /// `wall_ns` ÷ ops.
    pub ns_per_op: f64,
    /// Modeled driver time ÷ ops (gpumem's rows and the modeled PyTorch
    /// rows; `None` for the others, which have no driver model).
    pub driver_ns_per_op: Option<f64>,
    /// `ns_per_op` + `driver_ns_per_op`: what a GPU user would pay per op.
    pub modeled_ns_per_op: Option<f64>,
    /// Driver time of the first and the second half of the ops (rows with
    /// a driver model, replayed in order).
    pub driver_halves: Option<DriverHalves>,
    /// Driver ns/op under each named split of the A100 table, keyed by its
    /// `GPUMEM_CONF driver_cost:` name (with [`Setup::splits`], rows with a
    /// driver model; the row replayed once per split).
    pub driver_ns_per_op_by_split: Option<BTreeMap<&'static str, f64>>,
    /// Successful allocations.
    pub allocs: u64,
    /// Allocations refused.
    pub failed_allocs: u64,
    /// The first refusal: `op N: SIZE bytes: reason`.
    pub first_failure: Option<String>,
    /// Threads the row replayed on (1: the trace in order).
    pub threads: usize,
    /// What "reserved" is for this allocator.
    pub reserved_means: &'static str,
    /// What "storage calls" counts for this allocator.
    pub storage_calls_mean: &'static str,
}

impl Row {
    fn new(allocator: Allocator, report: &ReplayReport, storage_calls: u64) -> Self {
        let arenas = report.arenas.is_some();
        Row::from_report(
            allocator.name(),
            report,
            storage_calls,
            allocator.reserved_means(arenas),
            allocator.storage_calls_mean(arenas),
        )
    }

    /// A row for any allocator replayed in order through
    /// [`replay`](crate::replay::replay), named and described by its
    /// caller: the hook for peers that live outside this crate (the CubeCL
    /// engines of `benches/cubecl-peers`, which the workspace does not
    /// build) to be measured and printed exactly as `compare`'s own rows.
    pub fn from_report(
        allocator: &'static str,
        report: &ReplayReport,
        storage_calls: u64,
        reserved_means: &'static str,
        storage_calls_mean: &'static str,
    ) -> Self {
        Row {
            allocator,
            peak_live_bytes: report.peak_live_bytes,
            peak_reserved_bytes: report.peak_reserved_bytes,
            final_reserved_bytes: report.final_reserved_bytes,
            fragmentation: report.fragmentation.peak,
            storage_calls,
            wall_ns: report.wall_ns,
            ns_per_op: report.ns_per_op,
            driver_ns_per_op: report.driver.as_ref().map(|d| d.driver_ns_per_op),
            modeled_ns_per_op: report.driver.as_ref().map(|d| d.modeled_ns_per_op),
            driver_halves: report.driver.as_ref().and_then(|d| d.halves),
            driver_ns_per_op_by_split: None,
            allocs: report.allocs,
            failed_allocs: report.failed_allocs,
            first_failure: report.first_failure.clone(),
            threads: 1,
            reserved_means,
            storage_calls_mean,
        }
    }
}

impl Row {
    /// A row from a threaded replay and the device's report read after it.
    fn threaded(allocator: Allocator, run: &ThreadedRun, device: &DeviceReport) -> Self {
        let stats = &device.stats;
        let c = stats.chunks;
        let arenas = device.virtual_memory.is_some();
        let (peak, live) = (stats.reserved_bytes.peak, run.peak_live_bytes);
        let ns_per_op = run.wall_ns as f64 / run.ops.max(1) as f64;
        let driver = stats.driver.total_ns() as f64 / run.ops.max(1) as f64;
        Row {
            allocator: allocator.name(),
            peak_live_bytes: live,
            peak_reserved_bytes: peak,
            final_reserved_bytes: stats.reserved_bytes.current,
            fragmentation: (live > 0).then(|| peak as f64 / live as f64),
            storage_calls: stats.storage_allocs
                + stats.storage_frees
                + c.creates
                + c.maps
                + c.unmaps
                + c.releases,
            wall_ns: run.wall_ns,
            ns_per_op,
            driver_ns_per_op: Some(driver),
            modeled_ns_per_op: Some(ns_per_op + driver),
            driver_halves: None,
            driver_ns_per_op_by_split: None,
            allocs: run.allocs,
            failed_allocs: run.failed_allocs,
            first_failure: run.first_failure.clone(),
            threads: run.threads,
            reserved_means: allocator.reserved_means(arenas),
            storage_calls_mean: allocator.storage_calls_mean(arenas),
        }
    }
}

/// The `max_page` paged rows run with: the configuration's own when it
/// sets one, else the trace's largest allocation where the facade's
/// default page limit is below it (paged pools refuse anything larger
/// than a page; `gpumem plan` and the benchmark tables raise it the same
/// way). `None` keeps the default.
pub fn paged_max_page(setup: &Setup, program: &Program) -> Option<u64> {
    match setup.config.max_page_size {
        Some(_) => None,
        None => max_page_for(program, setup.capacity),
    }
}

/// Replays `program` through `allocator`.
pub fn run_row(
    allocator: Allocator,
    source: &str,
    program: &Program,
    setup: &Setup,
) -> Result<Row> {
    let options = ReplayOptions::default();
    match allocator {
        Allocator::System => {
            let mut backend = SystemBackend::new(setup.capacity);
            let report = replay(source, program, &mut backend, &options)?.report;
            Ok(Row::new(allocator, &report, report.allocs + report.frees))
        }
        Allocator::OffsetAllocator => {
            let mut backend = OffsetBackend::new(setup.capacity, program.slots);
            let report = replay(source, program, &mut backend, &options)?.report;
            Ok(Row::new(allocator, &report, report.storage_allocs))
        }
        Allocator::Pytorch | Allocator::PytorchExpandable => {
            let policy = Policy {
                expandable: allocator == Allocator::PytorchExpandable,
                ..setup.pytorch
            };
            let costs = setup.config.driver_costs;
            let mut backend = PytorchBackend::new(allocator.name(), policy, setup.capacity, costs);
            let report = replay(source, program, &mut backend, &options)?.report;
            Ok(Row::new(allocator, &report, backend.storage_calls()))
        }
        _ => {
            let mut config = setup.config.clone();
            if let Some(layout) = allocator.layout() {
                config.pools = layout;
                config.max_page_size = config
                    .max_page_size
                    .or_else(|| paged_max_page(setup, program));
            }
            let builder = match setup.backend {
                CompareBackend::Sim => Device::simulated(setup.capacity),
                CompareBackend::Host => Device::host_with_capacity(setup.capacity),
            };
            let settings = PoolSettings {
                config,
                relocate: false,
                streams: StreamMode::PerTrace,
            };
            let mut backend = settings.device(allocator.name(), builder, program)?;
            if setup.threads && program.streams.len() > 1 {
                let lanes = lanes(program);
                let (run, held) = replay_threaded(allocator.name(), &lanes, &backend.streams)?;
                let device = backend.device.memory_report();
                drop(held);
                return Ok(Row::threaded(allocator, &run, &device));
            }
            let report = replay(source, program, &mut backend, &options)?.report;
            Ok(Row::new(
                allocator,
                &report,
                device_calls(&backend, &report),
            ))
        }
    }
}

/// Storage allocations and frees, plus chunk driver calls on arenas, as
/// the device counted them when the replay loop ended.
fn device_calls(backend: &DeviceBackend, report: &ReplayReport) -> u64 {
    let frees = backend
        .settled
        .as_ref()
        .map_or(0, |settled| settled.stats.storage_frees);
    let chunks = report
        .arenas
        .as_ref()
        .map_or(0, |a| a.chunks.driver_calls());
    report.storage_allocs + frees + chunks
}
