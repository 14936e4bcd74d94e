//! What a device is built with: pool layout, budget, streams, debug modes.
//!
//! A [`GpumemConfig`] is plain data. Code sets it through the
//! [`DeviceBuilder`](crate::device::DeviceBuilder) or directly; the `GPUMEM_CONF`
//! variable overrides the keys it names (see [`conf`]). Everything is
//! checked when the device is built, so a bad value is an error before any
//! memory is touched, never a half-built device.

pub mod conf;
mod conf_items;
mod conf_keys;
mod conf_values;
pub mod layout;

pub use mem_pools::PoolKind;

use mem_pools::{MemoryConfiguration, MemoryPoolOptions, PoolType};

use crate::error::{GpuMemError, Result};
use crate::units::{GIB, MIB};

/// How many bytes the device's pools may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Budget {
    /// No cap beyond what the device itself refuses.
    #[default]
    Unlimited,
    /// At most this many bytes.
    Bytes(u64),
    /// A fraction in `(0, 1]` of the device's total memory (like PyTorch's
    /// `set_per_process_memory_fraction`), resolved once when the device is built.
    Fraction(f64),
}

impl Budget {
    /// Check the value: a fraction must lie in `(0, 1]`.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Budget::Fraction(f) if !(f > 0.0 && f <= 1.0) => Err(GpuMemError::InvalidConfig {
                parameter: "budget fraction",
                value: f.to_string(),
                expected: "a fraction of device memory in (0, 1]",
            }),
            _ => Ok(()),
        }
    }
}

/// The layout of every stream's dynamic pools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PoolLayout {
    /// The default: [`PoolLayout::Arenas`] where the device has virtual
    /// memory (host, simulated, CUDA devices that support it), else
    /// [`PoolLayout::SubSlices`]. [`crate::stats::DeviceReport`] says which.
    #[default]
    Auto,
    /// Virtual-memory arenas: per stream one arena for every size, a range
    /// of addresses twice the device's memory (at least 64 GiB) with
    /// physical chunks (2 MiB granules, up to
    /// [`GpumemConfig::arena_max_chunk`]) mapped only under live data (mem-pools'
    /// `PoolType::VirtualArena`). Building a device with it fails where the
    /// backend has no virtual memory.
    Arenas,
    /// mem-pools' paged default: a small sliced pool for metadata churn, a
    /// growable sliced pool for mid sizes, exclusive pages for large buffers.
    SubSlices,
    /// Exclusive pages only, in exponentially spaced buckets: no slicing,
    /// more padding, no fragmentation inside pages.
    ExclusivePages,
    /// One growable sliced pool (pages start at `page_size` and double up to
    /// the device's largest page for slices up to `max_slice`), then
    /// exclusive pages for anything larger.
    Sliced {
        /// Initial page size.
        page_size: u64,
        /// The largest allocation the sliced pool serves.
        max_slice: u64,
    },
    /// Pools in routing order (mem-pools' `MemoryConfiguration::Custom`):
    /// the first pool that takes a size serves it. The named layouts above
    /// are the only spelling of mem-pools' named configurations.
    Pools(Vec<MemoryPoolOptions>),
}

impl PoolLayout {
    /// The `pools:` name of this layout in `GPUMEM_CONF`.
    pub const fn name(&self) -> &'static str {
        match self {
            PoolLayout::Auto => "auto",
            PoolLayout::Arenas => "arenas",
            PoolLayout::SubSlices => "sub_slices",
            PoolLayout::ExclusivePages => "exclusive",
            PoolLayout::Sliced { .. } => "sliced",
            PoolLayout::Pools(_) => "custom",
        }
    }

    /// Whether this layout uses arenas on a device that has virtual memory
    /// (`virtual_memory`) or not. A custom layout does when it holds an
    /// arena pool.
    pub fn uses_arenas(&self, virtual_memory: bool) -> bool {
        match self {
            PoolLayout::Auto => virtual_memory,
            PoolLayout::Arenas => true,
            PoolLayout::Pools(pool_options) => pool_options
                .iter()
                .any(|p| matches!(p.pool_type, PoolType::VirtualArena { .. })),
            _ => false,
        }
    }

    /// Whether building a device with this layout needs virtual memory (it
    /// names arenas rather than letting `Auto` choose).
    pub fn requires_virtual_memory(&self) -> bool {
        !matches!(self, PoolLayout::Auto) && self.uses_arenas(false)
    }

    /// The mem-pools configuration for a device whose largest page is
    /// `max_page`, holding `capacity` bytes, with or without virtual memory.
    pub fn to_configuration(
        &self,
        max_page: u64,
        capacity: u64,
        virtual_memory: bool,
    ) -> MemoryConfiguration {
        if matches!(self, PoolLayout::Auto | PoolLayout::Arenas) && self.uses_arenas(virtual_memory)
        {
            let range = capacity.saturating_mul(2).max(64 * GIB);
            return MemoryConfiguration::virtual_arenas(range);
        }
        match self {
            PoolLayout::Auto | PoolLayout::Arenas | PoolLayout::SubSlices => {
                MemoryConfiguration::SubSlices
            }
            PoolLayout::ExclusivePages => MemoryConfiguration::ExclusivePages,
            PoolLayout::Sliced {
                page_size,
                max_slice,
            } => MemoryConfiguration::Custom {
                pool_options: vec![
                    MemoryPoolOptions {
                        pool_type: PoolType::SlicedPages {
                            page_size: *page_size,
                            max_slice_size: *max_slice,
                        },
                        dealloc_period: None,
                    },
                    MemoryPoolOptions {
                        pool_type: PoolType::ExclusivePages {
                            max_alloc_size: max_page,
                        },
                        dealloc_period: None,
                    },
                ],
            },
            PoolLayout::Pools(pool_options) => MemoryConfiguration::Custom {
                pool_options: pool_options.clone(),
            },
        }
    }
}

