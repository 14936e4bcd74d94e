//! The values of `GPUMEM_CONF`'s keys: each parser returns the setting or
//! a [`GpuMemError::BadConfValue`] naming the key and what it accepts
//! (from [`CONF_KEYS`]).

use super::Budget;
use super::DEFAULT_POISON;
use super::conf_keys::CONF_KEYS;
use crate::error::{GpuMemError, Result};
use crate::units::parse_bytes;
use mem_storage::DriverCosts;

pub(super) fn valid_keys() -> String {
    CONF_KEYS
        .iter()
        .map(|(k, _, _)| *k)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn expected(key: &str) -> &'static str {
    CONF_KEYS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or("a valid value", |(_, values, _)| values)
}

pub(super) fn bad(key: &'static str, value: &str) -> GpuMemError {
    GpuMemError::BadConfValue {
        key,
        value: value.to_string(),
        expected: expected(key),
    }
}

pub(super) fn parse_bool(key: &'static str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        _ => Err(bad(key, value)),
    }
}

pub(super) fn parse_size(key: &'static str, value: &str) -> Result<u64> {
    parse_bytes(value)
        .filter(|&b| b > 0)
        .ok_or_else(|| bad(key, value))
}

/// `1/N` (N in 1..=1024) or `never` (0: the engine never sheds).
pub(super) fn parse_idle_share(value: &str) -> Result<u64> {
    if value.eq_ignore_ascii_case("never") {
        return Ok(0);
    }
    value
        .strip_prefix("1/")
        .and_then(|n| n.trim().parse::<u64>().ok())
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| bad("arena_idle_share", value))
}

pub(super) fn parse_budget(value: &str) -> Result<Budget> {
    let lower = value.to_ascii_lowercase();
    if lower == "unlimited" || lower == "none" {
        return Ok(Budget::Unlimited);
    }
    let fraction = if let Some(percent) = lower.strip_suffix('%') {
        percent.trim().parse::<f64>().ok().map(|p| p / 100.0)
    } else if lower.contains('.') && !lower.ends_with(|c: char| c.is_ascii_alphabetic()) {
        lower.parse::<f64>().ok()
    } else {
        None
    };
    match fraction {
        Some(f) if f > 0.0 && f <= 1.0 => Ok(Budget::Fraction(f)),
        Some(_) => Err(bad("budget", value)),
        None => parse_size("budget", value).map(Budget::Bytes),
    }
}

pub(super) fn parse_poison(value: &str) -> Result<Option<u8>> {
    let lower = value.to_ascii_lowercase();
    match lower.as_str() {
        "on" | "true" | "1" => return Ok(Some(DEFAULT_POISON)),
        "off" | "false" | "0" => return Ok(None),
        _ => {}
    }
    let byte = match lower.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => lower.parse::<u8>().ok(),
    };
    byte.map(Some).ok_or_else(|| bad("poison", value))
}

/// `a100`, `a100-per-call`, `a100-per-byte`, `zero`, or `key=latency`
/// entries over the A100 table.
pub(super) fn parse_driver_costs(value: &str) -> Result<DriverCosts> {
    if let Some(split) = mem_storage::CostSplit::from_name(value) {
        return Ok(split.a100());
    }
    match value.to_ascii_lowercase().as_str() {
        "default" => return Ok(DriverCosts::A100),
        "zero" | "off" | "none" => return Ok(DriverCosts::ZERO),
        _ => {}
    }
    let mut costs = DriverCosts::A100;
    costs
        .apply_entries(value)
        .map_err(|source| GpuMemError::BadConfValue {
            key: "driver_cost",
            value: match source {
                mem_storage::StorageError::BadDriverCost { entry, .. } => entry,
                other => other.to_string(),
            },
            expected: expected("driver_cost"),
        })?;
    Ok(costs)
}

/// `share`: `off`, `posix_fd`, or `fabric` (FABRIC beside the POSIX fd).
pub(super) fn parse_share(value: &str) -> Result<Option<mem_storage::ShareHandles>> {
    let fd = mem_storage::ShareHandles::POSIX_FD;
    match value.to_ascii_lowercase().as_str() {
        "off" | "none" => Ok(None),
        "posix_fd" | "fd" => Ok(Some(fd)),
        "fabric" => Ok(Some(mem_storage::ShareHandles { fabric: true, ..fd })),
        _ => Err(bad("share", value)),
    }
}
