//! Pool layouts as text: what `--config` reads and `gpumem plan` writes.
//!
//! ```text
//! layout := "arenas" | "sub-slices" | "exclusive-pages" | pool ("," pool)*
//! pool   := "sliced:" SIZE "/" SIZE    page size / largest allocation it takes
//!         | "exclusive:" SIZE ["@" N]  largest allocation; free pages idle for
//!                                      N reservations go back on a periodic cleanup
//!         | "arena:" SIZE ["@" SIZE]   a virtual-memory arena: largest allocation
//!                                      (the range is at least 64 GiB and at least
//!                                      this) and its release threshold (128MiB)
//! SIZE   := digits [B | KiB | MiB | GiB | TiB]   (binary units, any case)
//! ```
//!
//! Pools route in the order written: a size goes to the first pool that
//! accepts it, so a pool whose largest allocation is not above every earlier
//! pool's could never serve and is refused. The persistent pool always
//! exists and is not written. [`format_layout`] writes the exact form
//! [`parse_layout`] reads back, so a measured plan replays as printed.

use mem_pools::{DEFAULT_RELEASE_THRESHOLD, MemoryConfiguration, MemoryPoolOptions, PoolType};

use crate::error::{CliError, Result};

/// What `--config` accepts, for error messages.
pub const LAYOUT_SYNTAX: &str = "expected `arenas`, `sub-slices`, `exclusive-pages`, or pools in \
     routing order separated by commas: `sliced:PAGE/MAX`, `exclusive:MAX[@PERIOD]` and \
     `arena:MAX[@THRESHOLD]`, sizes like \
     4096, 64KiB, 8MiB, 20GiB (e.g. `sliced:8MiB/64KiB,sliced:512MiB/5GiB,exclusive:20GiB`), \
     or a file holding one (such as `gpumem plan --json` output)";

const UNITS: [(&str, u32); 5] = [("tib", 40), ("gib", 30), ("mib", 20), ("kib", 10), ("b", 0)];

fn invalid(value: &str, reason: String) -> CliError {
    CliError::InvalidArgument {
        option: "--config",
        value: value.to_string(),
        reason: format!("{reason}; {LAYOUT_SYNTAX}"),
    }
}

fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    if number.is_empty() {
        return Err(format!("size `{text}` does not start with a whole number"));
    }
    let shift = match unit.trim() {
        "" => 0,
        u => UNITS
            .iter()
            .find(|(name, _)| *name == u)
            .map(|&(_, shift)| shift)
            .ok_or_else(|| {
                format!("size `{text}` has unknown unit `{u}` (use B, KiB, MiB, GiB or TiB)")
            })?,
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("size `{text}` does not start with a whole number"))?;
    let bytes = value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size `{text}` is too large"))?;
    if bytes == 0 {
        return Err(format!(
            "size `{text}` is zero; every pool needs a size above 0"
        ));
    }
    Ok(bytes)
}

fn parse_pool(text: &str) -> std::result::Result<MemoryPoolOptions, String> {
    let (kind, spec) = text
        .split_once(':')
        .ok_or_else(|| format!("pool `{text}` has no `kind:` prefix"))?;
    match kind.trim() {
        "sliced" => {
            let (page, max) = spec
                .split_once('/')
                .ok_or_else(|| format!("pool `{text}` needs `sliced:PAGE/MAX`"))?;
            Ok(MemoryPoolOptions {
                pool_type: PoolType::SlicedPages {
                    page_size: parse_size(page)?,
                    max_slice_size: parse_size(max)?,
                },
                dealloc_period: None,
            })
        }
        "exclusive" => {
            let (max, period) = match spec.split_once('@') {
                Some((max, period)) => {
                    let period: u64 = period.trim().parse().map_err(|_| {
                        format!("pool `{text}`: the period after `@` must be a whole number")
                    })?;
                    (max, Some(period))
                }
                None => (spec, None),
            };
            Ok(MemoryPoolOptions {
                pool_type: PoolType::ExclusivePages {
                    max_alloc_size: parse_size(max)?,
                },
                dealloc_period: period,
            })
        }
        "arena" => {
            let (max, threshold) = match spec.split_once('@') {
                Some((max, threshold)) => (max, parse_size(threshold)?),
                None => (spec, DEFAULT_RELEASE_THRESHOLD),
            };
            let max = parse_size(max)?;
            Ok(MemoryPoolOptions {
                pool_type: PoolType::VirtualArena {
                    max_slice_size: max,
                    range_size: max.max(ARENA_RANGE),
                    release_threshold: threshold,
                },
                dealloc_period: None,
            })
        }
        other => Err(format!(
            "pool `{text}` has unknown kind `{other}` (use `sliced`, `exclusive` or `arena`)"
        )),
    }
}

