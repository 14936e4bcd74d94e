//! Seeded size mixes and churn plans shared by every peer.
//!
//! Each peer must see the very same sequence, or the comparison measures the
//! sequence rather than the allocator. A [`ChurnPlan`] is therefore data:
//! the sizes of the initial live set, then a list of `(slot, size)` steps,
//! all drawn from a seeded [`SmallRng`] before any clock starts (the
//! workspace's `Cargo.lock` pins `rand`, so a sequence only changes when
//! that pin is upgraded).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How request sizes are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeMix {
    /// Every request is this many bytes.
    Fixed(u64),
    /// Log-uniform between `min` and `max` bytes (both ≥ 1): as many
    /// requests per octave, the shape of tensor-size histograms.
    LogUniform {
        /// Smallest size.
        min: u64,
        /// Largest size.
        max: u64,
    },
}

impl SizeMix {
    /// The mix of the depth measurements: 64 B to 4 KiB, log-uniform
    /// (≈ 1 KiB average, so a million live slices fit a laptop's memory
    /// even for the system allocator, which touches what it hands out).
    pub const DEPTH: SizeMix = SizeMix::LogUniform { min: 64, max: 4096 };

    /// One size.
    pub fn draw(&self, rng: &mut SmallRng) -> u64 {
        match *self {
            SizeMix::Fixed(size) => size,
            SizeMix::LogUniform { min, max } => {
                let (lo, hi) = (min.max(1), max.max(min.max(1)));
                let octaves = 63 - u64::from((hi / lo).leading_zeros());
                let octave = rng.random_range(0..octaves.max(1));
                let base = lo << octave;
                (base + rng.random_range(0..base)).clamp(lo, hi)
            }
        }
    }
}

/// A live set and a churn sequence over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChurnPlan {
    /// Sizes of the slices live before measuring (slot `i` holds `initial[i]`).
    pub initial: Vec<u64>,
    /// Steps that replace slot `.0` with a new allocation of `.1` bytes;
    /// the first `live` of them are run during setup to age the free lists.
    pub steps: Vec<(u32, u64)>,
}

impl ChurnPlan {
    /// `live` initial slices and `steps` replacements, all drawn from `mix`.
    pub fn new(live: usize, steps: usize, mix: SizeMix, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let initial = (0..live).map(|_| mix.draw(&mut rng)).collect();
        let steps = (0..steps)
            .map(|_| {
                (
                    rng.random_range(0..(live as u64).max(1)) as u32,
                    mix.draw(&mut rng),
                )
            })
            .collect();
        ChurnPlan { initial, steps }
    }

    /// Live slices.
    pub fn live(&self) -> usize {
        self.initial.len()
    }
}

/// The sizes of the size-class measurement: one per pool gpumem routes to
/// by default (small sliced pool, mid sliced pool, exclusive pages), with a
/// boundary case each side.
pub const SIZE_CLASSES: [u64; 6] = [
    512,
    4 * crate::KIB,
    64 * crate::KIB,
    crate::MIB,
    16 * crate::MIB,
    256 * crate::MIB,
];

/// Live-set sizes of the depth measurements: 1k, 100k and 1M in an
/// optimized build; scaled down to 1k, 5k and 20k when debug assertions are
/// on (`cargo test --benches` runs the targets once in the test profile, and
/// building a million live slices three times there would take most of a
/// minute on a small machine).
pub fn depths() -> [usize; 3] {
    if cfg!(debug_assertions) {
        [1_000, 5_000, 20_000]
    } else {
        [1_000, 100_000, 1_000_000]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_seed_does_not() {
        let a = ChurnPlan::new(100, 1000, SizeMix::DEPTH, 7);
        assert_eq!(a, ChurnPlan::new(100, 1000, SizeMix::DEPTH, 7));
        assert_ne!(a, ChurnPlan::new(100, 1000, SizeMix::DEPTH, 8));
    }

    #[test]
    fn log_uniform_sizes_stay_in_range_and_cover_every_octave() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mix = SizeMix::LogUniform { min: 64, max: 4096 };
        let sizes: Vec<u64> = (0..10_000).map(|_| mix.draw(&mut rng)).collect();
        assert!(sizes.iter().all(|&s| (64..=4096).contains(&s)));
        for octave in 0..6 {
            let (lo, hi) = (64u64 << octave, 128u64 << octave);
            assert!(
                sizes.iter().any(|&s| (lo..hi).contains(&s)),
                "no size in {lo}..{hi}"
            );
        }
    }

    #[test]
    fn every_step_names_a_live_slot() {
        let plan = ChurnPlan::new(37, 500, SizeMix::Fixed(256), 3);
        assert!(plan.steps.iter().all(|&(slot, _)| (slot as usize) < 37));
    }
}
