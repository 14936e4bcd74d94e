//! The byte pattern the suites write and check.

/// The byte pattern written at `index` of allocation `tag`.
pub fn pattern(tag: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (tag.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}
