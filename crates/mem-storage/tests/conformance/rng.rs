//! A tiny deterministic generator, so the suite needs no dependency and
//! every failure reproduces from its seed.

/// SplitMix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max`.
    pub fn up_to(&mut self, max: u64) -> u64 {
        self.next_u64() % (max + 1)
    }

    /// True with probability `percent` %.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// The byte pattern written at `index` of allocation `tag`.
pub fn pattern(tag: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (tag.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}
