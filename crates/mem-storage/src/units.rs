//! Byte units and the one byte formatter every crate above prints with.
//!
//! Binary units only: `KIB` … `TIB` are powers of 1024, and
//! [`format_bytes`] writes the largest binary unit that keeps the count at
//! least 1, with two decimals (`1.50 GiB`), or plain bytes below 1 KiB
//! (`512 B`); [`format_bytes_approx`] (three significant digits) and
//! [`format_bytes_exact`] (the largest unit that divides) are its other
//! two forms, and [`binary_unit`] the unit all three choose. [`parse_bytes`]
//! reads sizes back, in the binary and the decimal units people write.

/// 1 KiB.
pub const KIB: u64 = 1 << 10;
/// 1 MiB.
pub const MIB: u64 = 1 << 20;
/// 1 GiB.
pub const GIB: u64 = 1 << 30;
/// 1 TiB.
pub const TIB: u64 = 1 << 40;
/// 1 PiB.
pub const PIB: u64 = 1 << 50;

/// `bytes` with the largest binary unit that keeps the count ≥ 1
/// (`1.50 GiB`, `80.00 GiB`, `512 B`), up to PiB.
///
/// ```
/// use mem_storage::units::{GIB, format_bytes};
/// assert_eq!(format_bytes(3 * GIB / 2), "1.50 GiB");
/// assert_eq!(format_bytes(512), "512 B");
/// ```
pub fn format_bytes(bytes: u64) -> String {
    match binary_unit(bytes, PIB) {
        ("B", _) => format!("{bytes} B"),
        (unit, scale) => format!("{:.2} {unit}", bytes as f64 / scale as f64),
    }
}

/// The binary units, largest first.
const UNITS: [(&str, u64); 5] = [
    ("PiB", PIB),
    ("TiB", TIB),
    ("GiB", GIB),
    ("MiB", MIB),
    ("KiB", KIB),
];

/// The unit [`format_bytes`] writes `bytes` in, with its size: the largest
/// binary unit of at most `largest` bytes that keeps the count ≥ 1, or
/// `("B", 1)` below 1 KiB. A plot scales its axis by it.
///
/// ```
/// use mem_storage::units::{GIB, MIB, PIB, binary_unit};
/// assert_eq!(binary_unit(3 * MIB, PIB), ("MiB", MIB));
/// assert_eq!(binary_unit(5 << 40, GIB), ("GiB", GIB));
/// assert_eq!(binary_unit(100, PIB), ("B", 1));
/// ```
pub fn binary_unit(bytes: u64, largest: u64) -> (&'static str, u64) {
    UNITS
        .into_iter()
        .filter(|&(_, scale)| scale <= largest)
        .find(|&(_, scale)| bytes >= scale)
        .unwrap_or(("B", 1))
}

/// `bytes` to three significant digits in the unit of [`binary_unit`]
/// (`1.50 GiB`, `712 MiB`, `96.0 KiB`, `512 B`): for tables, where the
/// column reads at a glance.
///
/// ```
/// use mem_storage::units::{GIB, MIB, format_bytes_approx};
/// assert_eq!(format_bytes_approx(3 * GIB / 2, GIB), "1.50 GiB");
/// assert_eq!(format_bytes_approx(712 * MIB, GIB), "712 MiB");
/// ```
pub fn format_bytes_approx(bytes: u64, largest: u64) -> String {
    match binary_unit(bytes, largest) {
        ("B", _) => format!("{bytes} B"),
        (unit, scale) => match bytes as f64 / scale as f64 {
            v if v >= 100.0 => format!("{v:.0} {unit}"),
            v if v >= 10.0 => format!("{v:.1} {unit}"),
            v => format!("{v:.2} {unit}"),
        },
    }
}

/// `bytes` exactly, in the largest binary unit of at most `largest` bytes
/// that divides it (`2 GiB`, `1536 MiB`, `96 KiB`, `1000 B`): for sizes a
/// user typed or a layout names.
///
/// ```
/// use mem_storage::units::{GIB, MIB, format_bytes_exact};
/// assert_eq!(format_bytes_exact(2 * GIB, GIB), "2 GiB");
/// assert_eq!(format_bytes_exact(1536 * MIB, GIB), "1536 MiB");
/// assert_eq!(format_bytes_exact(1000, GIB), "1000 B");
/// ```
pub fn format_bytes_exact(bytes: u64, largest: u64) -> String {
    UNITS
        .into_iter()
        .filter(|&(_, scale)| scale <= largest)
        .find(|&(_, scale)| bytes >= scale && bytes.is_multiple_of(scale))
        .map_or_else(
            || format!("{bytes} B"),
            |(unit, scale)| format!("{} {unit}", bytes / scale),
        )
}

