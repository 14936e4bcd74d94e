//! Reading the table's text form back: `96.66us+96.66us/2MiB`, and
//! `create=…,map=…` lists of them (what `Display` writes, what a GPU run
//! prints, what `GPUMEM_CONF driver_cost:` takes).

use crate::driver_cost::table::{COST_GRANULE, DriverCall, DriverCosts, Latency};
use crate::error::StorageError;
use crate::units::parse_bytes;

/// What a latency or a table entry accepts, for error messages.
pub const LATENCY_GRAMMAR: &str = "a time per call with an optional part per size, \
     e.g. 1.45us, 20us+86us/2MiB, 500ns+40ns/KiB (units: ns, us, ms; sizes: B, KiB, MiB, GiB)";

/// What an entry accepts: a key of the table, `=`, a latency.
pub const ENTRY_GRAMMAR: &str = "key=latency with a key among create, map, set_access, unmap, \
     release, address_reserve, address_free, alloc, free, alloc_async, free_async, \
     stream_sync, device_sync, event_record, event_query";

/// `1.45us`, `250ns`, `1ms` in ns, rounded.
fn parse_time(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("us").or_else(|| text.strip_suffix("µs")) {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e6)
    } else {
        return None;
    };
    let value: f64 = number.trim().parse().ok()?;
    let ns = (value * scale).round();
    (value.is_finite() && value >= 0.0 && ns <= u64::MAX as f64).then_some(ns as u64)
}

/// `2MiB`, `MiB` (one of it), `4096B`: a positive size in bytes, read by
/// the one byte parser.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let bytes = match text.chars().next() {
        None => None,
        Some(c) if c.is_ascii_digit() || c == '.' => parse_bytes(text),
        // A bare unit, as in `86us/MiB`: one of it.
        Some(_) => parse_bytes(&format!("1{text}")),
    };
    bytes.filter(|&b| b > 0)
}

impl Latency {
    /// Read `fixed[+time/size]`, e.g. `1.45us` or `20us+86us/2MiB`; the
    /// per-size part is converted to ns per 2 MiB. `None` when malformed.
    pub fn parse(text: &str) -> Option<Latency> {
        let (fixed, sized) = match text.split_once('+') {
            Some((fixed, sized)) => (fixed, Some(sized)),
            None => (text, None),
        };
        let fixed_ns = parse_time(fixed)?;
        let per_granule_ns = match sized {
            None => 0,
            Some(sized) => {
                let (time, size) = sized.split_once('/')?;
                let ns = parse_time(time)? as u128;
                let bytes = parse_size(size)? as u128;
                let per = ns * COST_GRANULE as u128 / bytes;
                u64::try_from(per).ok()?
            }
        };
        Some(Latency::sized(fixed_ns, per_granule_ns))
    }
}

impl DriverCosts {
    /// Apply one `key=latency` entry, e.g. `map=1.2us`.
    ///
    /// # Errors
    /// [`StorageError::BadDriverCost`] naming the entry and what is valid
    /// (every key, or the latency grammar); the table is unchanged.
    pub fn apply_entry(&mut self, entry: &str) -> Result<DriverCall, StorageError> {
        let bad = |expected| StorageError::BadDriverCost {
            entry: entry.to_string(),
            expected,
        };
        let (key, value) = entry.split_once('=').ok_or_else(|| bad(ENTRY_GRAMMAR))?;
        let call = DriverCall::from_key(key.trim()).ok_or_else(|| bad(ENTRY_GRAMMAR))?;
        let latency = Latency::parse(value).ok_or_else(|| bad(LATENCY_GRAMMAR))?;
        self.set(call, latency);
        Ok(call)
    }

    /// Apply comma-separated `key=latency` entries (what `Display` writes).
    ///
    /// # Errors
    /// The first bad entry's [`StorageError::BadDriverCost`]; the table is
    /// unchanged.
    pub fn apply_entries(&mut self, text: &str) -> Result<(), StorageError> {
        let mut next = *self;
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            next.apply_entry(entry)?;
        }
        *self = next;
        Ok(())
    }
}
