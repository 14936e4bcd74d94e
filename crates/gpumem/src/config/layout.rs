//! Pool layouts as text: the one grammar of `GPUMEM_CONF`'s `pools:` key,
//! `gpumem replay --config` and what `gpumem plan` writes.
//!
//! ```text
//! layout := auto | arenas | sub_slices | exclusive | sliced | pool ("," pool)*
//! pool   := sliced:SIZE/SIZE      page size / largest allocation it takes
//!         | exclusive:SIZE[@N]    largest allocation; a free page idle for N
//!                                 reservations goes back on a periodic cleanup
//!         | arena:SIZE[@SIZE]     a virtual-memory arena: largest allocation
//!                                 (its range is at least 64 GiB and at least
//!                                 this) and its release threshold (128MiB)
//! SIZE   := 4096 | 64KiB | 8MiB | 1.5GiB | 20GB   (crate::units::parse_bytes)
//! ```
//!
//! Words are matched in any case, with the older spellings as aliases
//! (`virtual_arenas`; `sub-slices`; `exclusive_pages`, `exclusive-pages`), so
//! a layout the `gpumem` command accepted before it spoke this grammar still
//! means the same. Pools route in the order written: a size goes to the
//! first pool that takes it, so a pool whose largest allocation is not above
//! every earlier pool's could never serve and is refused. The persistent
//! pool always exists and is not written. [`format_layout`] writes what
//! [`parse_layout`] reads back, so a measured plan replays as printed.
//!
//! One parser exists so that a layout measured with the command is the
//! layout a program gets from `GPUMEM_CONF=pools:…`; the parse is a pure
//! function of the text.

use mem_pools::{DEFAULT_RELEASE_THRESHOLD, MemoryPoolOptions, PoolType};

use super::{DEFAULT_SLICED, PoolKind, PoolLayout};
pub use crate::error::{LAYOUT_SYNTAX, LayoutError};
use crate::units::{GIB, parse_bytes};

/// The `kind:` prefixes of a pool in a list ([`PoolKind::IN_LAYOUTS`]' names).
pub const POOL_KINDS: [&str; 3] = [
    PoolKind::IN_LAYOUTS[0].name(),
    PoolKind::IN_LAYOUTS[1].name(),
    PoolKind::IN_LAYOUTS[2].name(),
];

/// The least range of an `arena:` pool (the `arenas` layout's least range).
const ARENA_RANGE: u64 = 64 * GIB;

fn parse_size(text: &str) -> Result<u64, String> {
    match parse_bytes(text) {
        Some(0) => Err(format!(
            "size `{}` is zero; every pool needs a size above 0",
            text.trim()
        )),
        Some(bytes) => Ok(bytes),
        None => Err(format!(
            "size `{}` is not a size (a whole or decimal number with an optional unit: \
             B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), or does not fit in 64 bits",
            text.trim()
        )),
    }
}

fn parse_pool(text: &str) -> Result<MemoryPoolOptions, String> {
    let (kind, spec) = text
        .split_once(':')
        .ok_or_else(|| format!("pool `{text}` has no `kind:` prefix"))?;
    let (pool_type, dealloc_period) = match PoolKind::from_word(kind) {
        Some(PoolKind::Sliced) => {
            let (page, max) = spec
                .split_once('/')
                .ok_or_else(|| format!("pool `{text}` needs `sliced:PAGE/MAX`"))?;
            let pool = PoolType::SlicedPages {
                page_size: parse_size(page)?,
                max_slice_size: parse_size(max)?,
            };
            (pool, None)
        }
        Some(PoolKind::Exclusive) => {
            let (max, period) = match spec.split_once('@') {
                Some((max, period)) => {
                    let period: u64 = period.trim().parse().map_err(|_| {
                        format!("pool `{text}`: the period after `@` must be a whole number")
                    })?;
                    (max, Some(period))
                }
                None => (spec, None),
            };
            let pool = PoolType::ExclusivePages {
                max_alloc_size: parse_size(max)?,
            };
            (pool, period)
        }
        Some(PoolKind::Arena) => {
            let (max, threshold) = match spec.split_once('@') {
                Some((max, threshold)) => (max, parse_size(threshold)?),
                None => (spec, DEFAULT_RELEASE_THRESHOLD),
            };
            let max = parse_size(max)?;
            let pool = PoolType::VirtualArena {
                max_slice_size: max,
                range_size: max.max(ARENA_RANGE),
                release_threshold: threshold,
            };
            (pool, None)
        }
        // The persistent pool always exists and is never written.
        Some(PoolKind::Persistent) | None => {
            let [a, b, c] = POOL_KINDS;
            return Err(format!(
                "pool `{text}` has unknown kind `{}` (use `{a}`, `{b}` or `{c}`)",
                kind.trim().to_ascii_lowercase()
            ));
        }
    };
    Ok(MemoryPoolOptions {
        pool_type,
        dealloc_period,
    })
}

fn max_size(pool: &MemoryPoolOptions) -> u64 {
    match pool.pool_type {
        PoolType::SlicedPages { max_slice_size, .. } => max_slice_size,
        PoolType::ExclusivePages { max_alloc_size } => max_alloc_size,
        PoolType::VirtualArena { max_slice_size, .. } => max_slice_size,
    }
}