/// The units [`parse_bytes`] reads, lower case.
const PARSED_UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("kib", KIB),
    ("mib", MIB),
    ("gib", GIB),
    ("tib", TIB),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("k", KIB),
    ("m", MIB),
    ("g", GIB),
    ("t", TIB),
];

/// Parse a byte size such as `8GiB`, `512MiB`, `4096` or `1.5GB`: the one
/// byte parser (configuration values, layouts, driver cost tables).
///
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`, or `K`, `M`, `G`, `T`) are
/// powers of 1024 and decimal units (`KB`, `MB`, `GB`, `TB`) powers of 1000,
/// as on a drive label; a bare number (or `B`) is bytes. Units are matched
/// case-insensitively, so `8gib` is `8GiB`. A fractional count is allowed
/// (`1.5GiB`) and rounded down to whole bytes.
///
/// Returns `None` for an empty string, an unknown unit, a negative or
/// non-numeric count, or a size that does not fit in `u64`.
///
/// ```
/// use mem_storage::units::{GIB, MIB, parse_bytes};
/// assert_eq!(parse_bytes("1.5GiB"), Some(3 * GIB / 2));
/// assert_eq!(parse_bytes("512 mib"), Some(512 * MIB));
/// assert_eq!(parse_bytes("2GB"), Some(2_000_000_000));
/// assert_eq!(parse_bytes("MiB"), None);
/// ```
pub fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let scale = if unit.is_empty() {
        1
    } else {
        PARSED_UNITS.iter().find(|(name, _)| *name == unit)?.1
    };
    if number.is_empty() {
        return None;
    }
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(scale);
    }
    let value: f64 = number.parse().ok()?;
    let bytes = value * scale as f64;
    // 2^64 itself is not representable in u64; anything at or above it overflows.
    (0.0..18_446_744_073_709_551_616.0)
        .contains(&bytes)
        .then_some(bytes.floor() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_decimal_units_scale_as_labelled() {
        assert_eq!(parse_bytes("8GiB"), Some(8 * GIB));
        assert_eq!(parse_bytes("512 MiB"), Some(512 * MIB));
        assert_eq!(parse_bytes("64kib"), Some(64 * KIB));
        assert_eq!(parse_bytes("2GB"), Some(2_000_000_000));
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("7B"), Some(7));
        assert_eq!(parse_bytes("1.5GiB"), Some(3 * GIB / 2));
    }

    #[test]
    fn garbage_negative_and_overflowing_sizes_are_refused() {
        for bad in [
            "",
            "GiB",
            "-1",
            "8 parsecs",
            "1.2.3",
            "99999999999TiB",
            "1e3",
        ] {
            assert_eq!(parse_bytes(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bytes_are_printed_with_the_largest_binary_unit_that_keeps_a_whole_count() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(KIB), "1.00 KiB");
        assert_eq!(format_bytes(3 << 29), "1.50 GiB");
        assert_eq!(format_bytes(80 * GIB), "80.00 GiB");
        assert_eq!(format_bytes(2 * MIB), "2.00 MiB");
        assert_eq!(format_bytes(3 * PIB), "3.00 PiB");
        assert_eq!(format_bytes(u64::MAX), "16384.00 PiB");
    }

    #[test]
    fn the_approximate_and_exact_forms_stop_at_the_largest_unit_asked_for() {
        assert_eq!(format_bytes_approx(0, GIB), "0 B");
        assert_eq!(format_bytes_approx(96 * KIB, GIB), "96.0 KiB");
        assert_eq!(format_bytes_approx(2 * TIB, GIB), "2048 GiB");
        assert_eq!(format_bytes_approx(2 * TIB, PIB), "2.00 TiB");
        assert_eq!(format_bytes_exact(0, GIB), "0 B");
        assert_eq!(format_bytes_exact(3 * KIB + 1, GIB), "3073 B");
        assert_eq!(format_bytes_exact(2 * TIB, GIB), "2048 GiB");
        assert_eq!(binary_unit(KIB - 1, GIB), ("B", 1));
        assert_eq!(binary_unit(u64::MAX, MIB), ("MiB", MIB));
    }
}
