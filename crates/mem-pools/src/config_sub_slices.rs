//! The paged default, [`SubSlices`](crate::MemoryConfiguration::SubSlices), resolved for a
//! device, and the growth rule its growable pool uses.
//!
//! The layout, and why (what each rule holds on the project's traces is
//! in docs/pools.md, "SubSlices"):
//! - A small sliced pool ([`SMALL_PAGE`] pages, slices up to 64 KiB) keeps
//!   metadata churn off the big pages. Its pages are 2 MiB, not CubeCL's
//!   8 MiB: small slices rarely fill 8 MiB, so a larger first page is
//!   mostly a fixed overhead (a Burn transformer's training on wgpu has at
//!   most 2.7 MiB of slices up to 64 KiB live).
//! - A growable sliced pool takes everything else up to
//!   [`SLICED_LIMIT`] (or the device's largest page, when smaller). Its pages
//!   grow to *fit* ([`Growth::Fit`]): the smallest whole number of MiB
//!   strictly larger than the allocation that outgrew them, not the next
//!   power of two. Doubling would size ResNet-18 training's pages at 32 MiB
//!   for a largest tensor of 24.5 MiB, leaving 7.5 MiB a page that its
//!   mid-size tensors fill badly. "Strictly larger" leaves room beside the
//!   largest tensor (GPT-2 training's 32 MiB tensors get 33 MiB pages).
//! - Exclusive pages above that, up to the device's largest page, only
//!   when the device allows pages larger than [`SLICED_LIMIT`]. Routing up to
//!   a quarter of the largest page instead would send serving's 256 MiB–1 GiB
//!   buffers to exclusive pages, reused only within a factor of two.

use mem_storage::units::{GIB, KIB, MIB};

use super::{PoolSpec, PoolType, align_down, default_period};

/// The largest allocation the growable pool takes when the device's largest
/// page is bigger; larger ones get exclusive pages (the synthetic training
/// workload's 1.5–3.1 GiB buffers: 1.038 × live all sliced, 1.027 with them
/// exclusive).
pub(crate) const SLICED_LIMIT: u64 = GIB;

/// The page size of the small pool (slices up to 64 KiB): PyTorch's small
/// segment, and the growable pool's first page.
pub(crate) const SMALL_PAGE: u64 = 2 * MIB;

/// The unit a fitted page is rounded up to (or the alignment, when larger).
pub(crate) const PAGE_GRANULE: u64 = MIB;

/// How a growable sliced pool sizes the page an allocation outgrew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Growth {
    /// The page size doubles until the allocation fits (custom layouts).
    Doubling,
    /// The smallest multiple of [`PAGE_GRANULE`] strictly larger than the
    /// allocation ([`SubSlices`](crate::MemoryConfiguration::SubSlices)).
    Fit,
}

impl Growth {
    /// The page a pool of `page_size` grows to for `needed` (aligned)
    /// bytes, capped by `max_page` (the caller refuses a result below
    /// `needed`).
    pub(crate) fn grown(self, page_size: u64, needed: u64, max_page: u64, alignment: u64) -> u64 {
        match self {
            Self::Doubling => {
                let mut size = page_size.max(1);
                while size < needed && size < max_page {
                    size = size.saturating_mul(2).min(max_page);
                }
                size
            }
            Self::Fit => {
                let granule = PAGE_GRANULE.max(alignment);
                needed
                    .saturating_add(1)
                    .div_ceil(granule)
                    .saturating_mul(granule)
                    .max(page_size)
                    .min(max_page)
            }
        }
    }
}

/// The pools of [`SubSlices`](crate::MemoryConfiguration::SubSlices) for a device of
/// alignment `a` whose largest page is `max_page` (both effective values).
pub(super) fn resolve(a: u64, max_page: u64) -> Vec<PoolSpec> {
    let clamp_page = |p: u64| align_down(p.clamp(a, max_page), a);
    let small_page = clamp_page(SMALL_PAGE);
    let mid_page = clamp_page(2 * MIB);
    let sliced_max = SLICED_LIMIT.min(max_page).max(mid_page);
    let mut pools = vec![
        PoolSpec {
            pool_type: PoolType::SlicedPages {
                page_size: small_page,
                max_slice_size: (64 * KIB).min(small_page),
            },
            dealloc_period: None,
            growth: Growth::Doubling,
        },
        PoolSpec {
            pool_type: PoolType::SlicedPages {
                page_size: mid_page,
                max_slice_size: sliced_max,
            },
            dealloc_period: None,
            growth: Growth::Fit,
        },
    ];
    if max_page > sliced_max {
        pools.push(PoolSpec {
            pool_type: PoolType::ExclusivePages {
                max_alloc_size: max_page,
            },
            dealloc_period: default_period(max_page),
            growth: Growth::Doubling,
        });
    }
    pools
}
