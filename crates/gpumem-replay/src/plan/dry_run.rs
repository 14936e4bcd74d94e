//! The replays a plan measures: `gpumem::Device` on a simulated device with
//! lazily carved pages (ids, no memory, so a trace larger than the device
//! costs nothing), the facade's defaults but the layout under test.
//!
//! Paged pools refuse an allocation above the device's largest page (the
//! facade's default is `min(1 GiB, device)`), so a trace with larger
//! buffers is measured with `max_page` raised to its largest allocation,
//! and every layout the plan writes carries that `max_page` so that
//! `gpumem replay --config` replays what the plan measured.

use gpumem::Device;
use gpumem::config::layout::format_layout;
use gpumem::config::layout::format_size;
use gpumem::config::{GpumemConfig, PoolLayout};
use gpumem::units::{GIB, MIB};

use crate::error::Result;
use crate::replay::{DeviceBackend, Op, Program, ReplayOptions, ReplayReport, StreamMode, replay};
use crate::setup::PoolSettings;

/// The `max_page` a plan of `program` on a device of `capacity` bytes
/// needs: `None` when the facade's default page limit takes its largest
/// allocation, else that allocation rounded up to 2 MiB (at most the device).
pub fn max_page_for(program: &Program, capacity: u64) -> Option<u64> {
    let largest = program
        .ops
        .iter()
        .filter_map(|op| match *op {
            Op::Alloc { size, .. } => Some(size),
            _ => None,
        })
        .max()?;
    let default = GIB.min(capacity);
    (largest > default).then(|| {
        largest
            .div_ceil(2 * MIB)
            .saturating_mul(2 * MIB)
            .min(capacity)
    })
}

/// The page limit of a plan's candidates on a device of `capacity` bytes:
/// a quarter of the device, or what the trace needs if more; `None` when
/// that is not above the facade's default.
pub(crate) fn candidate_max_page(capacity: u64, needed: Option<u64>) -> Option<u64> {
    let page = (capacity / 4).max(needed.unwrap_or(0));
    (page > GIB.min(capacity)).then_some(page)
}

/// `layout` as `--config` reads it, with `max_page` when one is set.
pub(crate) fn config_text(layout: &PoolLayout, max_page_size: Option<u64>) -> String {
    match max_page_size {
        None => format_layout(layout),
        Some(page) => format!(
            "pools:{},max_page:{}",
            format_layout(layout),
            format_size(page)
        ),
    }
}

/// Replays `program` on `layout` (one stream for the whole trace). Paged
/// layouts run on lazily carved pages; arenas keep their own accounting
/// of mapped chunks (lazy pages would hide it), on the simulated device
/// that holds no memory either way.
pub(crate) fn dry_run(
    source: &str,
    program: &Program,
    capacity: u64,
    layout: PoolLayout,
    max_page_size: Option<u64>,
) -> Result<(ReplayReport, DeviceBackend)> {
    let lazy_pages = !layout.uses_arenas(true);
    let mut config = GpumemConfig::default();
    config.pools = layout;
    config.lazy_pages = lazy_pages;
    config.max_page_size = max_page_size;
    let settings = PoolSettings {
        config,
        relocate: false,
        streams: StreamMode::One,
    };
    let mut backend = settings.device("sim-lazy", Device::simulated(capacity), program)?;
    let run = replay(source, program, &mut backend, &ReplayOptions::default())?;
    Ok((run.report, backend))
}
