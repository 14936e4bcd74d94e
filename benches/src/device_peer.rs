//! gpumem as the tables measure it: `gpumem::Device`, built as a user
//! builds one, through the `gpumem` command's own replay backend
//! ([`DeviceBackend`]), so a table's gpumem figure is the one `gpumem
//! replay` prints and a program gets.
//!
//! Two configurations: the facade's defaults ([`default_device`]: on the
//! simulated device, arenas), and the paged default ([`paged_device`]:
//! `pools:sub_slices`, with `max_page` raised to the trace's largest
//! allocation where the facade's 1 GiB page limit is below it, as `gpumem
//! plan` does — paged pools refuse anything larger than a page).

use gpumem::Device;
use gpumem::config::{GpumemConfig, PoolLayout};
use gpumem_replay::compare::pytorch::Policy;
use gpumem_replay::compare::{CompareBackend, Setup};
use gpumem_replay::plan::max_page_for;
use gpumem_replay::replay::{DeviceBackend, Program, StreamMode};
use gpumem_replay::setup::PoolSettings;

use crate::Result;

/// The paged configuration for `program` on a device of `capacity` bytes.
pub fn paged_config(program: &Program, capacity: u64) -> GpumemConfig {
    let mut config = GpumemConfig::default();
    config.pools = PoolLayout::SubSlices;
    config.max_page_size = max_page_for(program, capacity);
    config
}

/// A simulated device of `capacity` bytes with `config`, one stream for
/// the whole trace (the tables compare one address space per peer).
///
/// # Errors
/// The facade's refusal to build, as a backend error.
pub fn device(program: &Program, capacity: u64, config: GpumemConfig) -> Result<DeviceBackend> {
    let settings = PoolSettings {
        config,
        relocate: false,
        streams: StreamMode::One,
    };
    Ok(settings.device("sim", Device::simulated(capacity), program)?)
}

/// `Device::simulated(capacity)` with every default (`GPUMEM_CONF` ignored).
///
/// # Errors
/// The facade's refusal to build.
pub fn default_device(program: &Program, capacity: u64) -> Result<DeviceBackend> {
    device(program, capacity, GpumemConfig::default())
}

/// The paged default on a simulated device (see [`paged_config`]).
///
/// # Errors
/// The facade's refusal to build.
pub fn paged_device(program: &Program, capacity: u64) -> Result<DeviceBackend> {
    device(program, capacity, paged_config(program, capacity))
}

/// Whether a device runs on arenas (its report says so).
pub fn uses_arenas(backend: &DeviceBackend) -> bool {
    backend.device().memory_report().virtual_memory.is_some()
}

/// `gpumem compare`'s setup as the tables run it: the simulated device of
/// `capacity` bytes, the facade's defaults (`GPUMEM_CONF` ignored), one
/// thread, no splits.
pub fn compare_setup(capacity: u64) -> Setup {
    Setup {
        backend: CompareBackend::Sim,
        capacity,
        config: GpumemConfig::default(),
        threads: false,
        pytorch: Policy::default(),
        splits: false,
    }
}
