//! Where each slice of a sliced page starts: the boundary index that makes
//! `reclaim_extent` on a sliced page O(1) instead of a walk over the page.
//!
//! The page's slices already know their neighbours (`prev` / `next`), which
//! is all split and coalesce need; what they cannot answer is "which slice
//! holds byte `o`" without walking from the head. So every sliced page also
//! keeps one bit per alignment unit, set where a slice starts, with a
//! summary bit per 64-unit word, and the slice node of each start.
//! Split sets a bit, coalesce clears one: O(1) each, no scan, so the free
//! path keeps its cost.
//!
//! **Nodes by word, not a hash map.** The start → node entries sit in a
//! block of 64 per bitmap word, made the first time a start falls in that
//! word and kept after (a bit clear marks an entry stale). A lookup is two
//! indexings instead of a hash, and split and coalesce stay O(1) with no
//! hashing: the map's insert and remove were ~7 % of a reserve+drop pair's
//! instructions. Memory: 256 bytes per word that ever held a start, so at
//! most 1/64 of the page's bytes (every 16 KiB word of a 256-byte-aligned
//! page carved) and at most 256 bytes per start (slices over 16 KiB); a
//! hash map cost ~20 bytes per start, more than the blocks once starts are
//! denser than one per ~3 KiB. The slice holding `o` is the last start at or
//! before it: its own word, then the summary words backwards — at most one
//! per 4096 alignment units of the page (1 for a 1 MiB page at 256-byte
//! alignment, 64 for a 64 MiB one), each a single mask test, independent of
//! how many slices the page holds.

/// Start → node of one 64-unit word of the bitmap (entries whose bit is
/// clear are stale and never read).
type NodeBlock = Box<[u32; 64]>;

/// Slice starts of one sliced page, in alignment units.
///
/// The bitmap grows to the highest start set so far rather than the page's
/// size: an arena page is a virtual range of tens of GiB of which only the
/// low end is ever carved, and a full bitmap of it would cost more memory
/// than the slices it indexes.
#[derive(Debug, Clone, Default)]
pub(crate) struct SliceStarts {
    bits: Vec<u64>,
    summary: Vec<u64>,
    /// Alignment units of the page: no start lies at or past it.
    units: u64,
    /// One block per bitmap word (`None` until a start falls in it).
    nodes: Vec<Option<NodeBlock>>,
}

impl SliceStarts {
    /// A page of `units` alignment units whose only slice, `head`, starts at 0.
    pub(crate) fn new(units: u64, head: u32) -> Self {
        let mut starts = Self {
            bits: Vec::new(),
            summary: Vec::new(),
            units,
            nodes: Vec::new(),
        };
        starts.insert(0, head);
        starts
    }

    /// A slice `node` now starts at `unit`.
    #[inline]
    pub(crate) fn insert(&mut self, unit: u64, node: u32) {
        let (w, b) = ((unit / 64) as usize, unit % 64);
        if w >= self.bits.len() && !self.grow_to(unit, w) {
            return;
        }
        if let Some(word) = self.bits.get_mut(w) {
            *word |= 1 << b;
        }
        self.summary[w / 64] |= 1 << (w % 64);
        if let Some(block) = self.nodes.get_mut(w) {
            block.get_or_insert_with(|| Box::new([u32::MAX; 64]))[b as usize] = node;
        }
    }

    /// Grow the bitmap to hold word `w` (a start past the highest so far);
    /// `false` for a unit past the page.
    #[cold]
    fn grow_to(&mut self, unit: u64, w: usize) -> bool {
        if unit >= self.units.max(1) {
            return false;
        }
        self.bits.resize(w + 1, 0);
        self.nodes.resize_with(w + 1, || None);
        self.summary.resize((w + 1).div_ceil(64), 0);
        true
    }

    /// No slice starts at `unit` any more (it was absorbed by its left neighbour).
    pub(crate) fn remove(&mut self, unit: u64) {
        let (w, b) = ((unit / 64) as usize, unit % 64);
        if let Some(word) = self.bits.get_mut(w) {
            *word &= !(1 << b);
            if *word == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
        }
    }

    /// The slice node that starts at or last before `unit`.
    pub(crate) fn holding(&self, unit: u64) -> Option<u32> {
        if unit >= self.units.max(1) {
            return None;
        }
        let w = (unit / 64) as usize;
        // Past the highest word set, the holder is the last start of all.
        let (w, mask) = match self.bits.len().checked_sub(1)? {
            last if w > last => (last, u64::MAX),
            _ => (w, u64::MAX >> (63 - unit % 64)),
        };
        let word = self.bits[w];
        let below = word & mask;
        let start = if below != 0 {
            w as u64 * 64 + u64::from(63 - below.leading_zeros())
        } else {
            let w = self.prev_word(w)?;
            w as u64 * 64 + u64::from(63 - self.bits[w].leading_zeros())
        };
        let block = self.nodes.get(start as usize / 64)?.as_deref()?;
        Some(block[(start % 64) as usize])
    }

    /// The last non-empty word before word `w`.
    fn prev_word(&self, w: usize) -> Option<usize> {
        let (mut s, bit) = (w / 64, w % 64);
        let mut mask = if bit == 0 { 0 } else { u64::MAX >> (64 - bit) };
        loop {
            let found = self.summary[s] & mask;
            if found != 0 {
                return Some(s * 64 + (63 - found.leading_zeros()) as usize);
            }
            s = s.checked_sub(1)?;
            mask = u64::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_holding_a_unit_is_the_last_start_at_or_before_it_across_words() {
        let mut s = SliceStarts::new(10_000, 7);
        assert_eq!(s.holding(0), Some(7));
        assert_eq!(s.holding(9_999), Some(7));
        s.insert(63, 1);
        s.insert(64, 2);
        s.insert(5_000, 3);
        assert_eq!(s.holding(62), Some(7));
        assert_eq!(s.holding(63), Some(1));
        assert_eq!(s.holding(4_999), Some(2));
        assert_eq!(s.holding(5_000), Some(3));
        assert_eq!(s.holding(9_999), Some(3));
        s.remove(5_000);
        s.remove(64);
        assert_eq!(s.holding(9_999), Some(1), "the summary skips emptied words");
        assert_eq!(s.holding(157 * 64), None, "past the last word");
    }

    #[test]
    fn a_removed_start_is_never_read_and_a_reused_one_names_its_new_node() {
        let mut s = SliceStarts::new(10_000, 7);
        s.insert(5_000, 3);
        s.remove(5_000);
        assert_eq!(s.holding(5_000), Some(7), "the stale entry is skipped");
        s.insert(5_001, 4);
        s.insert(5_000, 9);
        assert_eq!(s.holding(5_000), Some(9));
        assert_eq!(s.holding(5_002), Some(4));
        s.insert(20_000, 5);
        assert_eq!(
            s.holding(9_999),
            Some(4),
            "a start past the page is ignored"
        );
    }
}
