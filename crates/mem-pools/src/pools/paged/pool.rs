//! A pool: its kind, its pages (current and outdated), its free index and
//! its usage counters with high-water marks.
//!
//! Kinds:
//! - **sliced**: pages of the pool's current page size, split into aligned
//!   slices and coalesced on free. A sliced pool whose `max_slice` exceeds its
//!   page size *grows*: an allocation that does not fit a page doubles the page
//!   size, or for the paged default fits it (see `Growth`; capped by the
//!   device's largest page) and the older pages become
//!   *outdated* — they serve no new reservation and go back to the storage as
//!   soon as they empty (or when relocation empties them). A pool holds at
//!   most [`MAX_PAGE_SIZES`] page sizes at once;
//! - **exclusive**: one allocation per page; a free page is reused for a
//!   request it fits within a factor of two, else a page of the request's
//!   aligned size is allocated;
//!
//! The persistent pool (`pools/persistent.rs`) keeps its pages in a `Pool`
//! too, with an exact-fit free index.

use std::collections::BTreeMap;

use crate::config::{Growth, PoolSpec, PoolType};
use crate::pools::paged::free_index::FreeIndex;
use crate::report::pools::PoolReportKind;

/// The most page sizes (the current one plus outdated ones still holding
/// pages) a growable sliced pool keeps alive at once.
pub const MAX_PAGE_SIZES: usize = 8;

/// Usage of a pool, kept current on every change, with high-water marks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) slices: u64,
    pub(crate) bytes_in_use: u64,
    pub(crate) bytes_padding: u64,
    pub(crate) bytes_reserved: u64,
    pub(crate) pages: u64,
    /// Pages holding at least one live slice (kept on every occupy / free).
    pub(crate) live_pages: u64,
    pub(crate) pages_unmapped: u64,
    pub(crate) peak_bytes_in_use: u64,
    pub(crate) peak_bytes_reserved: u64,
    pub(crate) peak_pages: u64,
    pub(crate) largest_alloc: u64,
}

impl Usage {
    /// Raise every peak to its count now.
    pub(crate) fn mark(&mut self) {
        self.peak_bytes_in_use = self.peak_bytes_in_use.max(self.bytes_in_use);
        self.peak_bytes_reserved = self.peak_bytes_reserved.max(self.bytes_reserved);
        self.peak_pages = self.peak_pages.max(self.pages);
    }

    /// Raise the bytes-in-use peak, after a change to the bytes in use
    /// only (an occupied slice): the reserved-bytes and page peaks are
    /// marked wherever their counts grow (a new page, mapped chunks), so
    /// they are current already.
    #[inline]
    pub(crate) fn mark_in_use(&mut self) {
        self.peak_bytes_in_use = self.peak_bytes_in_use.max(self.bytes_in_use);
    }
}

#[derive(Debug)]
pub(crate) struct Pool {
    /// What the layout asked for, as resolved (the persistent pool:
    /// exclusive pages of any size, see `PersistentPool`).
    pub(crate) kind: PoolType,
    /// Current page size (sliced pools; 0 for the others).
    pub(crate) page_size: u64,
    /// How a growable sliced pool sizes its next page.
    pub(crate) growth: Growth,
    pub(crate) dealloc_period: Option<u64>,
    pub(crate) next_age_check: u64,
    /// Pages serving reservations.
    pub(crate) current: Vec<u32>,
    /// Pages left behind by page-size growth.
    pub(crate) outdated: Vec<u32>,
    /// Page size → outdated pages of that size.
    pub(crate) outdated_sizes: BTreeMap<u64, usize>,
    pub(crate) index: FreeIndex,
    pub(crate) usage: Usage,
    /// Some page of this pool has a slice-start index (built by an
    /// extent lookup, `extent.rs`): until then split and coalesce skip
    /// the page's lookup for one.
    pub(crate) has_starts: bool,
}

impl Pool {
    pub(crate) fn from_spec(spec: &PoolSpec) -> Self {
        let page_size = match spec.pool_type {
            PoolType::SlicedPages { page_size, .. } => page_size,
            PoolType::ExclusivePages { .. } => 0,
            PoolType::VirtualArena { range_size, .. } => range_size,
        };
        let index = FreeIndex::segregated();
        let mut pool = Self::new(spec.pool_type, page_size, spec.dealloc_period, index);
        pool.growth = spec.growth;
        pool
    }

    /// A pool of `kind` with no pages, finding free slices with `index`.
    pub(crate) fn new(
        kind: PoolType,
        page_size: u64,
        dealloc_period: Option<u64>,
        index: FreeIndex,
    ) -> Self {
        Self {
            kind,
            page_size,
            growth: Growth::Doubling,
            dealloc_period,
            next_age_check: dealloc_period.map_or(u64::MAX, |p| (p / 5).max(1)),
            current: Vec::new(),
            outdated: Vec::new(),
            outdated_sizes: BTreeMap::new(),
            index,
            usage: Usage::default(),
            has_starts: false,
        }
    }

    /// The largest requested size this pool serves.
    pub(crate) fn max_size(&self) -> u64 {
        match self.kind {
            PoolType::SlicedPages { max_slice_size, .. } => max_slice_size,
            PoolType::ExclusivePages { max_alloc_size } => max_alloc_size,
            PoolType::VirtualArena { max_slice_size, .. } => max_slice_size,
        }
    }
    /// A pool of sliced pages: the one kind whose pages grow (relocation
    /// plans for its next page size) and whose sparse current pages
    /// compaction empties into room its other pages hold. Exclusive pages
    /// hold one slice each; arenas never move memory.
    #[inline]
    pub(crate) fn is_sliced(&self) -> bool {
        matches!(self.kind, PoolType::SlicedPages { .. })
    }

    /// This pool's line of the report, by kind (`cached`: an arena pool's
    /// idle and cached chunk bytes, asked only of an arena). The persistent
    /// pool reports as itself (`report.rs` tells it apart).
    pub(crate) fn report_kind(&self, cached: impl FnOnce(&Pool) -> u64) -> PoolReportKind {
        match self.kind {
            PoolType::SlicedPages { max_slice_size, .. } => PoolReportKind::Sliced {
                page_size: self.page_size,
                max_slice_size,
                outdated_pages: self.outdated.len(),
            },
            PoolType::ExclusivePages { max_alloc_size } => {
                PoolReportKind::Exclusive { max_alloc_size }
            }
            PoolType::VirtualArena {
                max_slice_size,
                release_threshold,
                ..
            } => PoolReportKind::Arena {
                range_size: self.page_size,
                max_slice_size,
                release_threshold,
                cached_bytes: cached(self),
            },
        }
    }

    /// Page sizes alive: the current one plus each outdated size.
    pub(crate) fn page_sizes_alive(&self) -> usize {
        self.outdated_sizes.len() + 1
    }

    /// Whether growing once more would exceed [`MAX_PAGE_SIZES`].
    pub(crate) fn out_of_page_sizes(&self) -> bool {
        matches!(self.kind, PoolType::SlicedPages { max_slice_size, .. } if max_slice_size > self.page_size)
            && self.page_sizes_alive() >= MAX_PAGE_SIZES
    }

    /// The page size the next growth would use for `needed` (aligned)
    /// bytes: see [`Growth`].
    pub(crate) fn grown_page_size(&self, needed: u64, max_page: u64, alignment: u64) -> u64 {
        self.growth
            .grown(self.page_size, needed, max_page, alignment)
    }
}
