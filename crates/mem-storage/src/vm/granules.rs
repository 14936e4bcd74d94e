//! `Granules`: which chunk is mapped at each granule of one range.
//!
//! Why a table indexed by granule rather than an ordered map of mappings:
//! every map and unmap offset is a multiple of the granularity, so the
//! granule index is a direct address, and a lookup is one bounds check.
//! The dense part grows on demand up to [`DENSE_GRANULES`] (4 MiB of table
//! at most, 512 GiB of a range at 2 MiB); granules past that — a huge
//! range mapped far from its start, which arenas never do — go to a hash
//! map with a cheap hasher, so no range costs memory in proportion to its
//! length.

use std::collections::HashMap;

use crate::id_hash::IdBuildHasher;
use crate::vm::ChunkId;

/// Granules held in the dense vector at most.
pub(crate) const DENSE_GRANULES: u64 = 1 << 18;

/// Granule index → the chunk mapped over it.
#[derive(Debug, Default)]
pub(crate) struct Granules {
    dense: Vec<Option<ChunkId>>,
    sparse: HashMap<u64, ChunkId, IdBuildHasher>,
}

impl Granules {
    pub(crate) fn get(&self, granule: u64) -> Option<ChunkId> {
        if granule < DENSE_GRANULES {
            self.dense.get(granule as usize).copied().flatten()
        } else {
            self.sparse.get(&granule).copied()
        }
    }

    pub(crate) fn set(&mut self, granule: u64, chunk: ChunkId) {
        if granule < DENSE_GRANULES {
            let at = granule as usize;
            if at >= self.dense.len() {
                // Doubling: an arena growing a granule at a time resizes
                // O(log n) times, not at every map.
                let len = (at + 1).max(2 * self.dense.len());
                self.dense.resize(len.min(DENSE_GRANULES as usize), None);
            }
            self.dense[at] = Some(chunk);
        } else {
            self.sparse.insert(granule, chunk);
        }
    }

    pub(crate) fn clear(&mut self, granule: u64) {
        if granule < DENSE_GRANULES {
            if let Some(slot) = self.dense.get_mut(granule as usize) {
                *slot = None;
            }
        } else {
            self.sparse.remove(&granule);
        }
    }

    /// Every set granule with its chunk, in granule order (for drops and
    /// whole-table walks, not the hot path).
    pub(crate) fn all(&self) -> Vec<(u64, ChunkId)> {
        let dense = self.dense.iter().enumerate();
        let mut all: Vec<(u64, ChunkId)> =
            dense.filter_map(|(g, c)| Some((g as u64, (*c)?))).collect();
        let far = all.len();
        all.extend(self.sparse.iter().map(|(&g, &c)| (g, c)));
        all[far..].sort_unstable_by_key(|&(g, _)| g);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_and_far_granules_are_set_read_and_cleared_alike() {
        let mut t = Granules::default();
        let far = u64::MAX / 4;
        for (g, c) in [(3, 1), (0, 2), (far, 3), (DENSE_GRANULES, 4)] {
            t.set(g, ChunkId(c));
        }
        assert_eq!(t.get(3), Some(ChunkId(1)));
        assert_eq!(t.get(far), Some(ChunkId(3)));
        assert_eq!(t.get(1), None);
        assert_eq!(t.get(DENSE_GRANULES - 1), None, "unset, past the vector");
        let granules: Vec<u64> = t.all().iter().map(|&(g, _)| g).collect();
        assert_eq!(granules, [0, 3, DENSE_GRANULES, far]);
        t.clear(3);
        t.clear(far);
        t.clear(DENSE_GRANULES - 1);
        assert_eq!((t.get(3), t.get(far)), (None, None));
        assert_eq!(t.all().len(), 2);
    }

    #[test]
    fn a_far_granule_does_not_grow_the_dense_table() {
        let mut t = Granules::default();
        t.set(1 << 40, ChunkId(9));
        assert!(t.dense.is_empty());
    }
}
