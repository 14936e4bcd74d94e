//! Everything a user needs to see, as values: usage, per-pool reports with
//! high-water marks, statistics, and their `Display` forms.
//!
//! The measured-plan cycle: install a layout (`install_pools` resets the
//! dynamic pools' marks), run a pass (lazily, with `lazy_pages`, to cost no
//! memory), read each pool's `peak_pages` / `peak_bytes_reserved` here, and
//! install a layout sized to them. The marks cover everything since the
//! pools were (re)built; the persistent pool's marks are never reset.

use std::fmt;

use mem_storage::units::format_bytes as b;

use crate::pool_kind::PoolKind;
use crate::report::usage::MemoryUsage;

/// The kind and shape of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolReportKind {
    /// Sliced pages.
    Sliced {
        /// Current page size.
        page_size: u64,
        /// Largest allocation accepted.
        max_slice_size: u64,
        /// Pages left behind by page-size growth.
        outdated_pages: usize,
    },
    /// One allocation per page.
    Exclusive {
        /// Largest allocation accepted.
        max_alloc_size: u64,
    },
    /// Exact-fit persistent slices.
    Persistent,
    /// A virtual-memory arena: `bytes_reserved` is its mapped chunks.
    Arena {
        /// Bytes of addresses per range (`pages` counts ranges).
        range_size: u64,
        /// Largest allocation accepted.
        max_slice_size: u64,
        /// Idle chunks kept mapped up to this many bytes.
        release_threshold: u64,
        /// Bytes of mapped chunks no live slice touches (within `bytes_reserved`).
        cached_bytes: u64,
    },
}

/// One pool's shape, usage and high-water marks.
///
/// Serialized (feature `serde`) as a pool line of `gpumem replay --json`:
/// `pool` (the kind and shape as [`PoolReportKind`]'s `Display` writes
/// it), `pages`, `pages_with_live_data`, `bytes_in_use`, `bytes_reserved`
/// and the two peaks; the other fields stay in the text report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PoolReport {
    /// Kind and shape.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "pool", serialize_with = "serialize_display")
    )]
    pub kind: PoolReportKind,
    /// Pages held.
    pub pages: u64,
    /// Pages with an id but no storage memory yet (lazy).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub pages_unmapped: u64,
    /// Pages holding at least one live allocation. `pages -
    /// pages_with_live_data` pages hold nothing live (cached for reuse, or
    /// holding only quarantined bytes).
    pub pages_with_live_data: u64,
    /// Live slices.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub slices: u64,
    /// Requested bytes of live slices.
    pub bytes_in_use: u64,
    /// Padding of live slices.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub bytes_padding: u64,
    /// Bytes of pages held.
    pub bytes_reserved: u64,
    /// Most requested bytes live at once since the pool was built.
    pub peak_bytes_in_use: u64,
    /// Most page bytes held at once since the pool was built.
    pub peak_bytes_reserved: u64,
    /// Most pages held at once since the pool was built.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub peak_pages: u64,
    /// Largest allocation served (requested bytes).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub largest_alloc: u64,
    /// Largest free slice that can serve a reservation now.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub largest_free_block: u64,
}

/// Per-pool reports in routing order, the persistent pool last.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MemoryReport {
    /// Dynamic pools in routing order, then the persistent pool.
    pub pools: Vec<PoolReport>,
    /// Usage summed over every pool.
    pub usage: MemoryUsage,
}

impl PoolReportKind {
    /// Which kind of pool this is (its name: [`PoolKind::name`]).
    pub fn kind(&self) -> PoolKind {
        match self {
            PoolReportKind::Sliced { .. } => PoolKind::Sliced,
            PoolReportKind::Exclusive { .. } => PoolKind::Exclusive,
            PoolReportKind::Arena { .. } => PoolKind::Arena,
            PoolReportKind::Persistent => PoolKind::Persistent,
        }
    }
}

/// The kind and shape in one line, as the replay report names a pool:
/// `sliced(256.00 MiB pages, slices ≤ 128.00 MiB)`, `exclusive(≤ 1.00 GiB)`,
/// `persistent`, `arena(64.00 GiB range, slices ≤ 64.00 GiB)`.
///
/// ```
/// use mem_pools::PoolReportKind;
/// let kind = PoolReportKind::Exclusive { max_alloc_size: 1 << 30 };
/// assert_eq!(kind.to_string(), "exclusive(≤ 1.00 GiB)");
/// ```
impl fmt::Display for PoolReportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.kind().name();
        match *self {
            PoolReportKind::Sliced {
                page_size,
                max_slice_size,
                ..
            } => write!(
                f,
                "{name}({} pages, slices ≤ {})",
                b(page_size),
                b(max_slice_size)
            ),
            PoolReportKind::Exclusive { max_alloc_size } => {
                write!(f, "{name}(≤ {})", b(max_alloc_size))
            }
            PoolReportKind::Persistent => f.write_str(name),
            PoolReportKind::Arena {
                max_slice_size,
                range_size,
                ..
            } => write!(
                f,
                "{name}({} range, slices ≤ {})",
                b(range_size),
                b(max_slice_size)
            ),
        }
    }
}

/// Serializes a value as its `Display` text.
#[cfg(feature = "serde")]
fn serialize_display<S: serde::Serializer>(
    value: &impl fmt::Display,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "memory: {}", self.usage)?;
        for (i, p) in self.pools.iter().enumerate() {
            let name = p.kind.kind().name();
            let shape = match p.kind {
                PoolReportKind::Sliced {
                    page_size,
                    max_slice_size,
                    outdated_pages,
                } => format!(
                    "(page {}, max slice {}, {outdated_pages} outdated)",
                    b(page_size),
                    b(max_slice_size)
                ),
                PoolReportKind::Exclusive { max_alloc_size } => {
                    format!("(max {})", b(max_alloc_size))
                }
                PoolReportKind::Persistent => String::new(),
                PoolReportKind::Arena {
                    range_size,
                    max_slice_size,
                    cached_bytes,
                    ..
                } => format!(
                    // The range is reserved while the arena holds memory
                    // (its page below), released when it holds none.
                    "(range of {} while in use, max slice {}, {} cached)",
                    b(range_size),
                    b(max_slice_size),
                    b(cached_bytes)
                ),
            };
            writeln!(
                f,
                "  pool {i} {name}{shape}: {} slices, {} in use, {} reserved in {} pages ({} unmapped); \
                 peak {} in use, {} reserved, {} pages; largest free {}",
                p.slices,
                b(p.bytes_in_use),
                b(p.bytes_reserved),
                p.pages,
                p.pages_unmapped,
                b(p.peak_bytes_in_use),
                b(p.peak_bytes_reserved),
                p.peak_pages,
                b(p.largest_free_block)
            )?;
        }
        Ok(())
    }
}