/// The `pools:sliced` defaults: 2 MiB pages (PyTorch's small segment),
/// slices up to 64 MiB.
pub const DEFAULT_SLICED: PoolLayout = PoolLayout::Sliced {
    page_size: 2 * MIB,
    max_slice: 64 * MIB,
};

/// The fill byte of `poison:on`: `0xDB` ("dead bytes") is neither zero nor a
/// small integer nor a plausible float, so stale reads stand out.
pub const DEFAULT_POISON: u8 = 0xDB;

/// Everything a device is built with.
///
/// Start from [`GpumemConfig::default`] (or [`GpumemConfig::from_conf`])
/// and set the fields you need: the struct is `#[non_exhaustive]`, so a
/// release that adds a setting does not break a program that names the
/// ones it knew.
///
/// ```
/// # use gpumem::prelude::*;
/// let mut config = GpumemConfig::default();
/// config.streams = 2;
/// config.budget = Budget::Bytes(8 * GIB);
/// let device = Device::host().config(config).ignore_env().build()?;
/// assert_eq!(device.stream_count(), 2);
/// # Ok::<(), GpuMemError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GpumemConfig {
    /// Layout of every stream's dynamic pools.
    pub pools: PoolLayout,
    /// The largest page the pools allocate at once; `None` = the smaller of
    /// 1 GiB and the device's (budgeted) memory.
    pub max_page_size: Option<u64>,
    /// The device budget, charged for every page every stream holds.
    pub budget: Budget,
    /// Streams the device starts with (at least 1).
    pub streams: usize,
    /// Pages get ids but no memory until first touched (dry runs, planning).
    pub lazy_pages: bool,
    /// Relocate a stream's outdated pages before a reservation whenever its
    /// trigger asks (less than a page to spare, or pools about to run out of
    /// page sizes). Off: relocation runs only when called, or on the
    /// out-of-memory retry.
    pub auto_relocate: bool,
    /// Debug: fill freed memory with this byte before it can be reused.
    pub poison: Option<u8>,
    /// Debug: give every free page back at once and allocate every
    /// reservation from the storage, so memory checkers see each buffer's
    /// real bounds (`PYTORCH_NO_CUDA_MEMORY_CACHING`).
    pub bypass_caching: bool,
    /// The largest physical chunk an arena creates, in bytes; `None`: the
    /// engine's default (`mem_pools::DEFAULT_MAX_CHUNK`, 64 MiB). Larger:
    /// fewer driver calls, more physical memory over live data
    /// (docs/pools.md, the frontier).
    pub arena_max_chunk: Option<u64>,
    /// Idle arena chunks are shed (unmapped, kept for reuse) once they pass
    /// 1/N of the mapped chunk bytes; `None`: the engine's default
    /// (`mem_pools::IDLE_SHARE`, 16); `Some(0)`: never. Smaller N (or
    /// never): less driver time, more physical memory held idle
    /// (docs/pools.md, the frontier).
    pub arena_idle_share: Option<u64>,
    /// The driver cost model charged for every driver call on the host and
    /// simulated backends (what a GPU would pay; read in
    /// [`MemoryStats::driver`](crate::stats::MemoryStats::driver)). A CUDA device
    /// charges nothing: its driver time is in the wall clock.
    pub driver_costs: mem_storage::DriverCosts,
    /// Whether the device makes shareable buffers
    /// ([`Stream::reserve_shareable`](crate::Stream::reserve_shareable)),
    /// and with which handle types beside the POSIX file descriptor (FABRIC)
    /// and flags (RDMA); `None`: it does not (docs/sharing.md).
    pub share: Option<mem_storage::ShareHandles>,
}

impl Default for GpumemConfig {
    fn default() -> Self {
        Self {
            pools: PoolLayout::Auto,
            max_page_size: None,
            budget: Budget::Unlimited,
            streams: 1,
            lazy_pages: false,
            auto_relocate: false,
            poison: None,
            bypass_caching: false,
            arena_max_chunk: None,
            arena_idle_share: None,
            driver_costs: mem_storage::DriverCosts::A100,
            share: None,
        }
    }
}

impl GpumemConfig {
    /// Check every value; the device builder calls this before touching memory.
    pub fn validate(&self) -> Result<()> {
        self.budget.validate()?;
        if self.streams == 0 || self.streams > 1024 {
            return Err(GpuMemError::InvalidConfig {
                parameter: "streams",
                value: self.streams.to_string(),
                expected: "between 1 and 1024 streams",
            });
        }
        if let Some(page) = self.max_page_size
            && page == 0
        {
            return Err(GpuMemError::InvalidConfig {
                parameter: "max_page_size",
                value: "0".into(),
                expected: "a page size of at least one byte (e.g. 256MiB)",
            });
        }
        if let PoolLayout::Sliced {
            page_size,
            max_slice,
        } = self.pools
            && (page_size == 0 || max_slice == 0)
        {
            return Err(GpuMemError::InvalidConfig {
                parameter: "sliced pool",
                value: format!("page_size {page_size}, max_slice {max_slice}"),
                expected: "a non-zero page size and largest slice",
            });
        }
        Ok(())
    }

    /// The largest page for a device with `capacity` bytes available.
    pub(crate) fn resolved_max_page(&self, capacity: u64) -> u64 {
        self.max_page_size
            .unwrap_or_else(|| GIB.min(capacity))
            .max(1)
    }
}
