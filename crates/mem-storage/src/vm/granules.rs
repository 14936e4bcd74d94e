//! `Granules`: which chunk is mapped over each granule of one range.
//!
//! Why a table indexed by granule rather than an ordered map of mappings:
//! every map and unmap offset is a multiple of the granularity, so the
//! granule index is a direct address and a lookup is one bounds check. A
//! mapping of k granules fills k entries, so "what covers granule g" needs
//! no search. The vector grows on demand (by doubling) up to
//! [`DENSE_GRANULES`] entries (4 MiB, 512 GiB of a range at 2 MiB), which
//! bounds both its memory and the work of one fill or scan.
//!
//! A mapping that reaches past that — a huge range mapped far out, or a
//! huge chunk at a tiny granularity, which arenas never do — turns the
//! range's table into an ordered map of mappings (start → chunk, length),
//! the O(log n) structure the table used before, so no range costs memory
//! or time in proportion to its length.

use std::collections::BTreeMap;

use crate::vm::ChunkId;

/// Granules held in the dense vector at most.
pub(crate) const DENSE_GRANULES: u64 = 1 << 18;

/// Granule index → the chunk mapped over it.
#[derive(Debug)]
pub(crate) enum Granules {
    /// Every mapping ends within [`DENSE_GRANULES`]; each covered granule
    /// names its chunk.
    Dense(Vec<Option<ChunkId>>),
    /// First granule of each mapping → its chunk and length in granules.
    Ordered(BTreeMap<u64, (ChunkId, u64)>),
}

impl Default for Granules {
    fn default() -> Self {
        Self::Dense(Vec::new())
    }
}

impl Granules {
    /// The chunk whose mapping covers `granule`.
    pub(crate) fn get(&self, granule: u64) -> Option<ChunkId> {
        match self {
            Self::Dense(v) => *v.get(usize::try_from(granule).ok()?)?,
            Self::Ordered(m) => {
                let (&start, &(chunk, len)) = m.range(..=granule).next_back()?;
                (granule - start < len).then_some(chunk)
            }
        }
    }

    /// Of the mappings meeting granules `from..to`, the one starting last.
    pub(crate) fn last_in(&self, from: u64, to: u64) -> Option<ChunkId> {
        match self {
            Self::Dense(v) => {
                let to = to.min(v.len() as u64);
                (from..to).rev().find_map(|g| v[g as usize])
            }
            Self::Ordered(m) => {
                let (&start, &(chunk, len)) = m.range(..to).next_back()?;
                (start + len > from).then_some(chunk)
            }
        }
    }

    /// Record `chunk` over granules `start..start+len` (all free).
    pub(crate) fn insert(&mut self, start: u64, len: u64, chunk: ChunkId) {
        let end = start.saturating_add(len);
        match self {
            Self::Dense(v) if end <= v.len() as u64 => {
                v[start as usize..end as usize].fill(Some(chunk));
            }
            Self::Dense(v) if end <= DENSE_GRANULES => {
                // Doubling: an arena growing a granule at a time resizes
                // O(log n) times, not at every map.
                let doubled = (end as usize).max(2 * v.len());
                v.resize(doubled.min(DENSE_GRANULES as usize), None);
                v[start as usize..end as usize].fill(Some(chunk));
            }
            Self::Dense(v) => {
                let mut ordered: BTreeMap<_, _> = runs(v).collect();
                ordered.insert(start, (chunk, len));
                *self = Self::Ordered(ordered);
            }
            Self::Ordered(m) => {
                m.insert(start, (chunk, len));
            }
        }
    }

    /// Forget the mapping over granules `start..start+len`.
    pub(crate) fn remove(&mut self, start: u64, len: u64) {
        match self {
            Self::Dense(v) => {
                let end = start.saturating_add(len).min(v.len() as u64);
                if start < end {
                    v[start as usize..end as usize].fill(None);
                }
            }
            Self::Ordered(m) => {
                m.remove(&start);
            }
        }
    }

    /// Every mapping, in order, as (first granule, chunk, granules).
    pub(crate) fn mappings(&self) -> Vec<(u64, ChunkId, u64)> {
        match self {
            Self::Dense(v) => runs(v).map(|(g, (c, n))| (g, c, n)).collect(),
            Self::Ordered(m) => m.iter().map(|(&g, &(c, n))| (g, c, n)).collect(),
        }
    }

    /// Granules covered by some mapping (not the hot path).
    pub(crate) fn mapped_granules(&self) -> u64 {
        self.mappings().iter().map(|&(_, _, n)| n).sum()
    }

    /// The first granule and chunk of every mapping, in order (for drops
    /// and whole-table walks, not the hot path).
    pub(crate) fn starts(&self) -> Vec<(u64, ChunkId)> {
        match self {
            Self::Dense(v) => runs(v).map(|(g, (c, _))| (g, c)).collect(),
            Self::Ordered(m) => m.iter().map(|(&g, &(c, _))| (g, c)).collect(),
        }
    }
}

/// The mappings of a dense table, in order, as (first granule, (chunk,
/// length)): each run of one chunk is one mapping, as a chunk is mapped
/// at most once.
fn runs(v: &[Option<ChunkId>]) -> impl Iterator<Item = (u64, (ChunkId, u64))> + '_ {
    let mut g = 0;
    std::iter::from_fn(move || {
        while g < v.len() {
            let Some(chunk) = v[g] else {
                g += 1;
                continue;
            };
            let start = g;
            while g < v.len() && v[g] == Some(chunk) {
                g += 1;
            }
            return Some((start as u64, (chunk, (g - start) as u64)));
        }
        None
    })
}

#[cfg(test)]
#[path = "granules_tests.rs"]
mod tests;
