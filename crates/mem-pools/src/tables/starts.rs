//! Where each slice of a sliced page starts: the boundary index that makes
//! `reclaim_extent` on a sliced page O(1) instead of a walk over the page.
//!
//! The page's slices already know their neighbours (`prev` / `next`), which
//! is all split and coalesce need; what they cannot answer is "which slice
//! holds byte `o`" without walking from the head. So a sliced page can
//! keep one bit per alignment unit, set where a slice starts, with a
//! summary bit per 64-unit word, and a map from start unit to slice node.
//! Only `reclaim_extent` asks, so the index is built by the page's first
//! extent lookup (one walk over its slices) and kept from then on; a pool
//! whose pages never had one pays nothing on split and coalesce
//! (`Pool::has_starts`). Once built, split sets a bit and coalesce clears
//! one: O(1) each, no scan. The slice holding `o` is the last start at or
//! before it: its own word, then the summary words backwards — at most one
//! per 4096 alignment units of the page (1 for a 1 MiB page at 256-byte
//! alignment, 64 for a 64 MiB one), each a single mask test, independent of
//! how many slices the page holds.
//!
//! The bits live in *blocks* of 4096 units (64 words), allocated the first
//! time a start lands in one; the page keeps only a block directory and the
//! summary, 12 bytes per block. An arena page is a virtual range of tens of
//! GiB carved in slices of MiB to GiB: a flat bitmap would grow to one bit
//! per 256 bytes up to its highest start, megabytes zeroed as it grows,
//! where the blocks that hold a start are a few hundred.

use crate::tables::start_nodes::StartNodes;

/// Units of one block of bits (64 words of 64).
const BLOCK_UNITS: u64 = 64 * 64;
/// A directory entry with no block.
const NO_BLOCK: u32 = u32::MAX;

/// Slice starts of one sliced page, in alignment units.
///
/// The directory grows to the highest start set so far rather than the
/// page's size, and a block exists only where a start was ever set.
#[derive(Debug, Clone, Default)]
pub(crate) struct SliceStarts {
    /// Per block of [`BLOCK_UNITS`] units: its index in `blocks`, or
    /// [`NO_BLOCK`].
    dir: Vec<u32>,
    /// Per block: bit `w` set where the block's word `w` holds a start.
    summary: Vec<u64>,
    blocks: Vec<[u64; 64]>,
    /// Alignment units of the page: no start lies at or past it.
    units: u64,
    /// The slice node of each start unit (`start_nodes.rs`).
    nodes: StartNodes,
}

/// (block, word in the block, bit in the word) of `unit`.
fn place(unit: u64) -> (usize, usize, u64) {
    (
        (unit / BLOCK_UNITS) as usize,
        ((unit / 64) % 64) as usize,
        unit % 64,
    )
}

impl SliceStarts {
    /// A page of `units` alignment units whose only slice, `head`, starts at 0.
    pub(crate) fn new(units: u64, head: u32) -> Self {
        let mut starts = Self {
            units,
            ..Self::default()
        };
        starts.insert(0, head);
        starts
    }

    /// A slice `node` now starts at `unit`.
    #[inline]
    pub(crate) fn insert(&mut self, unit: u64, node: u32) {
        let (k, w, b) = place(unit);
        if k >= self.dir.len() && !self.grow_to(unit, k) {
            return;
        }
        let block = match self.dir[k] {
            NO_BLOCK => self.new_block(k),
            block => block,
        };
        self.blocks[block as usize][w] |= 1 << b;
        self.summary[k] |= 1 << w;
        self.nodes.insert(unit, node);
    }

    /// Grow the directory to hold block `k` (a start past the highest so
    /// far); `false` for a unit past the page.
    #[cold]
    fn grow_to(&mut self, unit: u64, k: usize) -> bool {
        if unit >= self.units.max(1) {
            return false;
        }
        self.dir.resize(k + 1, NO_BLOCK);
        self.summary.resize(k + 1, 0);
        true
    }

    /// A zeroed block of bits for directory entry `k`.
    #[cold]
    fn new_block(&mut self, k: usize) -> u32 {
        let block = self.blocks.len() as u32;
        self.blocks.push([0; 64]);
        self.dir[k] = block;
        block
    }

    /// No slice starts at `unit` any more (it was absorbed by its left neighbour).
    #[inline]
    pub(crate) fn remove(&mut self, unit: u64) {
        let (k, w, b) = place(unit);
        let Some(&block) = self.dir.get(k).filter(|&&b| b != NO_BLOCK) else {
            return;
        };
        let word = &mut self.blocks[block as usize][w];
        *word &= !(1 << b);
        if *word == 0 {
            self.summary[k] &= !(1 << w);
        }
        self.nodes.remove(unit);
    }

    /// The slice node that starts at or last before `unit`.
    pub(crate) fn holding(&self, unit: u64) -> Option<u32> {
        if unit >= self.units.max(1) {
            return None;
        }
        let (k, w, b) = place(unit);
        // Past the highest block, the holder is the last start of all.
        let (k, w, mask) = match self.dir.len().checked_sub(1)? {
            last if k > last => (last, 63, u64::MAX),
            _ => (k, w, u64::MAX >> (63 - b)),
        };
        let start = match self.last_bit(k, w, mask) {
            Some(start) => start,
            None => self.last_bit(self.prev_block(k)?, 63, u64::MAX)?,
        };
        self.nodes.get(start)
    }

    /// The last start in word `w` of block `k` under `mask`, then in the
    /// block's earlier words.
    fn last_bit(&self, k: usize, w: usize, mask: u64) -> Option<u64> {
        let block = *self.dir.get(k).filter(|&&b| b != NO_BLOCK)?;
        let words = &self.blocks[block as usize];
        let found = words[w] & mask;
        if found != 0 {
            let unit = k as u64 * BLOCK_UNITS + w as u64 * 64;
            return Some(unit + u64::from(63 - found.leading_zeros()));
        }
        let below = self.summary[k] & ((1u64 << w) - 1);
        if below == 0 {
            return None;
        }
        let w = 63 - below.leading_zeros() as usize;
        let unit = k as u64 * BLOCK_UNITS + w as u64 * 64;
        Some(unit + u64::from(63 - words[w].leading_zeros()))
    }

    /// The last block before block `k` that holds a start.
    fn prev_block(&self, k: usize) -> Option<usize> {
        (0..k).rev().find(|&j| self.summary[j] != 0)
    }
}

#[cfg(test)]
#[path = "starts_tests.rs"]
mod tests;
