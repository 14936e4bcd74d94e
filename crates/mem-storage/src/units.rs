//! Byte units and the one byte formatter every crate above prints with.
//!
//! Binary units only: `KIB` … `TIB` are powers of 1024, and
//! [`format_bytes`] writes the largest binary unit that keeps the count at
//! least 1, with two decimals (`1.50 GiB`), or plain bytes below 1 KiB
//! (`512 B`).

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
    const UNITS: [(&str, u64); 5] = [
        ("PiB", PIB),
        ("TiB", TIB),
        ("GiB", GIB),
        ("MiB", MIB),
        ("KiB", KIB),
    ];
    match UNITS.into_iter().find(|&(_, scale)| bytes >= scale) {
        Some((unit, scale)) => format!("{:.2} {unit}", bytes as f64 / scale as f64),
        None => format!("{bytes} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