/// The layouts a word names, in the order [`LAYOUT_WORDS`] lists them.
const NAMED_LAYOUTS: [PoolLayout; 5] = [
    PoolLayout::Auto,
    PoolLayout::Arenas,
    PoolLayout::SubSlices,
    PoolLayout::ExclusivePages,
    DEFAULT_SLICED,
];

/// The words that name a whole layout ([`PoolLayout::name`] of each named
/// layout), as [`parse_layout`] reads them; a typo's suggestion
/// (`gpumem replay --config`) is looked up here.
pub const LAYOUT_WORDS: [&str; 5] = [
    NAMED_LAYOUTS[0].name(),
    NAMED_LAYOUTS[1].name(),
    NAMED_LAYOUTS[2].name(),
    NAMED_LAYOUTS[3].name(),
    NAMED_LAYOUTS[4].name(),
];

/// The layout a word names (any case, older spellings included), if any.
fn named(word: &str) -> Option<PoolLayout> {
    let word = word.to_ascii_lowercase();
    let word = match word.as_str() {
        "virtual_arenas" => "arenas",
        "sub-slices" => "sub_slices",
        "exclusive_pages" | "exclusive-pages" => "exclusive",
        word => word,
    };
    NAMED_LAYOUTS
        .into_iter()
        .find(|layout| layout.name() == word)
}

/// Parses a pool layout written as the module docs describe.
///
/// # Errors
/// [`LayoutError`] naming what was wrong (an empty layout, a pool without a
/// `kind:`, an unknown kind, a bad or zero size, a pool that could never
/// serve) and listing what is accepted.
pub fn parse_layout(text: &str) -> Result<PoolLayout, LayoutError> {
    let invalid = |reason: String| LayoutError {
        text: text.to_string(),
        reason,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(invalid("the layout is empty".into()));
    }
    if let Some(layout) = named(trimmed) {
        return Ok(layout);
    }
    let mut pools: Vec<MemoryPoolOptions> = Vec::new();
    for (index, part) in trimmed.split(',').enumerate() {
        let pool = parse_pool(part.trim()).map_err(&invalid)?;
        if let Some(widest) = pools.iter().map(max_size).max()
            && max_size(&pool) <= widest
        {
            return Err(invalid(format!(
                "pool {} (`{}`) could never serve: an earlier pool already takes every \
                 size up to {}; list pools from the smallest largest-allocation up",
                index + 1,
                part.trim(),
                format_size(widest)
            )));
        }
        pools.push(pool);
    }
    Ok(PoolLayout::Pools(pools))
}

/// `bytes` in the largest binary unit that writes it exactly (`3144MiB`).
pub fn format_size(bytes: u64) -> String {
    [("TiB", 40u32), ("GiB", 30), ("MiB", 20), ("KiB", 10)]
        .into_iter()
        .find(|&(_, shift)| bytes >= 1 << shift && bytes.is_multiple_of(1 << shift))
        .map_or_else(
            || bytes.to_string(),
            |(unit, shift)| format!("{}{unit}", bytes >> shift),
        )
}

fn format_pool(pool: &MemoryPoolOptions) -> String {
    let kind = pool.pool_type.kind().name();
    match (pool.pool_type, pool.dealloc_period) {
        (
            PoolType::SlicedPages {
                page_size,
                max_slice_size,
            },
            _,
        ) => format!(
            "{kind}:{}/{}",
            format_size(page_size),
            format_size(max_slice_size)
        ),
        (PoolType::ExclusivePages { max_alloc_size }, None) => {
            format!("{kind}:{}", format_size(max_alloc_size))
        }
        (PoolType::ExclusivePages { max_alloc_size }, Some(period)) => {
            format!("{kind}:{}@{period}", format_size(max_alloc_size))
        }
        (
            PoolType::VirtualArena {
                max_slice_size,
                release_threshold,
                ..
            },
            _,
        ) => format!(
            "{kind}:{}@{}",
            format_size(max_slice_size),
            format_size(release_threshold)
        ),
    }
}

/// Writes `layout` in the form [`parse_layout`] reads back.
///
/// Two layouts have no text of their own and are written as the
/// `GPUMEM_CONF` items that rebuild them (which `gpumem replay --config`
/// also reads): `pools:sliced` with sizes other than its defaults
/// (`pools:sliced,page_size:…,max_slice:…`), and a `Custom` of one of
/// mem-pools' named configurations (written as its word).
pub fn format_layout(layout: &PoolLayout) -> String {
    match layout {
        PoolLayout::Sliced {
            page_size,
            max_slice,
        } if *layout != DEFAULT_SLICED => format!(
            "pools:sliced,page_size:{},max_slice:{}",
            format_size(*page_size),
            format_size(*max_slice)
        ),
        PoolLayout::Pools(pool_options) => pool_options
            .iter()
            .map(format_pool)
            .collect::<Vec<_>>()
            .join(","),
        other => other.name().into(),
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
