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
        if let Self::Dense(v) = self {
            if end > DENSE_GRANULES {
                *self = Self::Ordered(runs(v));
            } else {
                let (start, end) = (start as usize, end as usize);
                if end > v.len() {
                    let doubled = end.max(2 * v.len()).min(DENSE_GRANULES as usize);
                    v.resize(doubled, None);
                }
                v[start..end].fill(Some(chunk));
                return;
            }
        }
        if let Self::Ordered(m) = self {
            m.insert(start, (chunk, len));
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

    /// The first granule and chunk of every mapping, in order (for drops
    /// and whole-table walks, not the hot path).
    pub(crate) fn starts(&self) -> Vec<(u64, ChunkId)> {
        match self {
            Self::Dense(v) => runs(v).into_iter().map(|(g, (c, _))| (g, c)).collect(),
            Self::Ordered(m) => m.iter().map(|(&g, &(c, _))| (g, c)).collect(),
        }
    }
}

/// The mappings of a dense table: each run of one chunk is one mapping
/// (a chunk is mapped at most once).
fn runs(v: &[Option<ChunkId>]) -> BTreeMap<u64, (ChunkId, u64)> {
    let mut out: BTreeMap<u64, (ChunkId, u64)> = BTreeMap::new();
    let mut last: Option<(u64, ChunkId)> = None;
    for (g, entry) in v.iter().enumerate() {
        match (*entry, last) {
            (Some(c), Some((start, prev))) if c == prev => {
                if let Some(run) = out.get_mut(&start) {
                    run.1 += 1;
                }
            }
            (Some(c), _) => {
                out.insert(g as u64, (c, 1));
                last = Some((g as u64, c));
            }
            (None, _) => last = None,
        }
    }
    out
}

#[cfg(test)]
#[path = "granules_tests.rs"]
mod tests;