fn max_size(pool: &MemoryPoolOptions) -> u64 {
    match pool.pool_type {
        PoolType::SlicedPages { max_slice_size, .. } => max_slice_size,
        PoolType::ExclusivePages { max_alloc_size } => max_alloc_size,
        PoolType::VirtualArena { max_slice_size, .. } => max_slice_size,
    }
}

/// The least range of an `arena:` pool (the built-in `arenas` layout's).
const ARENA_RANGE: u64 = 64 << 30;

/// Whether `config` has a virtual-memory arena (its backend needs virtual memory).
pub fn uses_arenas(config: &MemoryConfiguration) -> bool {
    match config {
        MemoryConfiguration::VirtualArenas => true,
        MemoryConfiguration::Custom { pool_options } => pool_options
            .iter()
            .any(|p| matches!(p.pool_type, PoolType::VirtualArena { .. })),
        _ => false,
    }
}

/// Parses a pool layout written as the module docs describe.
///
/// # Errors
/// [`CliError::InvalidArgument`] for `--config`, naming what was wrong and
/// listing what is accepted.
pub fn parse_layout(text: &str) -> Result<MemoryConfiguration> {
    let trimmed = text.trim();
    match trimmed {
        "arenas" => return Ok(MemoryConfiguration::VirtualArenas),
        "sub-slices" => return Ok(MemoryConfiguration::SubSlices),
        "exclusive-pages" => return Ok(MemoryConfiguration::ExclusivePages),
        "" => return Err(invalid(text, "the layout is empty".to_string())),
        _ => {}
    }
    let mut pools: Vec<MemoryPoolOptions> = Vec::new();
    for (index, part) in trimmed.split(',').enumerate() {
        let pool = parse_pool(part.trim()).map_err(|reason| invalid(text, reason))?;
        if let Some(widest) = pools.iter().map(max_size).max()
            && max_size(&pool) <= widest
        {
            return Err(invalid(
                text,
                format!(
                    "pool {} (`{}`) could never serve: an earlier pool already takes every \
                     size up to {}; list pools from the smallest largest-allocation up",
                    index + 1,
                    part.trim(),
                    format_size(widest)
                ),
            ));
        }
        pools.push(pool);
    }
    Ok(MemoryConfiguration::Custom {
        pool_options: pools,
    })
}

/// `bytes` in the largest binary unit that writes it exactly (`3144MiB`).
pub fn format_size(bytes: u64) -> String {
    UNITS
        .iter()
        .find(|&&(_, shift)| shift > 0 && bytes >= 1 << shift && bytes.is_multiple_of(1 << shift))
        .map_or_else(
            || bytes.to_string(),
            |&(name, shift)| {
                let unit = match name {
                    "tib" => "TiB",
                    "gib" => "GiB",
                    "mib" => "MiB",
                    _ => "KiB",
                };
                format!("{}{unit}", bytes >> shift)
            },
        )
}

/// Writes `config` in the form [`parse_layout`] reads back.
pub fn format_layout(config: &MemoryConfiguration) -> String {
    match config {
        MemoryConfiguration::VirtualArenas => "arenas".to_string(),
        MemoryConfiguration::SubSlices => "sub-slices".to_string(),
        MemoryConfiguration::ExclusivePages => "exclusive-pages".to_string(),
        MemoryConfiguration::Custom { pool_options } => pool_options
            .iter()
            .map(|pool| match (pool.pool_type, pool.dealloc_period) {
                (
                    PoolType::SlicedPages {
                        page_size,
                        max_slice_size,
                    },
                    _,
                ) => {
                    format!(
                        "sliced:{}/{}",
                        format_size(page_size),
                        format_size(max_slice_size)
                    )
                }
                (PoolType::ExclusivePages { max_alloc_size }, None) => {
                    format!("exclusive:{}", format_size(max_alloc_size))
                }
                (PoolType::ExclusivePages { max_alloc_size }, Some(period)) => {
                    format!("exclusive:{}@{period}", format_size(max_alloc_size))
                }
                (
                    PoolType::VirtualArena {
                        max_slice_size,
                        release_threshold,
                        ..
                    },
                    _,
                ) => format!(
                    "arena:{}@{}",
                    format_size(max_slice_size),
                    format_size(release_threshold)
                ),
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
