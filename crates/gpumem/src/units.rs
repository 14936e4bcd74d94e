//! Byte sizes written the way people write them: `8GiB`, `512 MiB`, `1.5GB`.
//!
//! Binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024 and decimal
//! units (`KB`, `MB`, `GB`, `TB`) powers of 1000, as on a drive label; a bare
//! number (or `B`) is bytes. Units are matched case-insensitively, so `8gib`
//! is `8GiB`. A fractional count is allowed with a unit (`1.5GiB`) and rounded
//! down to whole bytes. Parsing is a pure function: no environment, no device.
//!
//! The constants and [`format_bytes`] are mem-storage's (`mem_storage::units`),
//! the one place every crate prints bytes from; parsing is the facade's.

pub use mem_storage::units::{GIB, KIB, MIB, PIB, TIB, format_bytes};

const UNITS: &[(&str, u64)] = &[
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

/// Parse a byte size such as `8GiB`, `512MiB`, `4096` or `1.5GB`.
///
/// Returns `None` for an empty string, an unknown unit, a negative or
/// non-numeric count, or a size that does not fit in `u64`.
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
        UNITS.iter().find(|(name, _)| *name == unit)?.1
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
    fn formatting_picks_the_largest_unit_that_keeps_a_whole_count() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 * GIB / 2), "1.50 GiB");
        assert_eq!(format_bytes(2 * MIB), "2.00 MiB");
    }
}
