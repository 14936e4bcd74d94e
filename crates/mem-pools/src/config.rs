//! Configuration values: device properties, pool layouts, options, modes.
//!
//! A [`MemoryConfiguration`] is resolved against [`MemoryDeviceProperties`]
//! into a list of [`PoolSpec`]s in routing order. Resolution never fails: a
//! nonsensical custom layout is clamped (documented per field) rather than
//! refused, because a layout is chosen by a runtime at start-up and a
//! half-built engine is worse than a slightly different pool.

use crate::pool_kind::PoolKind;
use mem_storage::units::{GIB, KIB};

#[path = "config_options.rs"]
mod options;
#[path = "config_sub_slices.rs"]
mod sub_slices;
pub use options::MemoryManagementOptions;
pub(crate) use sub_slices::Growth;

/// What the engine needs to know about the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryDeviceProperties {
    /// The largest page the engine may allocate at once.
    pub max_page_size: u64,
    /// Alignment of every slice (a power of two; others round up to one).
    pub alignment: u64,
}

impl MemoryDeviceProperties {
    /// The alignment actually used: a power of two, at least 1.
    pub fn effective_alignment(&self) -> u64 {
        self.alignment
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(1 << 63)
    }

    /// `max_page_size` rounded down to the alignment, at least one alignment unit.
    pub fn effective_max_page(&self) -> u64 {
        let a = self.effective_alignment();
        (self.max_page_size / a * a).max(a)
    }
}

/// Which allocation mode new reservations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryAllocationMode {
    /// Route by size through the dynamic pools.
    #[default]
    Auto,
    /// Exact-fit slices in the persistent pool (weights, graph memory).
    Persistent,
}

/// The layout of the dynamic pools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MemoryConfiguration {
    /// A small sliced pool for metadata churn, a growable sliced pool for
    /// every size up to 1 GiB (or `max_page_size`; its pages grow to the
    /// next whole MiB above an allocation that does not fit, leaving
    /// outdated pages for relocation), and exclusive pages above 1 GiB where
    /// `max_page_size` allows them. Sized to hold no more than CubeCL's own
    /// engine (docs/pools.md).
    #[default]
    SubSlices,
    /// Only exclusive pages, in 24 exponentially spaced buckets.
    ExclusivePages,
    /// Virtual-memory arenas (a storage with virtual memory only, see
    /// [`PoolType::VirtualArena`]): one arena for every size, a 64 GiB range
    /// of addresses with physical chunks only under live data. One arena,
    /// not PyTorch's small/large split: physical memory follows live data
    /// whatever the sizes, and apart they strand partly used chunks in two
    /// places.
    VirtualArenas,
    /// An explicit list of pools, in routing order.
    Custom {
        /// The pools; the first that accepts a size serves it.
        pool_options: Vec<MemoryPoolOptions>,
    },
}

/// One pool of a custom layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPoolOptions {
    /// What kind of pool.
    pub pool_type: PoolType,
    /// Exclusive pools: a free page untouched for this many reservations is
    /// returned to the storage on a periodic cleanup. `None`: only on explicit cleanup.
    pub dealloc_period: Option<u64>,
}

/// The kind of a dynamic pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolType {
    /// Pages of `page_size` carved into slices of at most `max_slice_size`.
    /// When `max_slice_size > page_size` the pool grows its page size
    /// (doubling in a custom layout, capped by the device's `max_page_size`;
    /// [`MemoryConfiguration::SubSlices`] fits it instead) for an allocation
    /// that does not fit a page; older pages become outdated.
    /// `max_slice_size` is clamped to the device's `max_page_size`.
    SlicedPages {
        /// Initial page size (clamped to `alignment..=max_page_size`).
        page_size: u64,
        /// The largest allocation the pool accepts.
        max_slice_size: u64,
    },
    /// One allocation per page; accepts sizes up to `max_alloc_size`.
    ExclusivePages {
        /// The largest allocation the pool accepts.
        max_alloc_size: u64,
    },
    /// A virtual-memory arena: a range of `range_size` addresses (rounded
    /// up to the storage's chunk granularity, 2 MiB on every built-in
    /// backend) carved like one sliced page, with a physical chunk mapped
    /// under every granule a live slice touches and nowhere else. Addresses
    /// never move; growth maps chunks in place; a chunk freed in a hole is
    /// unmapped and mapped where the next allocation needs one before a new
    /// chunk is created. Needs a storage with virtual memory
    /// ([`mem_storage::ComputeStorage::chunk_granularity`]); without one a
    /// reservation routed here is [`crate::IoError::Storage`] `Unsupported`.
    ///
    /// Costs: a virtual range costs no memory; each chunk mapped or
    /// unmapped is one driver call; a slice is never larger than the range.
    VirtualArena {
        /// The largest allocation the pool accepts (clamped to `range_size`).
        max_slice_size: u64,
        /// Bytes of addresses per range (another range is reserved when
        /// one is exhausted). At least the largest slice.
        range_size: u64,
        /// Bytes of mapped chunks no live slice touches that stay mapped,
        /// so an allocation landing there costs no driver call (CUDA memory
        /// pools' release threshold; [`DEFAULT_RELEASE_THRESHOLD`]: no
        /// limit until an explicit cleanup). Beyond it the oldest that may
        /// go (whole, their stream work complete) are unmapped and
        /// released. It does not raise peak physical memory much: idle
        /// chunks past 1/[`crate::IDLE_SHARE`] of the mapped ones are shed
        /// before a new chunk is created.
        release_threshold: u64,
    },
}

