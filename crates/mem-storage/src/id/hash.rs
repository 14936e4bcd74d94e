//! `IdHasher`: a multiply-rotate hasher for sets and maps keyed by ids a
//! backend issues (a storage's set of its chunk ids).
//!
//! Why not the standard SipHash: it resists keys chosen to collide, which
//! ids handed out by the crate itself are not, and it cost the simulated
//! device's chunk calls more than the work they did. This is rustc-hash's
//! step: one add and multiply per word, then a rotate, so both the bucket
//! index and the tag a hash table reads come from well-mixed bits. Never use it for keys an
//! outside party chooses.

use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of FxHash (rustc's hasher): odd, with well-spread bits.
const K: u64 = 0xf135_7aea_2e62_a9c5;

/// A hasher for small integer keys; see the module docs.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.0 = self.0.wrapping_add(word).wrapping_mul(K);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for piece in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..piece.len()].copy_from_slice(piece);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    /// A product's high bits mix every input bit, its low bits only the
    /// low input bits: rotate so the table's bucket index (low bits) and
    /// tag (top seven) both come from well-mixed bits.
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

/// Builds [`IdHasher`]s for `HashMap` / `HashSet`.
pub(crate) type IdBuildHasher = BuildHasherDefault<IdHasher>;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn ids_differing_in_low_or_high_bits_get_distinct_tags_and_buckets() {
        let hash = |id: u64| IdBuildHasher::default().hash_one(id);
        for ids in [
            (1..=64u64).collect::<Vec<_>>(),
            (1..=64).map(|g| g << 32 | 5).collect(),
        ] {
            let tags: HashSet<u64> = ids.iter().map(|&id| hash(id) >> 57).collect();
            let buckets: HashSet<u64> = ids.iter().map(|&id| hash(id) & 1023).collect();
            assert!(tags.len() > 32, "only {} distinct tags", tags.len());
            assert!(
                buckets.len() > 48,
                "only {} distinct buckets",
                buckets.len()
            );
        }
    }

    #[test]
    fn a_set_keyed_by_it_finds_what_it_holds() {
        let mut set: HashSet<u64, IdBuildHasher> = HashSet::default();
        set.extend((0..1000).map(|i| i << 32 | 7));
        assert!((0..1000).all(|i| set.contains(&(i << 32 | 7))));
        assert!(!set.contains(&7_000));
    }
}