impl PoolType {
    /// Which kind of pool this configures (its name: [`PoolKind::name`]).
    pub fn kind(&self) -> PoolKind {
        match self {
            PoolType::SlicedPages { .. } => PoolKind::Sliced,
            PoolType::ExclusivePages { .. } => PoolKind::Exclusive,
            PoolType::VirtualArena { .. } => PoolKind::Arena,
        }
    }

    /// Pages split into many slices and coalesced on free (sliced pages and
    /// arenas).
    pub(crate) fn is_carved(self) -> bool {
        matches!(self, Self::SlicedPages { .. } | Self::VirtualArena { .. })
    }
}

/// The default release threshold of an arena: none — idle chunks stay
/// mapped until an explicit cleanup (`cleanup(true)`, the facade's
/// `reclaim` and its out-of-memory retry), as PyTorch's caching allocator
/// keeps its segments until `empty_cache`. Idle chunks past 1/16 of the
/// mapped ones are shed before physical memory grows (see
/// `pools/arena/chunks.rs`); what the cache buys is fewer driver calls. Set a
/// finite threshold where other processes need the memory back.
pub const DEFAULT_RELEASE_THRESHOLD: u64 = u64::MAX;

/// A resolved pool, in routing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolSpec {
    pub(crate) pool_type: PoolType,
    pub(crate) dealloc_period: Option<u64>,
    /// How a growable sliced pool sizes its next page.
    pub(crate) growth: Growth,
}

fn align_down(value: u64, alignment: u64) -> u64 {
    (value / alignment * alignment).max(alignment)
}

/// CubeCL's exclusive-pool period: longer-lived for larger pools.
fn default_period(size: u64) -> Option<u64> {
    Some(5000 * (1 + size.div_ceil(GIB)))
}

impl MemoryConfiguration {
    /// [`MemoryConfiguration::VirtualArenas`] with ranges of `range_size`
    /// bytes instead of 64 GiB (the gpumem facade sizes them at twice the
    /// device's memory, so one range holds everything).
    pub fn virtual_arenas(range_size: u64) -> Self {
        let arena = |max_slice_size| MemoryPoolOptions {
            pool_type: PoolType::VirtualArena {
                max_slice_size,
                range_size,
                release_threshold: DEFAULT_RELEASE_THRESHOLD,
            },
            dealloc_period: None,
        };
        Self::Custom {
            pool_options: vec![arena(range_size)],
        }
    }

    /// The dynamic pools of this layout for a device, in routing order.
    pub(crate) fn resolve(&self, properties: &MemoryDeviceProperties) -> Vec<PoolSpec> {
        let a = properties.effective_alignment();
        let max_page = properties.effective_max_page();
        let clamp_page = |p: u64| align_down(p.clamp(a, max_page), a);
        match self {
            Self::SubSlices => sub_slices::resolve(a, max_page),
            Self::ExclusivePages => {
                let (lo, hi) = ((32 * KIB).min(max_page) as f64, max_page as f64);
                let mut sizes: Vec<u64> = (0..24)
                    .map(|i| lo * (hi / lo).powf(i as f64 / 23.0))
                    .map(|s| (s as u64).div_ceil(a).saturating_mul(a).min(max_page))
                    .collect();
                sizes.dedup();
                sizes
                    .into_iter()
                    .map(|max_alloc_size| PoolSpec {
                        pool_type: PoolType::ExclusivePages { max_alloc_size },
                        dealloc_period: default_period(max_alloc_size),
                        growth: Growth::Doubling,
                    })
                    .collect()
            }
            Self::VirtualArenas => Self::virtual_arenas(64 * GIB).resolve(properties),
            Self::Custom { pool_options } => pool_options
                .iter()
                .map(|o| PoolSpec {
                    pool_type: match o.pool_type {
                        PoolType::SlicedPages {
                            page_size,
                            max_slice_size,
                        } => PoolType::SlicedPages {
                            page_size: clamp_page(page_size),
                            max_slice_size: max_slice_size.min(max_page),
                        },
                        PoolType::ExclusivePages { max_alloc_size } => PoolType::ExclusivePages {
                            max_alloc_size: max_alloc_size.min(max_page),
                        },
                        PoolType::VirtualArena {
                            max_slice_size,
                            range_size,
                            release_threshold,
                        } => {
                            let range_size = range_size.max(max_slice_size).max(a);
                            PoolType::VirtualArena {
                                max_slice_size: max_slice_size.min(range_size),
                                range_size,
                                release_threshold,
                            }
                        }
                    },
                    dealloc_period: o.dealloc_period,
                    growth: Growth::Doubling,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
